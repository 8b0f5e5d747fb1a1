/* A tracer's view of what strace's own test suite probes: a call that
 * fails with EFAULT still has its exit stop; GETREGSET of a length that
 * is not whole words; a CLONE_PTRACE child; the restart code of an
 * interrupted absolute sleep; a thread's execve as the tracer sees it,
 * and one made after its leader's exit(2). tests/test_ptrace.py runs it
 * natively and under zvisor, tracer and tracee both guests. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "say.h"
#include "traced.h"

#define ARCH_GET_GS 0x1004

static const char *name(long nr)
{
	switch (nr) {
	case SYS_arch_prctl: return "arch_prctl";
	case SYS_rt_sigprocmask: return "rt_sigprocmask";
	case SYS_getppid: return "getppid";
	case SYS_clock_nanosleep: return "clock_nanosleep";
	case SYS_restart_syscall: return "restart_syscall";
	default: return NULL;
	}
}

/* Runs the tracee to its end at every syscall stop, saying the stops of
 * the calls name() knows: each entry, then its exit and result. */
static void syscall_stops(pid_t pid)
{
	int st;
	for (;;) {
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
		CHECK(waitpid(pid, &st, 0) == pid);
		if (WIFEXITED(st)) {
			say("exited %d\n", WEXITSTATUS(st));
			return;
		}
		CHECK(WIFSTOPPED(st));
		if (WSTOPSIG(st) != (SIGTRAP | 0x80))
			continue;
		struct user_regs_struct r;
		CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
		const char *n = name((long)r.orig_rax);
		if (!n)
			continue;
		if ((long)r.rax == -ENOSYS)
			say("entry %s\n", n);
		else if ((long)r.rax < 0)
			say("exit %s: %ld\n", n, (long)r.rax);
		else
			say("exit %s: done\n", n);
	}
}

static void efault_tracee(void)
{
	void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	long r = syscall(SYS_arch_prctl, ARCH_GET_GS, 0L);
	say("tracee: arch_prctl %ld, errno %d\n", r, r < 0 ? errno : 0);
	r = syscall(SYS_arch_prctl, ARCH_GET_GS, page);
	say("tracee: arch_prctl %ld, errno %d\n", r, r < 0 ? errno : 0);
	r = syscall(SYS_rt_sigprocmask, SIG_SETMASK, page, NULL, 8);
	say("tracee: rt_sigprocmask %ld, errno %d\n", r, r < 0 ? errno : 0);
	syscall(SYS_getppid);
}

/* Calls that fail with EFAULT on a bad pointer the kernel writes or
 * reads: each has its exit stop, then the next call its entry. */
static void mode_efault(void)
{
	syscall_stops(traced_child(efault_tracee, 0));
}

static void stop_tracee(void)
{
}

/* GETREGSET and SETREGSET of NT_PRSTATUS whose length is not whole
 * 8-byte words: EINVAL; of 0 and 8 bytes: done. */
static void mode_regset(void)
{
	pid_t pid = traced_child(stop_tracee, 0);
	uint64_t buf[32];
	static const size_t lens[] = { 0, 1, 7, 8, 12, 216, 217 };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		for (int set = 0; set < 2; set++) {
			struct iovec iov = { buf, lens[i] };
			if (set)
				CHECK(ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &(struct iovec){ buf, 216 }) == 0);
			long r = ptrace(set ? PTRACE_SETREGSET : PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov);
			say("%sREGSET %zu: %ld%s%s, iov_len %zu\n", set ? "SET" : "GET", lens[i], r, r < 0 ? " " : "",
			    r < 0 ? strerror(errno) : "", iov.iov_len);
		}
	}
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	say("exited %d\n", WEXITSTATUS(st));
}

static void cloneptrace_tracee(void)
{
	pid_t c = (pid_t)syscall(SYS_clone, CLONE_PTRACE | SIGCHLD, 0, 0, 0, 0);
	CHECK(c >= 0);
	if (c == 0)
		_exit(6);
	int st;
	CHECK(waitpid(c, &st, 0) == c);
	say("tracee: its child %s %d\n", WIFEXITED(st) ? "exited" : "ended by", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* A tracee's CLONE_PTRACE child is traced too, without an event stop
 * (no option asked for one): its first stop is a SIGSTOP. */
static void mode_cloneptrace(void)
{
	pid_t pid = traced_child(cloneptrace_tracee, 0);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		CHECK(w > 0);
		if (w == pid && WIFEXITED(st)) {
			say("tracee exited %d\n", WEXITSTATUS(st));
			return;
		}
		CHECK(WIFSTOPPED(st));
		int sig = WSTOPSIG(st);
		if (w != pid) {
			say("its child: stopped by %s, detached\n", strsignal(sig));
			CHECK(ptrace(PTRACE_DETACH, w, 0, 0) == 0);
			continue;
		}
		CHECK(ptrace(PTRACE_CONT, pid, 0, sig == SIGCHLD ? 0 : sig) == 0);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void abssleep_tracee(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	for (int abs = 0; abs < 2; abs++) {
		struct timespec ts = { 2, 0 };
		if (abs) {
			CHECK(clock_gettime(CLOCK_REALTIME, &ts) == 0);
			ts.tv_sec += 2;
		}
		struct itimerval it = { { 0, 0 }, { 0, 100000 } };
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
		long r = syscall(SYS_clock_nanosleep, CLOCK_REALTIME, abs ? TIMER_ABSTIME : 0, &ts, NULL);
		say("tracee: %s sleep %ld, errno %d\n", abs ? "absolute" : "relative", r, r < 0 ? errno : 0);
	}
}

/* A sleep a handled signal interrupts: its exit stop shows
 * ERESTART_RESTARTBLOCK (-516), or ERESTARTNOHAND (-514) for an absolute
 * one, as the host's hrtimer_nanosleep returns. */
static void mode_abssleep(void)
{
	syscall_stops(traced_child(abssleep_tracee, 0));
}

static char **exec_argv;

static void *exec_thread(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 100 * 1000000L };
	nanosleep(&ts, NULL);
	char *av[] = { exec_argv[0], (char *)"execd", NULL };
	execv(exec_argv[0], av); /* (not /proc/self/exe: gone with the leader) */
	say("FAIL thread's execve: %s\n", strerror(errno));
	_exit(3);
}

/* A thread execs after its leader's exit(2), untraced: the new image runs. */
static void mode_leaderless(void)
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, exec_thread, NULL) == 0);
	syscall(SYS_exit, 0);
}

static void threadexec_tracee(void)
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, exec_thread, NULL) == 0);
	struct timespec ts = { 5, 0 };
	nanosleep(&ts, NULL);
	say("FAIL leader woke\n");
}

/* A tracee's thread execs while its leader sleeps: the tracer sees the
 * thread start (its SIGSTOP and the clone event, in either order), then
 * the exec stop on the leader's pid naming the thread, and no end of the
 * thread (its tid becomes the leader's). */
static void mode_threadexec(void)
{
	pid_t pid = traced_child(threadexec_tracee, PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	pid_t thread = 0, first = 0;
	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		CHECK(w > 0);
		const char *who = w == pid ? "leader" : "thread";
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (WIFEXITED(st))
				say("%s: exited %d\n", who, WEXITSTATUS(st));
			else
				say("%s: killed by %s\n", who, strsignal(WTERMSIG(st)));
			if (w == pid)
				return;
			continue;
		}
		CHECK(WIFSTOPPED(st));
		int ev = st >> 16, sig = WSTOPSIG(st);
		unsigned long msg = 0;
		if (ev == PTRACE_EVENT_CLONE) {
			CHECK(ptrace(PTRACE_GETEVENTMSG, w, 0, &msg) == 0);
			thread = (pid_t)msg;
			sig = 0;
		} else if (ev == PTRACE_EVENT_EXEC) {
			CHECK(ptrace(PTRACE_GETEVENTMSG, w, 0, &msg) == 0);
			say("thread's first stop: %s\n", first && first == thread ? "SIGSTOP" : "none");
			say("%s: exec event, old tid %s\n", who, (pid_t)msg == thread ? "the thread's" : "another");
			sig = 0;
		} else if (sig == SIGSTOP && w != pid && !first) {
			first = w;
			sig = 0;
		} else if (sig == SIGTRAP) {
			sig = 0;
		}
		CHECK(ptrace(PTRACE_CONT, w, 0, sig) == 0);
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	exec_argv = argv;
	alarm(20);
	if (!strcmp(m, "--list"))
		say("efault\nregset\ncloneptrace\nabssleep\nleaderless\nthreadexec\n");
	else if (!strcmp(m, "efault"))
		mode_efault();
	else if (!strcmp(m, "regset"))
		mode_regset();
	else if (!strcmp(m, "cloneptrace"))
		mode_cloneptrace();
	else if (!strcmp(m, "abssleep"))
		mode_abssleep();
	else if (!strcmp(m, "leaderless"))
		mode_leaderless();
	else if (!strcmp(m, "threadexec"))
		mode_threadexec();
	else if (!strcmp(m, "execd"))
		say("new image runs\n");
	else
		say("usage: ptprobe MODE (--list)\n");
	return 0;
}
