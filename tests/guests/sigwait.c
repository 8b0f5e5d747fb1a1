/* sigwaitinfo, sigtimedwait and raw rt_sigtimedwait as LTP's sigwaitinfo01,
 * sigtimedwait01 and rt_sigtimedwait01 use them: a helper child sends the
 * signal (SIGUSR1 has a handler, SIGUSR2 is ignored, SIGTERM is
 * left to its default); an empty set is interrupted (EINTR, never restarted), a
 * matching set returns the signal with its siginfo whether it is blocked
 * or not, the handler of a signal taken by the wait never runs, real-time
 * signals come lowest first, an ignored signal neither wakes nor
 * interrupts a wait that times out, and bad pointers give EFAULT or
 * SIGSEGV as natively. Each case has a 10 s alarm: a hang is a failure,
 * not a stuck test. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled[65];

static void handler(int sig) { handled[sig]++; }

static void on_alarm(int sig)
{
	static const char msg[] = "timed out: the wait hung\n";
	write(1, msg, sizeof msg - 1);
	_exit(3);
}

/* a child that sends sig to us count times, every usec */
static pid_t sender(int sig, int count, unsigned usec)
{
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		while (count-- > 0) {
			usleep(usec);
			if (kill(parent, sig))
				break;
		}
		_exit(0);
	}
	return pid;
}

static void reap(pid_t pid, int kill_it)
{
	if (kill_it)
		kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

enum how { WAITINFO, TIMEDWAIT, RAW };
static enum how how;

static long wait_for(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
	long r;
	switch (how) {
	case WAITINFO: r = sigwaitinfo(set, info); break;
	case TIMEDWAIT: r = sigtimedwait(set, info, ts); break;
	default: r = syscall(SYS_rt_sigtimedwait, set, info, ts, 8); break;
	}
	return r < 0 ? -errno : r;
}

static const char *res(long r)
{
	static char buf[32];
	if (r >= 0) {
		snprintf(buf, sizeof buf, "signal %ld", r);
		return buf;
	}
	switch (-r) {
	case EINTR: return "EINTR";
	case EAGAIN: return "EAGAIN";
	case EFAULT: return "EFAULT";
	case EINVAL: return "EINVAL";
	default:
		snprintf(buf, sizeof buf, "errno %ld", -r);
		return buf;
	}
}

static void empty_set(void)
{
	sigset_t s;
	siginfo_t si;
	sigemptyset(&s);
	pid_t c = sender(SIGUSR1, 1000, 100000);
	/* raw: musl's wrappers wait again after EINTR */
	long r = syscall(SYS_rt_sigtimedwait, &s, &si, NULL, 8);
	r = r < 0 ? -errno : r;
	printf("empty set: %s, handler ran %d\n", res(r), handled[SIGUSR1] > 0);
	reap(c, 1);
	handled[SIGUSR1] = 0;
}

static void matching(int sig, int blocked)
{
	sigset_t s, old;
	siginfo_t si;
	memset(&si, 0, sizeof si);
	sigemptyset(&s);
	sigaddset(&s, sig);
	if (blocked) {
		sigaddset(&s, SIGCHLD);
		sigprocmask(SIG_SETMASK, &s, &old);
		sigdelset(&s, SIGCHLD);
	}
	pid_t c = sender(sig, blocked ? 1 : 1000, blocked ? 0 : 100000);
	long r = wait_for(&s, &si, NULL);
	printf("%s signal %d: %s, si_pid is the sender %d, SI_USER %d, handler ran %d\n",
	       blocked ? "blocked" : "unblocked", sig, res(r), si.si_pid == c, si.si_code == SI_USER,
	       handled[sig] > 0);
	handled[sig] = 0;
	if (blocked) {
		sigset_t now;
		sigprocmask(SIG_SETMASK, &old, &now);
		printf("  mask kept: %d\n", sigismember(&now, sig));
	}
	reap(c, 1);
}

static void noinfo(int sig)
{
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigaddset(&s, SIGCHLD);
	sigprocmask(SIG_SETMASK, &s, &old);
	sigdelset(&s, SIGCHLD);
	pid_t c = sender(sig, 1, 0);
	printf("no info pointer: %s\n", res(wait_for(&s, NULL, NULL)));
	sigprocmask(SIG_SETMASK, &old, NULL);
	reap(c, 1);
}

static void realtime(void)
{
	int a = SIGRTMIN + 1, b = SIGRTMIN + 2;
	sigset_t s, old;
	siginfo_t si;
	sigemptyset(&s);
	sigaddset(&s, a);
	sigaddset(&s, b);
	sigaddset(&s, SIGCHLD);
	sigprocmask(SIG_SETMASK, &s, &old);
	sigdelset(&s, SIGCHLD);
	pid_t cb = sender(b, 1, 0);
	reap(cb, 0);
	pid_t ca = sender(a, 1, 0);
	reap(ca, 0);
	long r1 = wait_for(&s, &si, NULL);
	int p1 = si.si_pid == ca;
	long r2 = wait_for(&s, &si, NULL);
	int p2 = si.si_pid == cb;
	printf("real-time: first SIGRTMIN+%ld from its sender %d, then SIGRTMIN+%ld from its sender %d\n",
	       r1 - SIGRTMIN, p1, r2 - SIGRTMIN, p2);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void timeout(int sig)
{
	if (how == WAITINFO)
		return;
	sigset_t s;
	siginfo_t si;
	sigemptyset(&s);
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	pid_t c = sig ? sender(sig, 1000, 100000) : 0;
	printf("empty set, 0.2 s timeout, %s: %s\n", sig ? "ignored SIGUSR2 sent" : "nothing sent",
	       res(wait_for(&s, &si, &ts)));
	if (c)
		reap(c, 1);
}

static void bad_info(void)
{
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGCHLD);
	sigprocmask(SIG_SETMASK, &s, &old);
	sigdelset(&s, SIGCHLD);
	pid_t c = sender(SIGUSR1, 1, 0);
	printf("bad info pointer: %s\n", res(wait_for(&s, (siginfo_t *)1, NULL)));
	sigprocmask(SIG_SETMASK, &old, NULL);
	reap(c, 1);
}

/* in a child: a bad set pointer gives EFAULT or, in the libc, SIGSEGV */
static void bad_set(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		long r = wait_for((sigset_t *)1, NULL, NULL);
		_exit(r == -EFAULT ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("bad set pointer: %s %d\n", WIFEXITED(st) ? "exit" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	if (how != WAITINFO) {
		sigset_t s;
		sigemptyset(&s);
		printf("bad timeout pointer: %s\n", res(wait_for(&s, NULL, (struct timespec *)1)));
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *m = argc > 1 ? argv[1] : "sigwaitinfo";
	how = !strcmp(m, "sigwaitinfo") ? WAITINFO : !strcmp(m, "sigtimedwait") ? TIMEDWAIT : RAW;
	signal(SIGUSR1, handler);
	signal(SIGALRM, on_alarm);
	signal(SIGUSR2, SIG_IGN);
	printf("%s\n", m);
	alarm(10); empty_set();
	alarm(10); matching(SIGUSR1, 0);
	alarm(10); matching(SIGUSR1, 1);
	alarm(10); noinfo(SIGUSR1);
	alarm(10); matching(SIGUSR2, 1);
	alarm(10); matching(SIGTERM, 1);
	alarm(10); realtime();
	alarm(10); timeout(0);
	alarm(10); timeout(SIGUSR2);
	alarm(10); bad_info();
	alarm(10); bad_set();
	alarm(0);
	return 0;
}
