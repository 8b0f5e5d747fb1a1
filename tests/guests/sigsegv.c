/* Fatal signals (DESIGN 5.6, 5.8): the guest must die from the same signal as
 * natively, and a SIGSEGV handler must see the real fault. Modes (argv[1]):
 *   raise     raise(SIGSEGV)
 *   null      write to address 0
 *   nullcall  call a NULL function pointer (page 0 must stay unmapped for it)
 *   abort     abort(): SIGABRT
 *   handler   a SIGSEGV handler siglongjmps out of a NULL write
 *   ignored   SIGSEGV ignored, then a NULL write: still fatal
 *   blocked   a SIGSEGV handler, SIGSEGV blocked, then a NULL write: still fatal
 *   efault    every signal blocked: bad pointers given to calls the kernel
 *             itself reads or writes (sigaction, sigprocmask, sigaltstack,
 *             clone3, a path, readlink of /proc/self/exe) fail with EFAULT
 *   pending   SIGSEGV and SIGBUS blocked and raised stay pending until
 *             unblocked, then reach their handler */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/syscall.h>
#include <fcntl.h>

static sigjmp_buf env;
static volatile void *fault_addr;
static volatile int fault_code;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	printf("handler: signal %d, sent by kill %d\n", sig, si->si_code == SI_TKILL);
}

static void show(const char *what, long r)
{
	printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	fault_addr = si->si_addr;
	fault_code = si->si_code;
	siglongjmp(env, 1);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "handler";
	volatile int *volatile nullp = NULL;
	void (*volatile nullfn)(void) = NULL;
	printf("mode %s\n", mode);
	fflush(stdout);
	if (!strcmp(mode, "raise")) {
		raise(SIGSEGV);
	} else if (!strcmp(mode, "null")) {
		*nullp = 1;
	} else if (!strcmp(mode, "nullcall")) {
		nullfn();
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "handler")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		for (int i = 0; i < 3; i++) {
			if (sigsetjmp(env, 1) == 0) {
				*nullp = i;
				printf("no fault?\n");
				return 1;
			}
			printf("recovered from NULL write %d: si_addr %p, SEGV_MAPERR %d\n", i,
			       (void *)fault_addr, fault_code == SEGV_MAPERR);
		}
		if (sigsetjmp(env, 1) == 0)
			nullfn();
		printf("recovered from NULL call: si_addr %p\n", (void *)fault_addr);
		return 0;
	} else if (!strcmp(mode, "blocked")) {
		struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
		sigaction(SIGSEGV, &sa, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGSEGV);
		sigprocmask(SIG_BLOCK, &set, NULL);
		*nullp = 1;
	} else if (!strcmp(mode, "efault")) {
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		show("rt_sigaction", syscall(SYS_rt_sigaction, SIGUSR1, (void *)8, NULL, 8));
		show("rt_sigprocmask", syscall(SYS_rt_sigprocmask, SIG_BLOCK, (void *)16, NULL, 8));
		show("sigaltstack", syscall(SYS_sigaltstack, (void *)24, NULL));
		show("clone3", syscall(SYS_clone3, (void *)0x1000, 88));
		show("openat", syscall(SYS_openat, AT_FDCWD, (void *)0x2000, 0));
		show("readlink", syscall(SYS_readlink, "/proc/self/exe", (void *)0x3000, 100));
		return 0;
	} else if (!strcmp(mode, "pending")) {
		struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		sigset_t set, pend;
		sigemptyset(&set);
		sigaddset(&set, SIGSEGV);
		sigaddset(&set, SIGBUS);
		sigprocmask(SIG_BLOCK, &set, NULL);
		raise(SIGSEGV);
		raise(SIGBUS);
		show("getpid after raise", getpid() > 0);
		sigpending(&pend);
		printf("pending: SIGSEGV %d SIGBUS %d\n", sigismember(&pend, SIGSEGV), sigismember(&pend, SIGBUS));
		fflush(stdout);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		printf("unblocked\n");
		return 0;
	} else if (!strcmp(mode, "ignored")) {
		signal(SIGSEGV, SIG_IGN);
		*nullp = 1;
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	printf("still alive?\n");
	return 1;
}
