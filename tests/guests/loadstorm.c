/* Load the kernel must hold: a signal storm that never lets the
 * program run between signals, many threads signalling each other, and a
 * bounded fork tree. Each mode prints the same lines natively and under
 * zvisor, and must end as natively.
 *   timer [NS] a POSIX timer every NS ns (default 1000) (the host coalesces its
 *              signal and counts overruns); the handler reads the overrun
 *              and, once SIGALRM has said stop, disarms the timer, as
 *              stress-ng --timer does
 *   timer-term a child in that storm with no end is sent SIGTERM (then
 *              SIGINT) and must die of it
 *   threads    64 threads each send SIGUSR1 to the next 2,000 times
 *   overrun    a timer due 30 s ago with a 1 ns interval: its first signal's
 *              handler reads the overrun count, capped at INT_MAX, and
 *              disarms it while the program spins (LTP timer_settime03)
 *   forktree   a binary tree of processes 7 levels below the first (255)
 *              that sum their exit statuses; no fd is left behind */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static timer_t storm_timer;
static volatile sig_atomic_t stop_storm;
static volatile long storm_signals;

static struct timespec storm_start;

/* As stress-ng's handler: the storm may leave the program no time between
 * signals, so the handler itself sees when to stop. */
static void on_storm(int sig)
{
	storm_signals++;
	sigset_t pending;
	sigpending(&pending);
	if ((storm_signals & 1023) == 0) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - storm_start.tv_sec > 3)
			stop_storm = 1;
	}
	if (stop_storm) {
		struct itimerspec off = { 0 };
		timer_settime(storm_timer, 0, &off, NULL);
		return;
	}
	(void)timer_getoverrun(storm_timer);
}

static void on_alarm(int sig) { stop_storm = 1; }

static long storm_ns = 1000;

static void start_storm(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_storm;
	sigaction(SIGRTMIN, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &storm_start);
	struct sigevent sev = { 0 };
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGRTMIN;
	if (timer_create(CLOCK_REALTIME, &sev, &storm_timer)) {
		perror("timer_create");
		exit(1);
	}
	struct itimerspec its = { { 0, storm_ns }, { 0, storm_ns } };
	timer_settime(storm_timer, 0, &its, NULL);
}

static int timer_mode(void)
{
	signal(SIGALRM, on_alarm);
	alarm(1);
	start_storm();
	while (!stop_storm) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	timer_delete(storm_timer);
	printf("timer: stopped after %s\n", storm_signals > 0 ? "signals" : "no signal");
	return 0;
}

static void storm_child_dies_of(int sig)
{
	pid_t pid = fork();
	if (pid == 0) {
		start_storm(); /* never stops */
		for (;;) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	kill(pid, sig);
	int st;
	if (waitpid(pid, &st, 0) != pid) {
		perror("waitpid");
		exit(1);
	}
	printf("timer-term: child %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exited with",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static timer_t overrun_timer;
static volatile int overrun_seen, overrun;

static void on_overrun(int sig)
{
	if (overrun_seen)
		return; /* one more may already be pending */
	overrun = timer_getoverrun(overrun_timer);
	struct itimerspec off = { 0 };
	timer_settime(overrun_timer, 0, &off, NULL);
	overrun_seen = 1;
}

static int overrun_mode(void)
{
	signal(SIGUSR1, on_overrun);
	struct sigevent sev = { 0 };
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	struct timespec res;
	if (timer_create(CLOCK_REALTIME, &sev, &overrun_timer) || clock_getres(CLOCK_REALTIME, &res)) {
		perror("timer");
		return 1;
	}
	struct itimerspec its = { .it_interval = res };
	clock_gettime(CLOCK_REALTIME, &its.it_value);
	its.it_value.tv_sec -= 30;
	timer_settime(overrun_timer, TIMER_ABSTIME, &its, NULL);
	while (!overrun_seen)
		; /* guest code only: the signal must get through */
	printf("overrun: %s\n", overrun == INT_MAX ? "capped at INT_MAX" : "not capped");
	return 0;
}

#define NTHREADS 64
#define SENDS 2000
static pthread_t threads[NTHREADS];
static pid_t tids[NTHREADS];
static volatile int received[NTHREADS];
static __thread int my_index;
static volatile int ready, done_sending;

static void on_usr1(int sig) { __atomic_add_fetch(&received[my_index], 1, __ATOMIC_RELAXED); }

static void *signaller(void *arg)
{
	my_index = (int)(long)arg;
	tids[my_index] = (pid_t)syscall(SYS_gettid);
	__atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) < NTHREADS)
		sched_yield();
	pid_t to = tids[(my_index + 1) % NTHREADS];
	for (int i = 0; i < SENDS; i++)
		syscall(SYS_tgkill, getpid(), to, SIGUSR1);
	__atomic_add_fetch(&done_sending, 1, __ATOMIC_SEQ_CST);
	/* A pending signal is delivered sooner or later: wait for one. */
	while (__atomic_load_n(&received[my_index], __ATOMIC_SEQ_CST) == 0)
		sched_yield();
	return NULL;
}

static int threads_mode(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&threads[i], NULL, signaller, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(threads[i], NULL);
	int all = 1;
	for (int i = 0; i < NTHREADS; i++)
		all &= received[i] > 0 && received[i] <= SENDS;
	printf("threads: %d sent to each, every thread got between 1 and %d: %s\n", SENDS, SENDS,
	       all ? "yes" : "no");
	return 0;
}

static int tree(int depth)
{
	if (depth == 0)
		return 1;
	int sum = 1;
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(tree(depth - 1));
		if (kids[i] < 0) {
			perror("fork");
			_exit(255);
		}
	}
	for (int i = 0; i < 2; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st))
			return 255;
		sum += WEXITSTATUS(st);
	}
	return sum;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int forktree_mode(void)
{
	int before = count_fds();
	int sum = tree(7);
	printf("forktree: %d processes, fds %s\n", sum, count_fds() == before ? "unchanged" : "leaked");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	if (argc > 2)
		storm_ns = atol(argv[2]);
	if (!strcmp(mode, "timer"))
		return timer_mode();
	if (!strcmp(mode, "timer-term")) {
		storm_child_dies_of(SIGTERM);
		storm_child_dies_of(SIGINT);
		return 0;
	}
	if (!strcmp(mode, "threads"))
		return threads_mode();
	if (!strcmp(mode, "overrun"))
		return overrun_mode();
	if (!strcmp(mode, "forktree"))
		return forktree_mode();
	fprintf(stderr, "usage: loadstorm timer|timer-term|overrun|threads|forktree\n");
	return 2;
}
