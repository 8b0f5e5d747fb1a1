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
 *             unblocked, then reach their handler
 * The following block every signal first, as posix_spawn's and vfork's
 * children and a new thread's start do (zvisor makes their calls on its
 * fast path, with the fault signals opened on the host for each call):
 *   badbuf    reads into a bad buffer, the kernel's own copies among them
 *             (/proc/self/status), and sigaction with a bad act: EFAULT
 *   killed    kill(self, SIGSEGV) stays pending through many calls, the
 *             status file shows it pending and every signal blocked,
 *             sigtimedwait takes it; then a SIGBUS and a SIGSEGV sent
 *             reach their handlers when unblocked
 *   nullall   a NULL read: death by SIGSEGV
 *   nullheld  a SIGSEGV handler, then a NULL write: death by SIGSEGV (the
 *             host resets a blocked fault's action)
 *   sentheld  a SIGSEGV sent by a child while this process runs its own
 *             code stays pending, then reaches its handler when unblocked
 *   spawn     a posix_spawn child (mode spawned) with every signal blocked
 *             sees its mask whole and gets EFAULT from a bad pointer */
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
#include <spawn.h>
#include <sys/wait.h>

static sigjmp_buf env;
static volatile void *fault_addr;
static volatile int fault_code;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	printf("handler: signal %d, sent by kill %d\n", sig, si->si_code == SI_TKILL);
}

static void on_signal_now(int sig)
{
	static const char msg[] = "handler ran\n";
	(void)sig;
	if (write(1, msg, sizeof msg - 1) < 0)
		_exit(3);
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

/* The line "KEY:\t..." of /proc/self/status, printed. */
static void status_line(const char *key)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return;
	buf[n] = 0;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, strlen(key))) {
			printf("%.*s\n", (int)strcspn(l, "\n"), l);
			return;
		}
}

static void block_all(void)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
}

/* Calls that never need a signal frame, many of them: the host's alone,
 * and ones whose answer zvisor writes to guest memory. */
static void fast_calls(void)
{
	long sum = 0;
	struct sigaction old;
	for (int i = 0; i < 200; i++)
		sum += syscall(SYS_getppid) > 0 && syscall(SYS_rt_sigaction, SIGUSR2, NULL, &old, 8) == 0;
	show("getppid and sigaction calls", sum);
}

static void pending_faults(void)
{
	sigset_t pend;
	sigpending(&pend);
	printf("pending: SIGSEGV %d SIGBUS %d\n", sigismember(&pend, SIGSEGV), sigismember(&pend, SIGBUS));
}

static void bad_buffers(void)
{
	int p[2], fd = open("/proc/self/status", O_RDONLY);
	char *volatile bad = (char *)8;
	show("read status into a bad buffer", read(fd, bad, 64));
	close(fd);
	show("pipe", pipe(p));
	show("write", write(p[1], "abc", 3));
	show("read pipe into a bad buffer", read(p[0], bad + 8, 3));
	show("rt_sigaction bad act", syscall(SYS_rt_sigaction, SIGUSR1, (void *)8, NULL, 8));
	show("rt_sigaction bad oact", syscall(SYS_rt_sigaction, SIGUSR1, NULL, (void *)8, 8));
	show("readlink into a bad buffer", syscall(SYS_readlink, "/proc/self/exe", (void *)0x3000, 100));
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
	} else if (!strcmp(mode, "badbuf")) {
		block_all();
		bad_buffers();
		status_line("SigBlk:");
		return 0;
	} else if (!strcmp(mode, "killed")) {
		struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		block_all();
		show("kill SIGSEGV", kill(getpid(), SIGSEGV));
		fast_calls();
		pending_faults();
		status_line("SigBlk:");
		status_line("SigPnd:");
		status_line("ShdPnd:");
		sigset_t segv;
		siginfo_t si;
		sigemptyset(&segv);
		sigaddset(&segv, SIGSEGV);
		struct timespec zero = { 0, 0 };
		int got = sigtimedwait(&segv, &si, &zero);
		printf("sigtimedwait: %d, SI_USER %d, from self %d\n", got, si.si_code == SI_USER, si.si_pid == getpid());
		pending_faults();
		show("tgkill SIGBUS", syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGBUS));
		show("kill SIGSEGV", kill(getpid(), SIGSEGV));
		fast_calls();
		pending_faults();
		fflush(stdout);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGSEGV);
		sigaddset(&set, SIGBUS);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		printf("unblocked\n");
		return 0;
	} else if (!strcmp(mode, "nullall")) {
		block_all();
		fast_calls();
		fflush(stdout);
		return *nullp;
	} else if (!strcmp(mode, "nullheld")) {
		signal(SIGSEGV, on_signal_now);
		block_all();
		fast_calls();
		fflush(stdout);
		*nullp = 1;
	} else if (!strcmp(mode, "sentheld")) {
		struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
		sigaction(SIGSEGV, &sa, NULL);
		int go[2];
		if (pipe(go))
			return 1;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			char c;
			_exit(read(go[0], &c, 1) == 1 && kill(getppid(), SIGSEGV) == 0 ? 0 : 1);
		}
		block_all();
		fast_calls();
		show("write", write(go[1], "x", 1));
		for (volatile long i = 0; i < 200000000; i++) /* guest code only: the signal comes here */
			;
		int st = 0;
		waitpid(pid, &st, 0);
		printf("child exited %d with %d\n", WIFEXITED(st), WEXITSTATUS(st));
		pending_faults();
		status_line("ShdPnd:");
		fflush(stdout);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGSEGV);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		printf("unblocked\n");
		return 0;
	} else if (!strcmp(mode, "spawn")) {
		block_all();
		posix_spawnattr_t attr;
		sigset_t all;
		sigfillset(&all);
		posix_spawnattr_init(&attr);
		posix_spawnattr_setsigmask(&attr, &all);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
		char *args[] = { argv[0], "spawned", NULL };
		pid_t pid;
		fflush(stdout);
		int r = posix_spawn(&pid, "/proc/self/exe", NULL, &attr, args, NULL);
		int st = 0;
		waitpid(pid, &st, 0);
		printf("posix_spawn %d, child exited %d with %d\n", r, WIFEXITED(st), WEXITSTATUS(st));
		return 0;
	} else if (!strcmp(mode, "spawned")) {
		sigset_t now;
		sigprocmask(SIG_BLOCK, NULL, &now);
		printf("spawned: SIGSEGV blocked %d SIGBUS blocked %d SIGUSR1 blocked %d\n", sigismember(&now, SIGSEGV),
		       sigismember(&now, SIGBUS), sigismember(&now, SIGUSR1));
		status_line("SigBlk:");
		bad_buffers();
		return 3;
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
