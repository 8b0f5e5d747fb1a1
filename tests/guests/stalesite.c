/* Stale knowledge of a rewritten site (DESIGN 5.7, 5.8): on the fast path a
 * `call *%rax` that lands in page 0 is a system call only if zvisor itself
 * wrote that `call` over a `syscall`. Here JIT code `mov $39,%eax; syscall;
 * ret` runs 1000 times (its site gets rewritten), then the guest replaces it
 * with `xor %eax,%eax; nop x3; call *%rax; ret`, whose own `call *%rax` sits
 * exactly where the old syscall was: a NULL call, which must fault as
 * natively (SIGSEGV, si_addr 0, SEGV_MAPERR, rip 0, the return address on
 * the stack), not run read(). Then the old code is written back and must
 * work again. How the code is replaced (argv[1]):
 *   mprotect  W^X page: mprotect RW, write, mprotect R+X
 *   remap     munmap, then a new page mapped at the same address
 *   rwx       an RWX page written in place, with no system call at all */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define OFFSET 0x3c0

static const unsigned char code_old[8] = { 0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xc3 };
static const unsigned char code_new[8] = { 0x31, 0xc0, 0x90, 0x90, 0x90, 0xff, 0xd0, 0xc3 };

static sigjmp_buf env;
static volatile unsigned long fault_addr, fault_rip, fault_top;
static volatile int fault_code;

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	fault_addr = (unsigned long)si->si_addr;
	fault_code = si->si_code;
	fault_rip = uc->uc_mcontext.gregs[REG_RIP];
	fault_top = *(unsigned long *)uc->uc_mcontext.gregs[REG_RSP];
	siglongjmp(env, 1);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Put `code` at OFFSET the way the mode says; returns the page (which may
 * be new, at the same address). */
static unsigned char *replace(unsigned char *page, const char *mode, const unsigned char *code)
{
	if (!strcmp(mode, "mprotect")) {
		if (mprotect(page, 4096, PROT_READ | PROT_WRITE))
			die("mprotect");
	} else if (!strcmp(mode, "remap")) {
		if (munmap(page, 4096) ||
		    mmap(page, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) != page)
			die("remap");
		memset(page, 0xcc, 4096);
	}
	memcpy(page + OFFSET, code, 8);
	if (strcmp(mode, "rwx") && mprotect(page, 4096, PROT_READ | PROT_EXEC))
		die("mprotect");
	return page;
}

static long calls_ok(unsigned char *fn, long want)
{
	long ok = 0;
	for (int i = 0; i < 1000; i++)
		ok += ((long (*)(void))fn)() == want;
	return ok;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "mprotect") && strcmp(mode, "remap") && strcmp(mode, "rwx")) {
		fprintf(stderr, "usage: stalesite mprotect|remap|rwx\n");
		return 2;
	}
	long pid = getpid();
	int prot = PROT_READ | PROT_WRITE | (strcmp(mode, "rwx") ? 0 : PROT_EXEC);
	unsigned char *page = mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		die("mmap");
	memset(page, 0xcc, 4096);
	memcpy(page + OFFSET, code_old, 8);
	if (strcmp(mode, "rwx") && mprotect(page, 4096, PROT_READ | PROT_EXEC))
		die("mprotect");
	printf("mode %s: getpid %ld of 1000 ok\n", mode, calls_ok(page + OFFSET, pid));

	page = replace(page, mode, code_new);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	for (int round = 0; round < 2; round++) {
		if (sigsetjmp(env, 1) == 0) {
			long r = ((long (*)(void))(page + OFFSET))();
			printf("NULL call at the old site returned %ld: no fault\n", r);
			return 1;
		}
		printf("round %d: SIGSEGV si_addr %#lx, SEGV_MAPERR %d, rip %#lx, stack top "
		       "%s\n", round, fault_addr, fault_code == SEGV_MAPERR, fault_rip,
		       fault_top == (unsigned long)page + OFFSET + 7 ? "return address" : "wrong");
	}
	signal(SIGSEGV, SIG_DFL);

	page = replace(page, mode, code_old);
	printf("old code written back: getpid %ld of 1000 ok\n", calls_ok(page + OFFSET, pid));
	return 0;
}
