/* Syscall numbers beyond the trampoline's sled at a rewritten site (DESIGN
 * 5.8): ONE syscall site is used 1000 times with getpid (so the fast path
 * rewrites it to `call *%rax`), then with numbers past the syscall table,
 * with high bits set, and with values that are not even canonical addresses,
 * which a rewritten site would call. Each must return what the host returns
 * (-ENOSYS, or the call selected by the low 32 bits: see rawsys.c), never
 * jump into the kernel or fault; then the site must still work. Modes
 * (argv[1]):
 *   plain    (default) SIGSEGV has its default disposition
 *   handler  a SIGSEGV handler is installed: it must not run
 *   blocked  every signal is blocked (a fault zvisor takes to run such a
 *            call must not become a fatal blocked fault) */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static long raw(unsigned long nr)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(0), "S"(0), "d"(0)
			 : "rcx", "r11", "memory");
	return r;
}

/* Print a result, naming our own pid instead of its value. */
static void show(const char *what, long r, long pid)
{
	if (r == pid)
		printf("%s: pid\n", what);
	else
		printf("%s: %ld\n", what, r);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "unexpected SIGSEGV\n";
	write(1, msg, sizeof(msg) - 1);
	_exit(3);
}

static int loop_getpid(long pid, const char *when)
{
	long ok = 0;
	for (int i = 0; i < 1000; i++)
		ok += raw(39) == pid;
	printf("getpid %s: %ld of 1000 calls returned the pid\n", when, ok);
	return ok != 1000;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	const char *mode = argc > 1 ? argv[1] : "plain";
	if (!strcmp(mode, "handler")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
	} else if (!strcmp(mode, "blocked")) {
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
	} else if (strcmp(mode, "plain")) {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	printf("mode %s\n", mode);
	long pid = getpid();
	int failed = loop_getpid(pid, "before");
	static const struct {
		unsigned long nr;
		const char *name;
	} nrs[] = {
		{ 400, "nr 400 (unassigned)" },
		{ 512, "nr 512 (x32 range)" },
		{ 1000, "nr 1000" },
		{ 4095, "nr 4095 (last byte of page 0)" },
		{ 4096, "nr 4096 (page 1)" },
		{ 0x7fffffffUL, "nr 0x7fffffff" },
		{ ~0UL, "nr -1" },
		{ 0x100000027UL, "nr 0x100000027 (high bits + getpid)" },
		{ 0x40000027UL, "nr 0x40000027 (x32 getpid)" },
		{ 0x8000000000000027UL, "nr 0x8000000000000027 (non-canonical)" },
		{ 0xffffffffffff0027UL, "nr 0xffffffffffff0027" },
		{ 0xffffffff00000027UL, "nr 0xffffffff00000027 (kernel half, low bits getpid)" },
		{ 0x0000800000000027UL, "nr 0x800000000027 (just past user space)" },
		{ 39, "getpid (39)" },
	};
	for (size_t i = 0; i < sizeof(nrs) / sizeof(nrs[0]); i++)
		show(nrs[i].name, raw(nrs[i].nr), pid);
	failed |= loop_getpid(pid, "after");
	return failed;
}
