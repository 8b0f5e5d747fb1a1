/* A tracee at its syscall stops, and what comes to it there: signals sent
 * while it is stopped, SIGKILL, its tracer's end, and a tracer's waits
 * mixing an ordinary child with its tracee, and how a tracee starts
 * (TRACEME in a vfork child, a first stop announced by SIGCHLD).
 * tests/test_ptrace.py runs it natively and under zvisor, tracer and
 * tracee both guests. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "say.h"
#include "traced.h"

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* At a syscall stop of getppid: its number (counted at entries), or 0 for
 * another call; *entry says which stop. */
static int getppid_stop(pid_t pid, int *n, int *entry)
{
	struct user_regs_struct r;
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
	if (r.orig_rax != SYS_getppid)
		return 0;
	*entry = (long)r.rax == -ENOSYS;
	return *entry ? ++*n : *n;
}

static void report_end(int st)
{
	if (WIFEXITED(st))
		say("exited %d\n", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("killed by %s\n", strsignal(WTERMSIG(st)));
	else
		say("status %#x\n", st);
}

/* --- stopsig: signals sent to a tracee stopped at a syscall stop */
static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	say("handler %s, code %d\n", strsignal(sig), si->si_code);
}

static void stopsig_body(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigprocmask(SIG_BLOCK, &s, NULL);
	syscall(SYS_getppid); /* 1: SIGUSR1 comes at its exit stop */
	syscall(SYS_getppid); /* 2: SIGUSR2, blocked, at its entry stop */
	sigset_t p;
	sigemptyset(&p);
	sigpending(&p);
	say("SIGUSR2 pending: %s\n", sigismember(&p, SIGUSR2) ? "yes" : "no");
	syscall(SYS_getppid); /* 3: SIGKILL at its entry stop */
	say("survived SIGKILL\n");
}

/* entrysig: a handled signal sent at the entry stop of a call that does
 * not block: the call is made, its exit stop shows its result, then the
 * signal-delivery stop. */
static void entrysig_body(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 3; i++)
		syscall(SYS_getppid);
	say("tracee done\n");
}

/* Runs a tracee with PTRACE_SYSCALL, printing its getppid stops and its
 * signal-delivery stops (the signal given back), and sending sends[i] at
 * getppid k's entry (i = 2k - 2) or exit (i = 2k - 1) stop. */
static void run_stops(void (*body)(void), const int sends[8])
{
	pid_t pid = traced_child(body, 0);
	int n = 0;
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	for (;;) {
		int st, give = 0, entry = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st)) {
			report_end(st);
			return;
		}
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			int k = getppid_stop(pid, &n, &entry);
			int sig = k > 0 && k <= 4 ? sends[2 * (k - 1) + !entry] : 0;
			if (k)
				say("%s getppid %d\n", entry ? "entry" : "exit", k);
			if (sig) {
				CHECK(kill(pid, sig) == 0);
				if (sig == SIGKILL)
					continue; /* its end is the next report */
				pause_ms(20); /* it has surely come meanwhile */
			}
		} else {
			say("signal stop %s\n", strsignal(WSTOPSIG(st)));
			give = WSTOPSIG(st);
		}
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, give) == 0);
	}
}

static void mode_stopsig(void)
{
	const int sends[8] = { 0, SIGUSR1, SIGUSR2, 0, SIGKILL, 0, 0, 0 };
	run_stops(stopsig_body, sends);
}

static void mode_entrysig(void)
{
	const int sends[8] = { SIGUSR1, 0, 0, 0, 0, 0, 0, 0 };
	run_stops(entrysig_body, sends);
}

/* --- sigat-CALL: each kind of signal sent at the entry stop of a call
 * that does not block (getppid), one that blocks on an empty pipe (read),
 * one that sleeps (nanosleep), a wait4 and a waitid whose child has ended
 * and a WNOHANG one of each whose child runs,
 * a poll and a select of a pipe that holds a byte, and a FUTEX_WAIT
 * whose word is not its value: the stops the tracer sees
 * (orig_rax and rax at the exit stop), then the call's result in the
 * tracee. */
enum { HANDLED, RESTART, IGNORED, BLOCKED, KILLED, KINDS };
static const char *const kind_names[KINDS] = { "handled", "SA_RESTART", "ignored", "blocked", "SIGKILL" };
static int at_call, at_kind, at_pipe[2], at_nohang;

static void on_usr1_short(int sig)
{
	say("handler %s\n", strsignal(sig));
}

static const char *err_name(int e)
{
	static char b[16];
	if (e == EINTR)
		return "EINTR";
	snprintf(b, sizeof b, "errno %d", e);
	return b;
}

static void sigat_body(void)
{
	struct sigaction sa = { .sa_handler = on_usr1_short };
	if (at_kind == RESTART)
		sa.sa_flags = SA_RESTART;
	if (at_kind == IGNORED)
		sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	if (at_kind == BLOCKED)
		sigprocmask(SIG_BLOCK, &s, NULL);
	char c = 0;
	struct timespec ts = { 0, 100 * 1000000L };
	pid_t child = 0;
	uint32_t word = 1;
	siginfo_t wsi = { 0 };
	int running[2] = { -1, -1 };
	if (at_nohang) { /* a child that runs until the tracee ends: WNOHANG finds none */
		CHECK(pipe(running) == 0);
		child = fork();
		CHECK(child >= 0);
		if (child == 0) {
			close(running[1]);
			while (read(running[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		close(running[0]);
	} else if (at_call == SYS_wait4 || at_call == SYS_waitid) { /* a child already ended */
		child = fork();
		if (child == 0)
			_exit(7);
		/* its end waited for without taking it, by calls the mode does
		 * not show and that restart with their own number when its
		 * SIGCHLD stops the tracee (not a poll's restart_syscall) */
		char stat_path[64], st[256];
		snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", child);
		int sf = open(stat_path, O_RDONLY);
		CHECK(sf >= 0);
		for (;;) {
			ssize_t n = pread(sf, st, sizeof st - 1, 0);
			st[n > 0 ? n : 0] = 0;
			char *s = strrchr(st, ')');
			if (s && s[1] == ' ' && s[2] == 'Z')
				break;
			sched_yield();
		}
		close(sf);
	}
	int wst = 0;
	struct pollfd pfd = { .fd = at_pipe[0], .events = POLLIN };
	fd_set rset;
	FD_ZERO(&rset);
	struct timeval tv = { 1, 0 };
	if (at_call == SYS_poll || at_call == SYS_select) {
		CHECK(write(at_pipe[1], "x", 1) == 1); /* ready before the call */
		FD_SET(at_pipe[0], &rset);
	}
	long r = at_call == SYS_getppid ? syscall(SYS_getppid) :
		 at_call == SYS_poll ? syscall(SYS_poll, &pfd, 1, 1000) :
		 at_call == SYS_select ? syscall(SYS_select, at_pipe[0] + 1, &rset, NULL, NULL, &tv) :
		 at_call == SYS_read ? syscall(SYS_read, at_pipe[0], &c, 1) :
		 at_call == SYS_wait4 ? syscall(SYS_wait4, child, &wst, at_nohang ? WNOHANG : 0, 0) :
		 at_call == SYS_waitid ? syscall(SYS_waitid, P_PID, child, &wsi, WEXITED | (at_nohang ? WNOHANG : 0), NULL) :
		 at_call == SYS_futex ? syscall(SYS_futex, &word, 128 /* FUTEX_WAIT_PRIVATE */, 0, NULL, NULL, 0) :
		 syscall(SYS_nanosleep, &ts, &ts);
	if (at_call == SYS_wait4 && r == child)
		r = WEXITSTATUS(wst) * 1000; /* (the pid differs from run to run) */
	if (at_call == SYS_waitid && r == 0 && at_nohang)
		say("tracee: waitid found %s\n", wsi.si_pid ? "FAIL" : "none");
	else if (at_call == SYS_waitid && r == 0)
		say("tracee: waitid's child %s, status %d\n", wsi.si_pid == child ? "ok" : "FAIL", wsi.si_status);
	if (at_call == SYS_poll && r > 0)
		say("tracee: revents %s\n", pfd.revents == POLLIN ? "POLLIN" : "FAIL");
	if (at_call == SYS_select && r > 0)
		say("tracee: set %s\n", FD_ISSET(at_pipe[0], &rset) ? "kept the pipe" : "FAIL");
	int e = errno;
	if (at_call == SYS_getppid)
		say("tracee: getppid %s\n", r == getppid() ? "gave the parent" : "FAIL");
	else
		say("tracee: result %ld%s%s\n", r, r < 0 ? ", " : "", r < 0 ? err_name(e) : "");
	if (at_kind == BLOCKED)
		sigprocmask(SIG_UNBLOCK, &s, NULL);
	say("tracee done\n");
}

/* The sigat-CALL modes, in --list order (-nohang: WNOHANG, the child running). */
static const struct { long nr; const char *name; } sigat_calls[] = {
	{ SYS_getppid, "getppid" }, { SYS_read, "read" }, { SYS_nanosleep, "nanosleep" }, { SYS_wait4, "wait4" },
	{ SYS_poll, "poll" }, { SYS_select, "select" }, { SYS_waitid, "waitid" }, { SYS_futex, "futex" },
	{ SYS_wait4, "wait4-nohang" }, { SYS_waitid, "waitid-nohang" },
};
#define NSIGAT (sizeof sigat_calls / sizeof sigat_calls[0])

/* The name of the mode's call (and restart_syscall), NULL for others:
 * the tracee's other calls are not shown. */
static const char *call_name(long nr)
{
	if (nr == SYS_restart_syscall)
		return "restart_syscall";
	for (unsigned i = 0; nr == at_call && i < NSIGAT; i++)
		if (sigat_calls[i].nr == nr)
			return sigat_calls[i].name;
	return NULL;
}

/* rax at an exit stop: the result, a kernel-only restart code by name */
static const char *shown_result(long nr, long rax)
{
	static char b[32];
	if (rax == -512 || rax == -513 || rax == -514 || rax == -516)
		return rax == -512 ? "-ERESTARTSYS" : rax == -513 ? "-ERESTARTNOINTR" :
		       rax == -514 ? "-ERESTARTNOHAND" : "-ERESTART_RESTARTBLOCK";
	if (rax < 0 && rax > -4096)
		snprintf(b, sizeof b, "-%s", err_name((int)-rax));
	else if (nr == SYS_getppid || (nr == SYS_wait4 && rax > 0))
		return nr == SYS_getppid ? "the parent" : "the child";
	else
		snprintf(b, sizeof b, "%ld", rax);
	return b;
}

static void sigat_one(int kind)
{
	at_kind = kind;
	say("-- %s\n", kind_names[kind]);
	if (at_call == SYS_read || at_call == SYS_poll || at_call == SYS_select)
		CHECK(pipe(at_pipe) == 0);
	pid_t pid = traced_child(sigat_body, 0);
	int entries = 0, wrote = 0;
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	for (;;) {
		int st, give = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st)) {
			report_end(st);
			break;
		}
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			say("signal stop %s\n", WSTOPSIG(st) == SIGCHLD ? "SIGCHLD" : strsignal(WSTOPSIG(st))); /* (musl names it apart) */
			give = WSTOPSIG(st);
		} else {
			struct user_regs_struct r;
			CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
			const char *name = call_name((long)r.orig_rax);
			int entry = (long)r.rax == -ENOSYS;
			if (name && entry)
				say("entry %s\n", name);
			else if (name)
				say("exit %s: %s\n", name, shown_result((long)r.orig_rax, (long)r.rax));
			if (name && entry && !strcmp(name, call_name(at_call)) && ++entries == 1) {
				CHECK(kill(pid, kind == KILLED ? SIGKILL : SIGUSR1) == 0);
				if (kind == KILLED)
					continue; /* its end is the next report */
				pause_ms(20); /* it has surely come meanwhile */
			} else if (name && entry && at_call == SYS_read && !wrote) {
				CHECK(write(at_pipe[1], "x", 1) == 1); /* the read made again finds a byte */
				wrote = 1;
			}
			if (at_call == SYS_read && kind == BLOCKED && entries == 1 && !wrote) {
				CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
				pause_ms(100); /* the read blocks meanwhile, the signal held */
				CHECK(write(at_pipe[1], "x", 1) == 1);
				wrote = 1;
				continue;
			}
		}
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, give) == 0);
	}
	if (at_call == SYS_read || at_call == SYS_poll || at_call == SYS_select) {
		close(at_pipe[0]);
		close(at_pipe[1]);
	}
}

static void mode_sigat(int nr, int nohang)
{
	at_call = nr;
	at_nohang = nohang;
	for (int k = 0; k < KINDS; k++)
		sigat_one(k);
}

/* --- sleepleft: a traced sleep that a signal with no handler interrupts
 * goes on for the time it had left (natively restart_syscall): a
 * nanosleep, a relative clock_nanosleep and a poll of 600 ms, SIGWINCH
 * (ignored by default) sent 300 ms after its entry stop and passed on
 * by the tracer. */
static void sleepleft_body(void)
{
	for (int i = 0; i < 3; i++) {
		struct timespec t0, t1, ts = { 0, 600 * 1000000L };
		clock_gettime(CLOCK_MONOTONIC, &t0);
		long r = i == 0 ? syscall(SYS_nanosleep, &ts, NULL) :
			 i == 1 ? syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL) :
			 syscall(SYS_poll, NULL, 0, 600);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		say("%s: %ld, %s\n", i == 0 ? "nanosleep" : i == 1 ? "clock_nanosleep" : "poll", r,
		    ms >= 590 && ms < 850 ? "about 600 ms" : ms < 590 ? "too short" : "too long (made again whole)");
	}
}

static void mode_sleepleft(void)
{
	pid_t pid = traced_child(sleepleft_body, 0);
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	for (;;) {
		int st, give = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st)) {
			report_end(st);
			return;
		}
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			give = WSTOPSIG(st);
		} else {
			struct user_regs_struct r;
			CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
			long nr = (long)r.orig_rax;
			if ((long)r.rax == -ENOSYS && (nr == SYS_nanosleep || nr == SYS_clock_nanosleep || nr == SYS_poll)) {
				CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
				pause_ms(300); /* the middle of the sleep */
				CHECK(kill(pid, SIGWINCH) == 0);
				continue;
			}
		}
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, give) == 0);
	}
}

/* --- siginfo: PTRACE_GETSIGINFO at getppid's syscall stops (natively
 * every stop that is not a signal's has one: SIGTRAP, si_code the stop's
 * SIGTRAP | 0x80, si_pid the tracee; gdb's $_siginfo at `catch syscall`)
 * and at a signal-delivery stop. */
static void siginfo_body(void)
{
	signal(SIGUSR1, SIG_IGN);
	syscall(SYS_getppid);
	raise(SIGUSR1);
}

static void mode_siginfo(void)
{
	pid_t pid = traced_child(siginfo_body, 0);
	int n = 0, entry = 0;
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	for (;;) {
		int st, give = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st)) {
			report_end(st);
			return;
		}
		int k = WSTOPSIG(st) == (SIGTRAP | 0x80) ? getppid_stop(pid, &n, &entry) : -1;
		if (k) {
			siginfo_t si;
			memset(&si, 0, sizeof si);
			long r = ptrace(PTRACE_GETSIGINFO, pid, 0, &si);
			if (k > 0)
				say("%s getppid: ", entry ? "entry" : "exit");
			else
				say("signal stop %s: ", strsignal(WSTOPSIG(st)));
			if (r < 0)
				say("no siginfo (errno %d)\n", errno);
			else
				say("si_signo %d, si_code %#x, si_pid %s\n", si.si_signo, si.si_code,
				    si.si_pid == pid ? "the tracee" : si.si_pid ? "another" : "0");
			give = k < 0 ? WSTOPSIG(st) : 0;
		}
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, give) == 0);
	}
}

/* --- sigafter: SIGUSR1 sent just after the tracer resumes its tracee
 * from the entry stop of a poll or a read of an empty pipe, so that it
 * comes before or after the call begins to wait: natively the call is
 * interrupted either way (its exit stop shows ERESTART_RESTARTBLOCK or
 * ERESTARTSYS), then after a handler it gives EINTR, and after an ignored
 * signal it is made again (the poll as restart_syscall) and finds the byte
 * the tracer wrote. Each call and kind 100 times, the signal sent 0 to 49 us after the resumption; every
 * distinct run's stops are shown once. */
static int after_pipe[2];

static void sigafter_body(void)
{
	struct sigaction sa = { .sa_handler = at_kind == HANDLED ? on_usr1_short : SIG_IGN };
	sigaction(SIGUSR1, &sa, NULL);
	struct pollfd pfd = { .fd = after_pipe[0], .events = POLLIN };
	char c;
	long r = at_call == SYS_poll ? syscall(SYS_poll, &pfd, 1, 10000) : syscall(SYS_read, after_pipe[0], &c, 1);
	say("tracee: result %ld%s%s\n", r, r < 0 ? ", " : "", r < 0 ? err_name(errno) : "");
}

/* One run's stops, appended to log (of size n). */
static void sigafter_one(char *log, size_t n, int delay_us)
{
	CHECK(pipe(after_pipe) == 0);
	int out[2];
	CHECK(pipe(out) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK(dup2(out[1], 1) == 1); /* the tracee's words join the log */
		CHECK(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0);
		raise(SIGSTOP);
		sigafter_body();
		_exit(0);
	}
	close(out[1]);
	int st, entries = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st));
	CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD) == 0);
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	size_t k = 0;
	for (;;) {
		int give = 0;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st))
			break;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			k += snprintf(log + k, n - k, "signal stop %s; ", strsignal(WSTOPSIG(st)));
			CHECK(write(after_pipe[1], "x", 1) == 1); /* for a poll made again */
			give = WSTOPSIG(st);
		} else {
			struct user_regs_struct r;
			CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
			long nr = (long)r.orig_rax;
			const char *name = call_name(nr);
			if (name && (long)r.rax == -ENOSYS)
				k += snprintf(log + k, n - k, "entry %s; ", name);
			else if (name)
				k += snprintf(log + k, n - k, "exit %s: %s; ", name, shown_result(nr, (long)r.rax));
			if (name && (long)r.rax == -ENOSYS && nr == at_call && ++entries == 1) {
				CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
				struct timespec t0, t1;
				clock_gettime(CLOCK_MONOTONIC, &t0);
				do /* a spin: where the tracee's resumption takes its time */
					clock_gettime(CLOCK_MONOTONIC, &t1);
				while ((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000 < delay_us);
				CHECK(kill(pid, SIGUSR1) == 0);
				continue;
			}
		}
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, give) == 0);
	}
	char b[256];
	ssize_t m;
	while ((m = read(out[0], b, sizeof b - 1)) > 0) {
		b[m] = 0;
		for (char *p = b; *p; p++)
			if (*p == '\n')
				*p = ';';
		k += snprintf(log + k, n - k, "%s", b);
	}
	close(out[0]);
	close(after_pipe[0]);
	close(after_pipe[1]);
	k += snprintf(log + k, n - k, " %s", WIFEXITED(st) ? "exited" : "killed");
}

static void mode_sigafter(void)
{
	const int kinds[2] = { HANDLED, IGNORED };
	for (int i = 0; i < 4; i++) {
		at_call = i < 2 ? SYS_poll : SYS_read;
		at_kind = kinds[i % 2];
		enum { RUNS = 100, LOG = 512 };
		static char logs[RUNS][LOG];
		int count[RUNS] = { 0 }, distinct = 0;
		for (int j = 0; j < RUNS; j++) {
			char log[LOG];
			sigafter_one(log, sizeof log, j % 50);
			int d = 0;
			while (d < distinct && strcmp(logs[d], log))
				d++;
			if (d == distinct)
				strcpy(logs[distinct++], log);
			count[d]++;
		}
		say("-- %s, %s\n", call_name(at_call), kind_names[at_kind]);
		for (int d = 0; d < distinct; d++)
			say("%d of %d: %s\n", count[d], RUNS, logs[d]);
	}
}

/* --- orphan: the tracer ends while its tracee is at a syscall stop; the
 * tracee goes on untraced */
static int orphan_pipe[2];

static void orphan_body(void)
{
	syscall(SYS_getppid);
	CHECK(write(orphan_pipe[1], "x", 1) == 1); /* (no output: the order against its tracer's end is free) */
}

static void mode_orphan(void)
{
	CHECK(pipe(orphan_pipe) == 0);
	pid_t t = fork();
	CHECK(t >= 0);
	if (t == 0) {
		pid_t pid = traced_child(orphan_body, 0);
		int n = 0, entry = 0;
		for (;;) {
			int st;
			CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
			CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st));
			if (WSTOPSIG(st) == (SIGTRAP | 0x80) && getppid_stop(pid, &n, &entry) == 1 && entry)
				break;
		}
		say("tracer ends at the entry stop\n");
		_exit(0);
	}
	int st;
	CHECK(waitpid(t, &st, 0) == t);
	report_end(st);
	char c;
	CHECK(read(orphan_pipe[0], &c, 1) == 1);
	say("tracee's word came\n");
}

/* --- mixed: waits of a tracer with an ordinary child beside its tracee */
static void mixed_body(void)
{
	for (int i = 0; i < 50; i++)
		syscall(SYS_getppid);
	_exit(5);
}

static void mode_mixed(void)
{
	pid_t pid = traced_child(mixed_body, 0);
	pid_t o = fork();
	CHECK(o >= 0);
	if (o == 0) {
		pause_ms(30);
		_exit(3);
	}
	int st;
	CHECK(waitpid(o, &st, WNOHANG) == 0);
	say("ordinary child running: WNOHANG gives 0\n");
	int stops = 0, ended = 0, o_status = -1, t_status = -1;
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	while (ended < 2) {
		pid_t w = waitpid(-1, &st, 0);
		CHECK(w == pid || w == o);
		if (w == o) {
			o_status = st;
			ended++;
		} else if (WIFSTOPPED(st)) {
			CHECK(WSTOPSIG(st) == (SIGTRAP | 0x80));
			stops++;
			if (stops % 20 == 0)
				pause_ms(2); /* the ordinary child ends now and then between stops */
			CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
		} else {
			t_status = st;
			ended++;
		}
	}
	say("ordinary child: ");
	report_end(o_status);
	say("tracee: ");
	report_end(t_status);
	say("tracee's stops: %s\n", stops >= 100 ? "at least 100" : "too few");
	errno = 0;
	CHECK(waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD);
	say("then ECHILD\n");
}

/* --- vfork: a tracee started as gdb starts one, TRACEME in a vfork child
 * then exec, by a tracer with no other thread (it waits in vfork until
 * the exec), twice: the tracer's end as the child's parent is undone */
static void mode_vfork(void)
{
	for (int round = 1; round <= 2; round++) {
		pid_t pid = vfork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
				_exit(100 + errno);
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st)) {
			report_end(st);
			continue;
		}
		say("round %d: stopped by %s\n", round, strsignal(WSTOPSIG(st)));
		CHECK(ptrace(PTRACE_CONT, pid, 0, round == 1 ? 0 : SIGKILL) == 0);
		CHECK(waitpid(pid, &st, 0) == pid);
		report_end(st);
	}
}

/* --- sigchld: a tracee's first stop announced by SIGCHLD to a tracer
 * that waits for it in sigsuspend, having made no wait before; then
 * tracees' ends waited for while SIGCHLD stays blocked */
static volatile sig_atomic_t chld_count;

static void on_chld(int sig)
{
	(void)sig;
	chld_count++;
}

static void sigchld_body(void)
{
	_exit(4);
}

static void mode_sigchld(void)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	CHECK(sigprocmask(SIG_BLOCK, &block, &old) == 0);
	CHECK(signal(SIGCHLD, on_chld) != SIG_ERR);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0);
		raise(SIGSTOP);
		sigchld_body();
	}
	alarm(10); /* (a SIGCHLD that never comes ends it) */
	while (!chld_count)
		sigsuspend(&old);
	alarm(0);
	int st;
	CHECK(waitpid(pid, &st, WNOHANG) == pid && WIFSTOPPED(st));
	say("SIGCHLD came, then the stop: %s\n", strsignal(WSTOPSIG(st)));
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	report_end(st);
	int ended = 0;
	for (int i = 0; i < 20; i++) {
		pid = traced_child(sigchld_body, 0);
		CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
		CHECK(waitpid(pid, &st, 0) == pid);
		ended += WIFEXITED(st) && WEXITSTATUS(st) == 4;
	}
	say("SIGCHLD blocked: %d of 20 tracees' ends waited for\n", ended);
}

/* --- latechld: a tracer that handles SIGCHLD only after its last wait
 * learns of the tracee's next stop by SIGCHLD all the same */
static int late_pipe[2];

static void latechld_body(void)
{
	char c;
	close(late_pipe[1]);
	while (read(late_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	raise(SIGUSR1);
	_exit(5);
}

static void mode_latechld(void)
{
	CHECK(pipe(late_pipe) == 0);
	pid_t pid = traced_child(latechld_body, 0);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	close(late_pipe[0]);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	CHECK(sigprocmask(SIG_BLOCK, &block, &old) == 0);
	CHECK(signal(SIGCHLD, on_chld) != SIG_ERR);
	CHECK(write(late_pipe[1], "g", 1) == 1);
	alarm(10); /* (a SIGCHLD that never comes ends it) */
	while (!chld_count)
		sigsuspend(&old);
	alarm(0);
	int st;
	pid_t w;
	/* (zvisor's SIGCHLD may, rarely, precede the stop's report: about 1
	 * run in 30 on sud) */
	for (int i = 0; (w = waitpid(pid, &st, WNOHANG)) == 0 && i < 200; i++)
		pause_ms(10);
	CHECK(w == pid && WIFSTOPPED(st));
	say("SIGCHLD came, then the stop: %s\n", strsignal(WSTOPSIG(st)));
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	report_end(st);
}

/* --- stopagain: a SIGSTOP sent to a tracee while it is in a stop is a
 * stop of its own once the tracer resumes it (gdb stops every thread so,
 * and a Go program's thread that sleeps in short naps, as its sysmon does,
 * went on without it) */
static void stopagain_body(void)
{
	struct timespec nap = { 0, 1000000 };
	for (int i = 0; i < 1500; i++)
		nanosleep(&nap, NULL);
	_exit(6);
}

static void mode_stopagain(void)
{
	pid_t pid = traced_child(stopagain_body, 0); /* in its first stop */
	CHECK(kill(pid, SIGSTOP) == 0);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFSTOPPED(st)) {
		report_end(st);
		return;
	}
	say("stopped again: %s\n", strsignal(WSTOPSIG(st)));
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	report_end(st);
}

/* --- stopbusy: a tracer's SIGSTOP to a tracee busy making calls (gdb
 * stops every thread so) is a stop, every time (under sud and seccomp a
 * call's trap pending when it came swallowed it, and the tracee ran on) */
static void stopbusy_body(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* (a failed case's tracer ends: so does this) */
	for (;;)
		syscall(SYS_getppid);
}

static void mode_stopbusy(void)
{
	pid_t pid = traced_child(stopbusy_body, 0); /* in its first stop */
	int n = 300, stopped = 0, st = 0;
	for (int i = 0; i < n; i++) {
		CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
		struct timespec ts = { 0, (i % 50) * 2000L }; /* into its calls at different points */
		nanosleep(&ts, NULL);
		CHECK(syscall(SYS_tgkill, pid, pid, SIGSTOP) == 0);
		int r = 0;
		for (int ms = 0; ms < 3000 && (r = waitpid(pid, &st, WNOHANG)) == 0; ms++)
			pause_ms(1);
		if (r != pid || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGSTOP)
			break;
		stopped++;
	}
	say("%d of %d SIGSTOPs stopped it\n", stopped, n);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	report_end(st);
}

/* --- stopother: SIGSTOPs from a process that is not the tracer (a
 * shell's kill -STOP) to a tracee busy making calls: each a stop its
 * tracer sees, sent by tgkill, tkill and kill, and by tgkill to a traced
 * thread that is not the leader (under sud and seccomp the queued SIGSYS
 * that carries it to the tracee met a call's trap pending and the host
 * dropped it) */
static void *busy_thread(void *arg)
{
	(void)arg;
	stopbusy_body();
	return NULL;
}

static void stopother_threaded_body(void)
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, busy_thread, NULL) == 0);
	stopbusy_body();
}

static void stopother_series(const char *how, int n)
{
	int threaded = !strcmp(how, "tgkill to a thread");
	pid_t pid = traced_child(threaded ? stopother_threaded_body : stopbusy_body, 0); /* in its first stop */
	pid_t tid = pid;
	int cmd[2], ack[2], stopped = 0, st = 0;
	if (threaded) { /* its thread, traced from its start */
		CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE) == 0);
		CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
		CHECK(waitpid(pid, &st, __WALL) == pid && st >> 8 == (SIGTRAP | PTRACE_EVENT_CLONE << 8));
		unsigned long msg;
		CHECK(ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0);
		tid = (pid_t)msg;
		CHECK(waitpid(tid, &st, __WALL) == tid && WIFSTOPPED(st));
		CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	}
	CHECK(pipe(cmd) == 0 && pipe(ack) == 0);
	pid_t sender = fork();
	CHECK(sender >= 0);
	if (sender == 0) {
		char c;
		close(cmd[1]);
		close(ack[0]);
		while (read(cmd[0], &c, 1) == 1) {
			long r = c == 'g' ? syscall(SYS_tgkill, pid, tid, SIGSTOP)
			       : c == 't' ? syscall(SYS_tkill, tid, SIGSTOP) : kill(pid, SIGSTOP);
			c = r == 0 ? 'y' : 'n';
			CHECK(write(ack[1], &c, 1) == 1);
		}
		_exit(0);
	}
	close(cmd[0]);
	close(ack[1]);
	for (int i = 0; i < n; i++) {
		CHECK(ptrace(PTRACE_CONT, tid, 0, 0) == 0);
		struct timespec ts = { 0, (i % 50) * 2000L }; /* into its calls at different points */
		nanosleep(&ts, NULL);
		char c = how[0];
		CHECK(write(cmd[1], &c, 1) == 1 && read(ack[0], &c, 1) == 1 && c == 'y');
		int r = 0;
		for (int ms = 0; ms < 3000 && (r = waitpid(tid, &st, WNOHANG | __WALL)) == 0; ms++)
			pause_ms(1);
		if (r != tid || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGSTOP)
			break;
		stopped++;
	}
	close(cmd[1]);
	CHECK(waitpid(sender, &st, 0) == sender);
	close(ack[0]);
	say("%s: %d of %d SIGSTOPs stopped it\n", how, stopped, n);
	CHECK(kill(pid, SIGKILL) == 0);
	for (int r; (r = waitpid(-1, &st, __WALL)) != pid;) /* (its thread's end first) */
		CHECK(r == tid && tid != pid);
	report_end(st);
}

static void mode_stopother(void)
{
	stopother_series("tgkill", 100);
	stopother_series("tkill", 100);
	stopother_series("kill", 100);
	stopother_series("tgkill to a thread", 100);
}

/* --- seizebusy: a tracer seizes a process busy making calls, stops it,
 * detaches and seizes it again at once, 40 times: each seize quick (the
 * knock queued to its thread was dropped under sud and seccomp for a
 * call's trap pending, and sent again half a second later), and none
 * refused (a seize right after a detach found the thread traced still) */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void mode_seizebusy(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		stopbusy_body();
	int n = 40, slow = 0, st;
	for (int i = 0; i < n; i++) {
		double t0 = now_s();
		CHECK(ptrace(PTRACE_SEIZE, pid, 0, 0) == 0);
		slow += now_s() - t0 >= 0.4;
		CHECK(ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0);
		CHECK(waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st) && st >> 16 == PTRACE_EVENT_STOP);
		CHECK(ptrace(PTRACE_DETACH, pid, 0, 0) == 0);
	}
	if (slow <= 1)
		say("%d seizes of a process busy making calls: at most one slow\n", n);
	else
		say("%d seizes of a process busy making calls: %d took 0.4 s or more\n", n, slow);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	report_end(st);
}

/* --- waitintr: a tracer's waitpid for a running tracee ends with EINTR
 * at a handled signal without SA_RESTART (it was made again for ever) */
static void on_alrm(int sig) { (void)sig; }

static void waitintr_body(void)
{
	for (;;)
		pause();
}

static void mode_waitintr(void)
{
	pid_t pid = traced_child(waitintr_body, 0);
	struct sigaction sa = { .sa_handler = on_alrm };
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	alarm(1);
	int st, r = waitpid(pid, &st, 0);
	say("waitpid of the running tracee: %d, %s\n", r, r < 0 ? strerror(errno) : "no error");
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	report_end(st);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strncmp(m, "sigat-", 6))
		for (unsigned i = 0; i < NSIGAT; i++)
			if (!strcmp(m + 6, sigat_calls[i].name)) {
				mode_sigat(sigat_calls[i].nr, strstr(sigat_calls[i].name, "-nohang") != NULL);
				return 0;
			}
	if (!strcmp(m, "--list")) {
		say("stopsig\nentrysig\n");
		for (unsigned i = 0; i < NSIGAT; i++)
			say("sigat-%s\n", sigat_calls[i].name);
		say("sleepleft\nsiginfo\nsigafter\norphan\nmixed\nvfork\nsigchld\nlatechld\nstopagain\nstopbusy\nwaitintr\nstopother\nseizebusy\n");
	} else if (!strcmp(m, "stopsig"))
		mode_stopsig();
	else if (!strcmp(m, "entrysig"))
		mode_entrysig();
	else if (!strcmp(m, "sleepleft"))
		mode_sleepleft();
	else if (!strcmp(m, "siginfo"))
		mode_siginfo();
	else if (!strcmp(m, "sigafter"))
		mode_sigafter();
	else if (!strcmp(m, "orphan"))
		mode_orphan();
	else if (!strcmp(m, "mixed"))
		mode_mixed();
	else if (!strcmp(m, "vfork"))
		mode_vfork();
	else if (!strcmp(m, "sigchld"))
		mode_sigchld();
	else if (!strcmp(m, "latechld"))
		mode_latechld();
	else if (!strcmp(m, "stopagain"))
		mode_stopagain();
	else if (!strcmp(m, "stopbusy"))
		mode_stopbusy();
	else if (!strcmp(m, "stopother"))
		mode_stopother();
	else if (!strcmp(m, "seizebusy"))
		mode_seizebusy();
	else if (!strcmp(m, "waitintr"))
		mode_waitintr();
	else
		say("usage: ptstops MODE (--list)\n");
	return 0;
}
