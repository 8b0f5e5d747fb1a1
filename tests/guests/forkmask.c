/* forkmask.c: signals that come while the guest's calls run reach it as
 * natively (DESIGN "SIGSYS platforms and signals"): never while it blocks
 * them all, and without waiting for a later call.
 *
 *   vfork  Go's os/exec: every signal blocked around clone(CLONE_VM |
 *          CLONE_VFORK) with stack 0; the child resets its handlers,
 *          restores the mask and exits, while another process sends
 *          SIGUSR1 and the children's SIGCHLD come. A handler that runs in
 *          that window (Go's runtime dies: "signal received during fork")
 *          is a failure.
 *   late   after each call, the real-time signals sent by then arrive while
 *          the guest spins in its own code, making no call.
 * With no argument, both. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static __thread volatile int in_fork; /* the CLONE_VM child shares it, as Go's g */
static volatile int fail_sig;

struct shared {
	volatile long done, got; /* signals sent (the sends that returned), and handled */
	volatile int stop;
};
static struct shared *sh;

static inline __attribute__((always_inline)) long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 asm("r10") = d, r8 asm("r8") = e, r9 asm("r9") = f;
	asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
		     : "rcx", "r11", "memory");
	return r;
}

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	if (in_fork && !fail_sig)
		fail_sig = sig;
	__atomic_add_fetch(&sh->got, 1, __ATOMIC_SEQ_CST);
}

static void handle(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(sig, &sa, NULL);
}

/* A process that sends sig to this one as fast as it is taken, at most
 * ahead of them pending at a time (sigqueue: a real-time signal is queued
 * or refused, never merged with another). */
static pid_t storm(int sig, int ahead)
{
	pid_t parent = getpid(), p = fork();
	if (p == 0) {
		while (!sh->stop && getppid() == parent) /* (not beyond a killed parent) */
			if (__atomic_load_n(&sh->got, __ATOMIC_SEQ_CST) + ahead > __atomic_load_n(&sh->done, __ATOMIC_SEQ_CST) &&
			    sigqueue(parent, sig, (union sigval){ 0 }) == 0)
				__atomic_add_fetch(&sh->done, 1, __ATOMIC_SEQ_CST);
		_exit(0);
	}
	return p;
}

static void end_storm(pid_t s)
{
	sh->stop = 1;
	waitpid(s, NULL, 0);
}

static const uint64_t all = ~0UL, none = 0;
static const long dfl[4]; /* a sigaction of SIG_DFL: nothing the child writes on the shared stack */

static void vfork_mode(int n)
{
	handle(SIGCHLD);
	handle(SIGUSR1);
	pid_t s = storm(SIGUSR1, 2);
	uint64_t old = 0;
	for (int i = 0; i < n && !fail_sig; i++) {
		sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0);
		in_fork = 1;
		long pid = sys6(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0, 0);
		if (pid == 0) {
			sys6(SYS_rt_sigaction, SIGCHLD, (long)dfl, 0, 8, 0, 0);
			sys6(SYS_rt_sigaction, SIGUSR1, (long)dfl, 0, 8, 0, 0);
			sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
			sys6(SYS_exit, 0, 0, 0, 0, 0, 0);
		}
		in_fork = 0;
		sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
		if (pid < 0) {
			printf("FAIL: clone: %ld\n", pid);
			break;
		}
		while (waitpid((pid_t)pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	end_storm(s);
	if (fail_sig)
		printf("FAIL: signal %d reached its handler while every signal was blocked\n", fail_sig);
	else
		printf("vfork: %d clones, no handler while every signal was blocked\n", n);
}

/* A second of spinning: natively a signal sent to a thread running its own
 * code arrives at once. */
#define SECOND 3000000000UL /* TSC ticks, about */

static void late_mode(int n)
{
	int sig = SIGRTMIN;
	handle(sig);
	pid_t s = storm(sig, 1); /* one at a time: none brings another in */
	int late = 0;
	for (int i = 0; i < n && !late; i++) {
		sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, 8, 0, 0);
		long sent = __atomic_load_n(&sh->done, __ATOMIC_SEQ_CST);
		uint64_t t0 = __builtin_ia32_rdtsc();
		while (__atomic_load_n(&sh->got, __ATOMIC_SEQ_CST) < sent)
			if (__builtin_ia32_rdtsc() - t0 > SECOND) {
				/* looked at again: a thread preempted meanwhile
				 * takes the signal when it runs again */
				late = __atomic_load_n(&sh->got, __ATOMIC_SEQ_CST) < sent;
				break;
			}
	}
	end_storm(s);
	if (late)
		printf("FAIL: a signal sent before the spin waited for the next call\n");
	else
		printf("late: %d calls, every signal arrived without another\n", n);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	const char *mode = argc > 1 ? argv[1] : "";
	if (*mode && strcmp(mode, "vfork") && strcmp(mode, "late")) {
		fprintf(stderr, "usage: forkmask [vfork|late]\n");
		return 2;
	}
	if (!*mode || !strcmp(mode, "vfork"))
		vfork_mode(3000);
	if (!*mode || !strcmp(mode, "late"))
		late_mode(20000);
	return 0;
}
