/* rflags, rcx and r11 across a syscall (DESIGN 3.4, 5.2): the host's
 * `syscall` keeps the arithmetic flags (and DF), sets rcx to the address of
 * the next instruction and r11 to rflags. Each site below is executed 10000
 * times (so the fast path rewrites it) with flags set right before it, and
 * checked right after with pushfq:
 *   popf  rflags loaded with popfq, cycling through all 128 combinations of
 *         CF PF AF ZF SF OF DF; getpid and getppid alternate
 *   stc   xor (ZF PF) then stc (CF); AF is undefined after xor
 *   cmp   cmp 2 with 1: CF SF AF PF
 *   add   0x7fffffff + 1: OF SF AF PF
 * r11 must equal rflags as read after the syscall, ignoring RF and TF. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ITERS 10000
#define ARITH 0x8d5UL /* CF PF AF ZF SF OF */
#define DF 0x400UL
#define CHECKED (ARITH | DF)
#define RF_TF 0x10100UL

struct out {
	unsigned long rax, rcx, r11, flags, next;
};

/* FLAGS_SITE(name, SETUP): SETUP sets the flags (it may use %r8; %[fl] is
 * the value for popfq); then the syscall, then everything is recorded before
 * any instruction can change the flags. pushfq/popfq run 128 bytes below rsp
 * (lea, which keeps the flags) so as not to touch the function's red zone. */
#define FLAGS_SITE(name, SETUP)                                                             \
	__attribute__((noinline)) static void name(long nr, unsigned long fl, struct out *o) \
	{                                                                                   \
		__asm__ volatile(SETUP "\n"                                                 \
				 "syscall # " #name "\n"                                    \
				 "1:\n"                                                     \
				 "lea -128(%%rsp), %%rsp\n"                                 \
				 "pushfq\n"                                                 \
				 "pop %%r8\n"                                               \
				 "lea 128(%%rsp), %%rsp\n"                                  \
				 "cld\n"                                                    \
				 "mov %%rax, 0(%[o])\n"                                     \
				 "mov %%rcx, 8(%[o])\n"                                     \
				 "mov %%r11, 16(%[o])\n"                                    \
				 "mov %%r8, 24(%[o])\n"                                     \
				 "lea 1b(%%rip), %%r8\n"                                    \
				 "mov %%r8, 32(%[o])\n"                                     \
				 : "+a"(nr)                                                 \
				 : [o] "D"(o), [fl] "r"(fl)                                 \
				 : "rcx", "r11", "r8", "memory", "cc");                     \
	}
FLAGS_SITE(site_popf, "lea -128(%%rsp), %%rsp\n push %[fl]\n popfq\n lea 128(%%rsp), %%rsp")
FLAGS_SITE(site_stc, "xor %%r8d, %%r8d\n stc")
FLAGS_SITE(site_cmp, "mov $1, %%r8d\n cmp $2, %%r8d")
FLAGS_SITE(site_add, "mov $0x7fffffff, %%r8d\n add $1, %%r8d")

static long pid, ppid;

static int check(const char *name, void (*site)(long, unsigned long, struct out *),
		 unsigned long fixed, unsigned long mask)
{
	long bad = 0;
	for (long n = 0; n < ITERS; n++) {
		/* popf: bits of n % 128 spread over CF PF AF ZF SF OF DF */
		static const unsigned long bits[7] = { 0x1, 0x4, 0x10, 0x40, 0x80, 0x800, 0x400 };
		unsigned long want = fixed, fl = 0x202;
		if (!fixed) {
			for (int b = 0; b < 7; b++)
				if (n & (1 << b))
					fl |= bits[b];
			want = fl & CHECKED;
		}
		long nr = n & 1 ? 110 : 39;
		struct out o;
		memset(&o, 0, sizeof(o));
		site(nr, fl, &o);
		const char *what = NULL;
		if ((long)o.rax != (nr == 39 ? pid : ppid))
			what = "rax";
		else if ((o.flags & mask) != (want & mask))
			what = "rflags";
		else if (o.rcx != o.next)
			what = "rcx";
		else if ((o.r11 & ~RF_TF) != (o.flags & ~RF_TF))
			what = "r11";
		if (what && bad++ == 0)
			printf("  FAIL: %s call %ld: %s wrong: rax %ld rcx %#lx (next %#lx) r11 %#lx "
			       "rflags %#lx, wanted flags %#lx\n", name, n, what, (long)o.rax,
			       o.rcx, o.next, o.r11, o.flags, want);
	}
	printf("%s: %d syscalls, flags, rcx and r11 as the host sets them: %s\n", name, ITERS,
	       bad ? "NO" : "yes");
	return bad != 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	pid = syscall(SYS_getpid);
	ppid = syscall(SYS_getppid);
	int failed = 0;
	failed |= check("popf (128 flag combinations)", site_popf, 0, CHECKED);
	failed |= check("stc", site_stc, 0x1 | 0x4 | 0x40, CHECKED & ~0x10UL);
	failed |= check("cmp", site_cmp, 0x1 | 0x4 | 0x10 | 0x80, CHECKED);
	failed |= check("add overflow", site_add, 0x4 | 0x10 | 0x80 | 0x800, CHECKED);
	return failed;
}
