/* Job control of a traced process, seen by its real parent and its tracer.
 * tests/test_ptrace.py runs it natively and under zvisor.
 *
 *   parent  the parent P forks A; a second child B seizes A (as strace -f
 *           and strace -p do: the stop signal let through, the group stop
 *           left with PTRACE_LISTEN); P sends A SIGSTOP, then SIGCONT, and
 *           waits with WUNTRACED, then WCONTINUED: natively P's waits
 *           report both and P gets CLD_STOPPED and CLD_CONTINUED SIGCHLDs,
 *           the tracer seeing its own stops.
 *   third   the same with the signals from a third process while P waits
 *           already (waitpid, then waitid), its SIGCHLD handler without
 *           SA_RESTART: the waits report the stop and the continue, not
 *           EINTR. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "say.h"

static const char *cld_name(int code)
{
	static const char *const n[] = { "?", "CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED" };
	return code >= 0 && code <= 6 ? n[code] : "?";
}

static void report_end(const char *who, int st)
{
	if (WIFEXITED(st))
		say("%s: exited %d\n", who, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("%s: killed by %s\n", who, strsignal(WTERMSIG(st)));
	else
		say("%s: status %#x\n", who, st);
}

/* The SIGCHLDs that came, in order: si_code, si_status, si_pid. */
static volatile sig_atomic_t nchld;
static volatile int chld[16][3];

static void on_chld(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (nchld < 16) {
		chld[nchld][0] = si->si_code;
		chld[nchld][1] = si->si_status;
		chld[nchld][2] = si->si_pid;
		nchld++;
	}
}

static void catch_chld(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_chld;
	sa.sa_flags = SA_SIGINFO | flags;
	CHECK(sigaction(SIGCHLD, &sa, NULL) == 0);
}

/* Waits (at most 5 s) until n SIGCHLDs came. */
static void await_chld(int n)
{
	for (int i = 0; i < 500 && nchld < n; i++) {
		struct timespec ts = { 0, 10000000L };
		nanosleep(&ts, NULL);
	}
}

static void show_chld(const char *who, int from, pid_t pid)
{
	for (int i = from; i < nchld; i++)
		say("%s: SIGCHLD %s, status %s, %s\n", who, cld_name(chld[i][0]), strsignal(chld[i][1]),
		    chld[i][2] == pid ? "from the child" : "from another");
}

/* B: seizes A and answers its stops as strace does. */
static void tracer(pid_t a, int ready)
{
	catch_chld(SA_RESTART);
	CHECK(ptrace(PTRACE_SEIZE, a, 0, 0) == 0);
	CHECK(write(ready, "s", 1) == 1);
	char log[2048];
	size_t len = 0;
	for (;;) {
		int st;
		pid_t w = waitpid(a, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		CHECK(w == a);
		if (!WIFSTOPPED(st)) {
			report_end("tracer sees the tracee", st);
			break;
		}
		int sig = WSTOPSIG(st), ev = st >> 16;
		if (ev == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP)) {
			len += snprintf(log + len, sizeof log - len, "tracer: group stop %s\n", strsignal(sig));
			CHECK(ptrace(PTRACE_LISTEN, a, 0, 0) == 0);
		} else if (ev == PTRACE_EVENT_STOP) {
			len += snprintf(log + len, sizeof log - len, "tracer: event stop %s\n", strsignal(sig));
			CHECK(ptrace(PTRACE_CONT, a, 0, 0) == 0);
		} else {
			len += snprintf(log + len, sizeof log - len, "tracer: signal stop %s\n", strsignal(sig));
			CHECK(ptrace(PTRACE_CONT, a, 0, sig) == 0);
		}
	}
	CHECK(write(1, log, len) == (ssize_t)len);
	/* Only whether the SIGCHLDs that came are of the kinds its tracee's stops, continue
	 * and end give: which came is timing's (they merge while one is
	 * pending, CLD_CONTINUED with the trap right after it, and zvisor's
	 * may follow the wait that reported the stop). */
	int odd = 0;
	for (int i = 0; i < nchld; i++)
		odd |= chld[i][0] < CLD_EXITED || chld[i][0] > CLD_CONTINUED || chld[i][0] == CLD_KILLED ||
		       chld[i][0] == CLD_DUMPED;
	say("tracer: %s\n", odd ? "a SIGCHLD of another kind came" : "its SIGCHLDs are its tracee's stops' and end's");
	_exit(0);
}

/* Forks A (which waits for go's end and exits 7) and B, its tracer. */
static void start(pid_t *a, pid_t *b, int go[2])
{
	int ready[2];
	CHECK(pipe(go) == 0 && pipe(ready) == 0);
	*a = fork();
	CHECK(*a >= 0);
	if (*a == 0) {
		char c;
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* (Yama's, where it is) */
		close(go[1]);
		CHECK(write(ready[1], "a", 1) == 1);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(7);
	}
	char c;
	CHECK(read(ready[0], &c, 1) == 1);
	*b = fork();
	CHECK(*b >= 0);
	if (*b == 0) {
		close(go[1]);
		tracer(*a, ready[1]);
	}
	CHECK(read(ready[0], &c, 1) == 1);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
}

static void finish(pid_t a, pid_t b, int go[2])
{
	int st;
	close(go[1]);
	pid_t w;
	while ((w = waitpid(b, &st, 0)) < 0 && errno == EINTR) /* (A's end: a handler without SA_RESTART) */
		;
	CHECK(w == b);
	report_end("parent: the tracer", st);
	while ((w = waitpid(a, &st, 0)) < 0 && errno == EINTR)
		;
	CHECK(w == a);
	report_end("parent: the child", st);
}

static void mode_parent(void)
{
	catch_chld(SA_RESTART);
	pid_t a, b;
	int go[2], st;
	start(&a, &b, go);
	CHECK(kill(a, SIGSTOP) == 0);
	CHECK(waitpid(a, &st, WUNTRACED) == a);
	if (WIFSTOPPED(st))
		say("parent: waitpid WUNTRACED: stopped by %s\n", strsignal(WSTOPSIG(st)));
	else
		report_end("parent: waitpid WUNTRACED", st);
	await_chld(1);
	show_chld("parent", 0, a);
	int had = nchld;
	CHECK(waitpid(a, &st, WUNTRACED | WCONTINUED | WNOHANG) == 0);
	say("parent: the stop is reported once\n");
	CHECK(kill(a, SIGCONT) == 0);
	CHECK(waitpid(a, &st, WCONTINUED) == a);
	say("parent: waitpid WCONTINUED: %s\n", WIFCONTINUED(st) ? "continued" : "something else");
	await_chld(had + 1);
	show_chld("parent", had, a);
	CHECK(waitpid(a, &st, WUNTRACED | WCONTINUED | WNOHANG) == 0);
	say("parent: the continue is reported once\n");
	finish(a, b, go);
}

/* C: sends A sig after a while, then ends when *hold is closed (so
 * that its end comes after the wait). */
static pid_t sender(pid_t a, int sig, int *hold)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t c = fork();
	CHECK(c >= 0);
	if (c == 0) {
		char b;
		close(p[1]);
		struct timespec ts = { 0, 200000000L };
		nanosleep(&ts, NULL);
		CHECK(kill(a, sig) == 0);
		while (read(p[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	*hold = p[1];
	return c;
}

/* Reaps C, whose SIGCHLD the handler sees too. */
static void sender_end(pid_t c, int hold)
{
	int st;
	close(hold);
	while (waitpid(c, &st, 0) < 0)
		CHECK(errno == EINTR);
}

static void mode_third(void)
{
	catch_chld(0);
	pid_t a, b;
	int go[2], st, hold;
	start(&a, &b, go);
	pid_t c = sender(a, SIGSTOP, &hold);
	pid_t w = waitpid(a, &st, WUNTRACED);
	if (w < 0)
		say("parent: waitpid WUNTRACED: %s\n", strerror(errno));
	else
		say("parent: waitpid WUNTRACED: %s %s\n", WIFSTOPPED(st) ? "stopped by" : "status",
		    WIFSTOPPED(st) ? strsignal(WSTOPSIG(st)) : "?");
	await_chld(1);
	sender_end(c, hold);
	int had = nchld;
	c = sender(a, SIGCONT, &hold);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, a, &si, WCONTINUED) < 0)
		say("parent: waitid WCONTINUED: %s\n", strerror(errno));
	else
		say("parent: waitid WCONTINUED: %s, status %s, %s\n", cld_name(si.si_code), strsignal(si.si_status),
		    si.si_pid == a ? "the child" : "another");
	await_chld(had + 1);
	sender_end(c, hold);
	/* (the senders' ends came too: only the child's words) */
	for (int i = 0; i < nchld; i++)
		if (chld[i][2] == a)
			say("parent: SIGCHLD %s, status %s\n", cld_name(chld[i][0]), strsignal(chld[i][1]));
	finish(a, b, go);
}

/* --- many: N children, all seized by one tracer, stopped and continued
 * at once by a signal to their group, R times: the parent's waits report
 * every child's stop and continue (each child tells the parent's kernel
 * with a queued SIGSYS; two at once to one process, one was dropped) */
#define MANY 8
#define ROUNDS 20

static void many_tracer(const pid_t *kids, int n, int ready, int done)
{
	for (int i = 0; i < n; i++)
		CHECK(ptrace(PTRACE_SEIZE, kids[i], 0, 0) == 0);
	CHECK(write(ready, "s", 1) == 1);
	for (int ended = 0; ended < n;) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		CHECK(w > 0);
		if (!WIFSTOPPED(st)) {
			ended++;
			continue;
		}
		int sig = WSTOPSIG(st), ev = st >> 16;
		if (ev == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP))
			CHECK(ptrace(PTRACE_LISTEN, w, 0, 0) == 0);
		else if (ev == PTRACE_EVENT_STOP)
			CHECK(ptrace(PTRACE_CONT, w, 0, 0) == 0);
		else
			CHECK(ptrace(PTRACE_CONT, w, 0, sig) == 0);
	}
	(void)done;
	_exit(0);
}

/* How many of the group's n children the parent's waits report with
 * option (WUNTRACED or WCONTINUED) within 5 s. */
static int reported(pid_t pgid, int n, int option)
{
	int got = 0, st;
	for (int ms = 0; ms < 5000 && got < n;) {
		pid_t w = waitpid(-pgid, &st, option | WNOHANG);
		if (w > 0) {
			got += option == WUNTRACED ? WIFSTOPPED(st) : WIFCONTINUED(st);
			continue;
		}
		CHECK(w == 0 || errno == EINTR);
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
		ms++;
	}
	return got;
}

static void mode_many(void)
{
	int go[2], ready[2];
	CHECK(pipe(go) == 0 && pipe(ready) == 0);
	pid_t kids[MANY];
	for (int i = 0; i < MANY; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0);
		if (kids[i] == 0) {
			char c;
			prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
			close(go[1]);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(7);
		}
		CHECK(setpgid(kids[i], kids[0]) == 0);
	}
	pid_t b = fork();
	CHECK(b >= 0);
	if (b == 0) {
		close(go[1]);
		many_tracer(kids, MANY, ready[1], go[0]);
	}
	char c;
	CHECK(read(ready[0], &c, 1) == 1);
	int stops = 0, conts = 0;
	for (int r = 0; r < ROUNDS; r++) {
		CHECK(kill(-kids[0], SIGSTOP) == 0);
		stops += reported(kids[0], MANY, WUNTRACED);
		CHECK(kill(-kids[0], SIGCONT) == 0);
		conts += reported(kids[0], MANY, WCONTINUED);
	}
	say("parent: %d of %d stops reported, %d of %d continues\n", stops, MANY * ROUNDS, conts, MANY * ROUNDS);
	close(go[1]);
	int st, exited = 0;
	for (int i = 0; i < MANY; i++) {
		while (waitpid(kids[i], &st, 0) < 0)
			CHECK(errno == EINTR);
		exited += WIFEXITED(st) && WEXITSTATUS(st) == 7;
	}
	while (waitpid(b, &st, 0) < 0)
		CHECK(errno == EINTR);
	say("parent: %d children exited 7, the tracer %d\n", exited, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	alarm(60);
	if (!strcmp(m, "--list"))
		say("parent\nthird\nmany\n");
	else if (!strcmp(m, "parent"))
		mode_parent();
	else if (!strcmp(m, "third"))
		mode_third();
	else if (!strcmp(m, "many"))
		mode_many();
	else
		say("usage: ptjob MODE (--list)\n");
	return 0;
}
