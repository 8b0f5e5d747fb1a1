/* Registers across syscalls (DESIGN 5.1, 5.2): the host's `syscall` keeps
 * every register except rax, rcx (= return address) and r11 (= rflags), keeps
 * the 128-byte red zone below rsp, and keeps x87/SSE/AVX/AVX-512 state. This
 * guest loads known values, makes raw getppid and write syscalls and checks
 * everything afterwards, in four threads at once while a 500 us timer delivers
 * signals whose handler scribbles over the vector registers. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define NTHREADS 4
#define MIN_ITERS 2000

/* ---- general registers, flags and red zone: pure assembly ---- */

/* Known values for the callee-saved registers (the argument registers come
 * from struct probe). */
#define K_RBX 0xb0b1b2b3b4b5b6b7UL
#define K_RBP 0xbebafecaefbeaddeUL
#define K_R12 0x1212121212121212UL
#define K_R13 0x13ff13ff13ff13ffUL
#define K_R14 0x8000000000000014UL
#define K_R15 0x0f0f0f0f0f0f0f15UL
#define RZ_PAT 0x7265647a6f6e6500UL /* red zone word i holds RZ_PAT + i */
#define FLAGS_IN 0xcd7UL	    /* CF PF AF ZF SF DF OF set */
#define FLAGS_MASK 0xcd5UL

#define STR_(x) #x
#define STR(x) STR_(x)

/* out[] slots */
enum { O_RAX, O_RBX, O_RCX, O_RDX, O_RSI, O_RDI, O_RBP, O_R8, O_R9, O_R10,
       O_R11, O_R12, O_R13, O_R14, O_R15, O_RSP_AFTER, O_RSP_BEFORE, O_FLAGS,
       O_RIP_NEXT, O_RZ, O_N = O_RZ + 16 };

struct probe {
	long nr;
	long a[6]; /* rdi rsi rdx r10 r8 r9 */
	unsigned long out[O_N];
};

_Static_assert(O_N == 35, "gpr_probe copies 35 slots");
void gpr_probe(struct probe *p);
__asm__(
	".text\n"
	".globl gpr_probe\n"
	".type gpr_probe,@function\n"
	"gpr_probe:\n"
	"  push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
	"  sub $512, %rsp\n"
	"  mov %rdi, 0(%rsp)\n"
	"  mov %rsp, 8+8*16(%rsp)\n"		/* O_RSP_BEFORE */
	"  push $" STR(FLAGS_IN) "\n"
	"  popfq\n"
	/* fill the red zone; from here on nothing may change the flags */
	"  movabs $" STR(RZ_PAT) ", %rax\n"
	"  .irp i,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"  lea \\i(%rax), %rcx\n"
	"  mov %rcx, -8*\\i(%rsp)\n"
	"  .endr\n"
	"  mov 0(%rdi), %rax\n"
	"  mov 16(%rdi), %rsi\n"
	"  mov 24(%rdi), %rdx\n"
	"  mov 32(%rdi), %r10\n"
	"  mov 40(%rdi), %r8\n"
	"  mov 48(%rdi), %r9\n"
	"  movabs $" STR(K_RBX) ", %rbx\n"
	"  movabs $" STR(K_RBP) ", %rbp\n"
	"  movabs $" STR(K_R12) ", %r12\n"
	"  movabs $" STR(K_R13) ", %r13\n"
	"  movabs $" STR(K_R14) ", %r14\n"
	"  movabs $" STR(K_R15) ", %r15\n"
	"  mov 8(%rdi), %rdi\n"
	"  syscall\n"
	"1:\n"
	"  mov %rax, 8+8*0(%rsp)\n"
	"  mov %rbx, 8+8*1(%rsp)\n"
	"  mov %rcx, 8+8*2(%rsp)\n"
	"  mov %rdx, 8+8*3(%rsp)\n"
	"  mov %rsi, 8+8*4(%rsp)\n"
	"  mov %rdi, 8+8*5(%rsp)\n"
	"  mov %rbp, 8+8*6(%rsp)\n"
	"  mov %r8, 8+8*7(%rsp)\n"
	"  mov %r9, 8+8*8(%rsp)\n"
	"  mov %r10, 8+8*9(%rsp)\n"
	"  mov %r11, 8+8*10(%rsp)\n"
	"  mov %r12, 8+8*11(%rsp)\n"
	"  mov %r13, 8+8*12(%rsp)\n"
	"  mov %r14, 8+8*13(%rsp)\n"
	"  mov %r15, 8+8*14(%rsp)\n"
	"  mov %rsp, 8+8*15(%rsp)\n"
	"  .irp i,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"  mov -8*\\i(%rsp), %rax\n"
	"  mov %rax, 8+8*(18+\\i)(%rsp)\n"
	"  .endr\n"
	"  lea 1b(%rip), %rax\n"
	"  mov %rax, 8+8*18(%rsp)\n"		/* O_RIP_NEXT */
	"  pushfq\n"
	"  pop %rax\n"
	"  mov %rax, 8+8*17(%rsp)\n"		/* O_FLAGS */
	"  cld\n"
	"  mov 0(%rsp), %rdi\n"
	"  xor %ecx, %ecx\n"
	"2:\n"
	"  mov 8(%rsp,%rcx,8), %rax\n"
	"  mov %rax, 56(%rdi,%rcx,8)\n"
	"  inc %ecx\n"
	"  cmp $35, %ecx\n"		/* O_N */
	"  jne 2b\n"
	"  add $512, %rsp\n"
	"  pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
	"  ret\n"
	".size gpr_probe, .-gpr_probe\n");

static atomic_int failures;
static int devnull;
static pid_t ppid;

static atomic_int catfail[5]; /* gpr, x87, xmm, ymm, zmm */

static void fail(const char *what, int thread, long iter, const char *detail)
{
	int cat = what[0] == 'g' || what[0] == 'r' ? 0 : what[0] == 'x' && what[1] == '8' ? 1
		: what[0] == 'x' ? 2 : what[0] == 'y' ? 3 : 4;
	atomic_store(&catfail[cat], 1);
	/* Report only the first failure to keep the output short. */
	if (atomic_fetch_add(&failures, 1) == 0)
		printf("%s: FAIL (thread %d, iteration %ld): %s\n", what, thread, iter, detail);
}

static void check_gpr(int t, long iter)
{
	static const char *names[] = { "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp",
				       "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
	char buf[160];
	for (int call = 0; call < 2; call++) {
		struct probe p;
		unsigned long salt = ((unsigned long)t << 48) ^ (unsigned long)iter;
		memset(&p, 0, sizeof(p));
		if (call == 0) { /* getppid: argument registers are free */
			p.nr = 110;
			for (int i = 0; i < 6; i++)
				p.a[i] = (long)(0xa0a0a0a000000000UL + ((unsigned long)i << 40) + salt);
		} else { /* write(devnull, "12345", 5), r10/r8/r9 still patterns */
			p.nr = 1;
			p.a[0] = devnull;
			p.a[1] = (long)"12345";
			p.a[2] = 5;
			for (int i = 3; i < 6; i++)
				p.a[i] = (long)(0xa0a0a0a000000000UL + ((unsigned long)i << 40) + salt);
		}
		gpr_probe(&p);
		unsigned long want[15] = {
			[O_RAX] = call == 0 ? (unsigned long)ppid : 5,
			[O_RBX] = K_RBX, [O_RCX] = p.out[O_RIP_NEXT],
			[O_RDX] = p.a[2], [O_RSI] = p.a[1], [O_RDI] = p.a[0],
			[O_RBP] = K_RBP, [O_R8] = p.a[4], [O_R9] = p.a[5], [O_R10] = p.a[3],
			[O_R11] = p.out[O_R11], [O_R12] = K_R12, [O_R13] = K_R13,
			[O_R14] = K_R14, [O_R15] = K_R15,
		};
		for (int r = 0; r < 15; r++)
			if (p.out[r] != want[r]) {
				snprintf(buf, sizeof(buf), "%s after syscall %ld is %#lx, expected %#lx",
					 names[r], p.nr, p.out[r], want[r]);
				fail("gpr", t, iter, buf);
			}
		if ((p.out[O_R11] & FLAGS_MASK) != FLAGS_MASK) {
			snprintf(buf, sizeof(buf), "r11 (rflags) is %#lx, flags %#lx were set",
				 p.out[O_R11], FLAGS_MASK);
			fail("gpr", t, iter, buf);
		}
		if ((p.out[O_FLAGS] & FLAGS_MASK) != FLAGS_MASK) {
			snprintf(buf, sizeof(buf), "rflags after syscall is %#lx, expected bits %#lx",
				 p.out[O_FLAGS], FLAGS_MASK);
			fail("gpr", t, iter, buf);
		}
		if (p.out[O_RSP_AFTER] != p.out[O_RSP_BEFORE])
			fail("gpr", t, iter, "rsp changed across syscall");
		for (int i = 0; i < 16; i++)
			if (p.out[O_RZ + i] != RZ_PAT + i + 1) {
				snprintf(buf, sizeof(buf), "red zone word at rsp-%d is %#lx", 8 * (i + 1),
					 p.out[O_RZ + i]);
				fail("redzone", t, iter, buf);
				break;
			}
	}
}

/* ---- x87 and SSE control state ---- */

static void check_x87(int t, long iter)
{
	unsigned short cw_in = 0x0f7f, cw_out = 0; /* round toward zero, 64-bit precision */
	unsigned int mx_in = 0x7f80, mx_out = 0;  /* round toward zero, all masked */
	double v_in = 1234.5 + iter, v_out = 0;
	__asm__ volatile("fldcw %[cwi]\n"
			 "ldmxcsr %[mxi]\n"
			 "fldl %[vi]\n"
			 "mov $110, %%eax\n"
			 "syscall\n"
			 "fstpl %[vo]\n"
			 "fnstcw %[cwo]\n"
			 "stmxcsr %[mxo]\n"
			 "movw $0x37f, %[cwi]\n"
			 "fldcw %[cwi]\n"
			 "movl $0x1f80, %[mxi]\n"
			 "ldmxcsr %[mxi]\n"
			 : [cwo] "=m"(cw_out), [mxo] "=m"(mx_out), [vo] "=m"(v_out),
			   [cwi] "+m"(cw_in), [mxi] "+m"(mx_in)
			 : [vi] "m"(v_in)
			 : "rax", "rcx", "r11", "memory", "st");
	if (cw_out != 0x0f7f || mx_out != 0x7f80 || v_out != 1234.5 + iter) {
		char buf[120];
		snprintf(buf, sizeof(buf), "fpu cw %#x mxcsr %#x st0 %g", cw_out, mx_out, v_out);
		fail("x87/mxcsr", t, iter, buf);
	}
}

/* ---- vector registers ---- */

static void fill(unsigned char *b, size_t n, int t, long iter)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + t * 31 + iter * 13 + 1);
}

#define IRP16 ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
#define IRP32 ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
#define IRP8 ".irp i,0,1,2,3,4,5,6,7\n"
#define SYSCALLS "mov $110, %%eax\n syscall\n mov $1, %%eax\n syscall\n" /* getppid; write */
#define XMM_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
		     "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

static void check_xmm(int t, long iter)
{
	unsigned char in[16 * 16], out[16 * 16];
	fill(in, sizeof(in), t, iter);
	__asm__ volatile(IRP16 "movdqu \\i*16(%[in]), %%xmm\\i\n .endr\n" SYSCALLS
			 IRP16 "movdqu %%xmm\\i, \\i*16(%[out])\n .endr\n"
			 :
			 : [in] "r"(in), [out] "r"(out), "D"(devnull), "S"("x"), "d"(1L)
			 : "rax", "rcx", "r11", "memory", XMM_CLOBBERS);
	for (int r = 0; r < 16; r++)
		if (memcmp(in + 16 * r, out + 16 * r, 16)) {
			char buf[40];
			snprintf(buf, sizeof(buf), "xmm%d changed", r);
			fail("xmm", t, iter, buf);
			return;
		}
}

__attribute__((target("avx2"))) static void check_ymm(int t, long iter)
{
	unsigned char in[16 * 32], out[16 * 32];
	fill(in, sizeof(in), t, iter);
	__asm__ volatile(IRP16 "vmovdqu \\i*32(%[in]), %%ymm\\i\n .endr\n" SYSCALLS
			 IRP16 "vmovdqu %%ymm\\i, \\i*32(%[out])\n .endr\n"
			 "vzeroupper\n"
			 :
			 : [in] "r"(in), [out] "r"(out), "D"(devnull), "S"("x"), "d"(1L)
			 : "rax", "rcx", "r11", "memory", XMM_CLOBBERS);
	for (int r = 0; r < 16; r++)
		if (memcmp(in + 32 * r, out + 32 * r, 32)) {
			char buf[40];
			snprintf(buf, sizeof(buf), "ymm%d changed", r);
			fail("ymm", t, iter, buf);
			return;
		}
}

static int has_avx512bw;

__attribute__((target("avx512f,avx512bw"))) static void check_zmm(int t, long iter)
{
	unsigned char in[32 * 64], out[32 * 64];
	unsigned long kin[8], kout[8];
	fill(in, sizeof(in), t, iter);
	fill((unsigned char *)kin, sizeof(kin), t + 5, iter);
	if (!has_avx512bw) /* only 16-bit opmasks without AVX512BW */
		for (int i = 0; i < 8; i++)
			kin[i] &= 0xffff;
	memset(kout, 0, sizeof(kout));
/* Loads zmm0-31 and k0-7, makes the syscalls, stores them back; KMOV is
 * kmovq with AVX512BW (64-bit opmasks), kmovw without. */
#define ZMM_ROUNDTRIP(KMOV)                                                                        \
	__asm__ volatile(IRP8 KMOV " \\i*8(%[kin]), %%k\\i\n .endr\n"                               \
			 IRP32 "vmovdqu64 \\i*64(%[in]), %%zmm\\i\n .endr\n" SYSCALLS                     \
			 IRP32 "vmovdqu64 %%zmm\\i, \\i*64(%[out])\n .endr\n"                             \
			 IRP8 KMOV " %%k\\i, \\i*8(%[kout])\n .endr\n"                                    \
			 "vzeroupper\n"                                                                 \
			 :                                                                               \
			 : [in] "r"(in), [out] "r"(out), [kin] "r"(kin), [kout] "r"(kout),              \
			   "D"(devnull), "S"("x"), "d"(1L)                                              \
			 : "rax", "rcx", "r11", "memory", XMM_CLOBBERS, "xmm16", "xmm17", "xmm18",       \
			   "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26",       \
			   "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5",    \
			   "k6", "k7")
	if (has_avx512bw)
		ZMM_ROUNDTRIP("kmovq");
	else
		ZMM_ROUNDTRIP("kmovw");
#undef ZMM_ROUNDTRIP
	for (int r = 0; r < 32; r++)
		if (memcmp(in + 64 * r, out + 64 * r, 64)) {
			char buf[40];
			snprintf(buf, sizeof(buf), "zmm%d changed", r);
			fail("zmm", t, iter, buf);
			return;
		}
	for (int k = 0; k < 8; k++)
		if (kin[k] != kout[k]) {
			char buf[60];
			snprintf(buf, sizeof(buf), "k%d is %#lx, expected %#lx", k, kout[k], kin[k]);
			fail("opmask", t, iter, buf);
			return;
		}
}

/* ---- a timer signal whose handler clobbers vector state ---- */

static int has_avx2, has_avx512f;
static atomic_int nsignals;
static atomic_int handler_saw_nondefault_mxcsr;

__attribute__((target("avx512f"))) static void clobber_zmm(void)
{
	__asm__ volatile(IRP32 "vpternlogd $0xff, %%zmm\\i, %%zmm\\i, %%zmm\\i\n .endr\n"
			 "kxnorw %%k1, %%k1, %%k1\n kxnorw %%k7, %%k7, %%k7\n vzeroupper\n"
			 ::: "memory", XMM_CLOBBERS, "xmm16", "xmm31", "k1", "k7");
}

__attribute__((target("avx2"))) static void clobber_ymm(void)
{
	__asm__ volatile(IRP16 "vpcmpeqd %%ymm\\i, %%ymm\\i, %%ymm\\i\n .endr\n vzeroupper\n"
			 ::: "memory", XMM_CLOBBERS);
}

static void on_alarm(int sig)
{
	unsigned int mx;
	/* Linux starts every handler with the FPU in its initial state. */
	__asm__ volatile("stmxcsr %0" : "=m"(mx));
	if (mx != 0x1f80)
		atomic_store(&handler_saw_nondefault_mxcsr, 1);
	__asm__ volatile(IRP16 "pcmpeqd %%xmm\\i, %%xmm\\i\n .endr\n" ::: "memory", XMM_CLOBBERS);
	if (has_avx2)
		clobber_ymm();
	if (has_avx512f)
		clobber_zmm();
	__asm__ volatile("ldmxcsr %0" ::"m"(mx));
	atomic_fetch_add(&nsignals, 1);
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;
	for (long iter = 0;; iter++) {
		if (iter >= MIN_ITERS && (atomic_load(&nsignals) >= 20 || iter >= 200000))
			break;
		check_gpr(t, iter);
		check_x87(t, iter);
		check_xmm(t, iter);
		if (has_avx2)
			check_ymm(t, iter);
		if (has_avx512f)
			check_zmm(t, iter);
		if (atomic_load(&failures))
			break;
	}
	return NULL;
}

int main(void)
{
	__builtin_cpu_init();
	has_avx2 = __builtin_cpu_supports("avx2");
	has_avx512f = __builtin_cpu_supports("avx512f");
	has_avx512bw = __builtin_cpu_supports("avx512bw");
	devnull = open("/dev/null", O_WRONLY);
	ppid = getppid();

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	setitimer(ITIMER_REAL, &it, NULL);

	pthread_t th[NTHREADS];
	for (long i = 1; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	worker((void *)0);
	for (int i = 1; i < NTHREADS; i++)
		pthread_join(th[i], NULL);

	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);

	int ok = atomic_load(&failures) == 0;
#define RES(c) (atomic_load(&catfail[c]) ? "FAIL" : "OK")
	printf("gpr, flags, red zone: %s\n", RES(0));
	printf("x87/mxcsr: %s\n", RES(1));
	printf("xmm0-15: %s\n", RES(2));
	printf("ymm0-15: %s\n", !has_avx2 ? "skipped (no AVX2)" : RES(3));
	printf("zmm0-31, k0-7: %s\n", !has_avx512f ? "skipped (no AVX-512)" : RES(4));
	printf("signal handlers start with default mxcsr: %s\n",
	       atomic_load(&handler_saw_nondefault_mxcsr) ? "no" : "yes");
	return ok ? 0 : 1;
}
