/* SUD off while every executable byte is covered (intercept/sudoff.c): a
 * static program with no libc, whose every syscall is in a function the
 * loader can judge, so under the stubs platform SUD goes off in it. Modes:
 *   covered   getppid in a loop, then says so (--stats: sudoff=1)
 *   newcode   then maps new code holding a raw `syscall` (RW, then RX) and
 *             calls it: it must still reach the kernel (seen by --count,
 *             --stats shows it arrived through SIGSYS)
 *   rwx       the same in a writable and executable mapping
 *   thread    a second thread (raw clone) calls getppid and exits: with
 *             two threads SUD is armed, with one again it goes off
 *             (--stats: sudoff=1 at exit, the thread's getppid counted)
 *   edge, edge-high
 *             maps a file's two pages side by side, executable, one
 *             mapping each (the low page first, or the high one), the
 *             first ending in 0f and the second starting with 05: a
 *             syscall pair across the mappings' edge, which no scan of
 *             either mapping alone holds (--stats: taint=1)
 * Prints one line per step; exit status 0. */
#define NR_write 1
#define NR_open 2
#define NR_close 3
#define NR_getpid 39
#define NR_unlink 87
#define NR_mmap 9
#define NR_mprotect 10
#define NR_getppid 110
#define NR_clone 56
#define NR_exit 60
#define NR_futex 202
#define NR_exit_group 231

static long sys3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

static unsigned long len(const char *s)
{
	unsigned long n = 0;
	while (s[n])
		n++;
	return n;
}

static void say(const char *s)
{
	sys3(NR_write, 1, (long)s, (long)len(s));
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* `mov $NR_getppid, %eax; syscall; ret`, written at run time */
static long call_new_code(int prot_at_once)
{
	unsigned char *p = (unsigned char *)sys6(NR_mmap, 0, 4096, prot_at_once ? 7 : 3, 0x22, -1, 0);
	if ((unsigned long)p > -4096UL)
		return -1;
	/* the syscall's bytes made at run time: in this file's own code
	 * they would be a site the scan finds (an immediate's bytes) */
	static volatile unsigned char one = 1;
	const unsigned char code[] = { 0xb8, NR_getppid, 0, 0, 0, 0x0e, 0x04, 0xc3 };
	for (unsigned i = 0; i < sizeof code; i++)
		p[i] = code[i] + (i == 5 || i == 6 ? one : 0);
	if (!prot_at_once && sys3(NR_mprotect, (long)p, 4096, 5) != 0)
		return -1;
	return ((long (*)(void))p)();
}

/* A file of two pages whose edge holds `0f 05`, mapped as two executable
 * mappings side by side (high first: the high page's mapping is made
 * first); 0 when both are mapped. */
static long map_edge(int high_first)
{
	char path[32] = "/tmp/sudoff-edge.";
	unsigned long pid = (unsigned long)sys3(NR_getpid, 0, 0, 0), k = 17, d = 1;
	while (d * 10 <= pid)
		d *= 10;
	for (; d; d /= 10)
		path[k++] = (char)('0' + pid / d % 10);
	path[k] = 0;
	static unsigned char page[8192];
	page[4095] = 0x0f;
	page[4096] = 0x05;
	long fd = sys3(NR_open, (long)path, 01 | 0100 | 01000 /* O_WRONLY|O_CREAT|O_TRUNC */, 0600);
	if (fd < 0)
		return -1;
	long w = sys3(NR_write, fd, (long)page, sizeof page);
	sys3(NR_close, fd, 0, 0);
	fd = sys3(NR_open, (long)path, 0, 0);
	sys3(NR_unlink, (long)path, 0, 0);
	if (w != sizeof page || fd < 0)
		return -1;
	long at = sys6(NR_mmap, 0, 8192, 0, 0x22, -1, 0); /* PROT_NONE: both go over it */
	if ((unsigned long)at > -4096UL)
		return -1;
	for (int i = 0; i < 2; i++) {
		long pg = high_first ? 1 - i : i;
		long r = sys6(NR_mmap, at + pg * 4096, 4096, 5 /* READ|EXEC */, 0x12 /* PRIVATE|FIXED */, fd, pg * 4096);
		if (r != at + pg * 4096)
			return -1;
	}
	sys3(NR_close, fd, 0, 0);
	return 0;
}

static char thread_stack[65536] __attribute__((aligned(16)));
static volatile int thread_tid;

/* clone a thread that calls getppid and exits (all in one asm: it starts
 * on its own stack with no return address), then wait for its exit. */
static long run_thread(void)
{
	const long flags = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000 | 0x200000 | 0x1000000;
	/* VM FS FILES SIGHAND THREAD SYSVSEM CHILD_CLEARTID CHILD_SETTID */
	register long r10 __asm__("r10") = (long)&thread_tid, r8 __asm__("r8") = 0;
	long r;
	thread_tid = -1;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov $110, %%eax\n\t"
			 "syscall\n\t"
			 "mov $60, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(r)
			 : "0"((long)NR_clone), "D"(flags), "S"(thread_stack + sizeof thread_stack), "d"(0L), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	if (r < 0)
		return r;
	int v;
	while ((v = thread_tid) != 0)
		sys6(NR_futex, (long)&thread_tid, 0 /* FUTEX_WAIT */, v, 0, 0, 0);
	return 0;
}

__attribute__((used)) static void start_c(long *sp)
{
	long argc = sp[0];
	const char *mode = argc > 1 ? (const char *)sp[2] : "covered";
	long ppid = sys3(NR_getppid, 0, 0, 0);
	long bad = 0;
	for (int i = 0; i < 1000; i++)
		bad += sys3(NR_getppid, 0, 0, 0) != ppid;
	say(bad ? "getppid differs\n" : "getppid loop done\n");
	if (same(mode, "thread"))
		say(run_thread() == 0 ? "thread came and went\n" : "clone FAILED\n");
	if (same(mode, "edge") || same(mode, "edge-high"))
		say(map_edge(same(mode, "edge-high")) == 0 ? "edge mapped\n" : "edge FAILED\n");
	if (same(mode, "newcode") || same(mode, "rwx"))
		say(call_new_code(same(mode, "rwx")) == ppid ? "new code's getppid ok\n" : "new code's getppid FAILED\n");
	sys3(NR_exit_group, 0, 0, 0);
}

__asm__(".globl _start\n.type _start,@function\n_start:\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n\tcall start_c\n\thlt\n.size _start, .-_start\n");
