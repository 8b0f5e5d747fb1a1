/* Sleeps, timeouts and timers measured on the guest's own clocks.
 * Each case waits for a nominal time (TIMERS_MS, default 100 ms; alarm: 1 s)
 * and prints "ok" when the elapsed time on CLOCK_MONOTONIC and on
 * CLOCK_REALTIME is within [nominal - 1 ms, 3 x nominal]. Under
 * --time=rate=8 with TIMERS_MS=400, a wait that zvisor forgot to scale
 * lasts 8 x nominal on the guest's clocks and fails, while a scheduling
 * delay of up to 100 ms of real time passes. A case that fails is run
 * once more: a stall of a loaded machine does not come twice, a wait left
 * unscaled fails again.
 *
 *   timers [CASE...]   the cases to run (default: all) */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#define FUTEX_WAIT_PRIVATE 128 /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG (musl has no linux/futex.h) */


static long long now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct timespec rel(long ms) { return (struct timespec){ ms / 1000, (ms % 1000) * 1000000L }; }

static struct timespec abs_in(clockid_t c, long ms)
{
	long long t = now(c) + ms * 1000000LL;
	return (struct timespec){ t / 1000000000LL, t % 1000000000LL };
}

static volatile sig_atomic_t fired;
static void on_alarm(int s) { fired++; }

static void wait_signal(void)
{
	sigset_t none;
	sigemptyset(&none);
	while (!fired)
		sigsuspend(&none);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int futex_word;

static int run(const char *name, long nominal_ms, int last)
{
	long long m0 = now(CLOCK_MONOTONIC), r0 = now(CLOCK_REALTIME);
	int fd, ep, n;
	struct timespec ts;
	struct timeval tv;
	struct itimerspec its = { { 0, 0 }, rel(nominal_ms) };
	fired = 0;
	if (!strcmp(name, "nanosleep")) {
		ts = rel(nominal_ms);
		nanosleep(&ts, NULL);
	} else if (!strcmp(name, "clock_nanosleep")) {
		ts = rel(nominal_ms);
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	} else if (!strcmp(name, "abs_monotonic")) {
		ts = abs_in(CLOCK_MONOTONIC, nominal_ms);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	} else if (!strcmp(name, "abs_realtime")) {
		ts = abs_in(CLOCK_REALTIME, nominal_ms);
		clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
	} else if (!strcmp(name, "select")) {
		tv = (struct timeval){ nominal_ms / 1000, (nominal_ms % 1000) * 1000 };
		select(0, NULL, NULL, NULL, &tv);
		if (tv.tv_sec || tv.tv_usec)
			printf("select: the time left is not written back\n");
	} else if (!strcmp(name, "pselect")) {
		ts = rel(nominal_ms);
		pselect(0, NULL, NULL, NULL, &ts, NULL);
	} else if (!strcmp(name, "poll")) {
		poll(NULL, 0, (int)nominal_ms);
	} else if (!strcmp(name, "ppoll")) {
		ts = rel(nominal_ms);
		ppoll(NULL, 0, &ts, NULL);
	} else if (!strcmp(name, "epoll")) {
		ep = epoll_create1(0);
		struct epoll_event ev;
		epoll_wait(ep, &ev, 1, (int)nominal_ms);
		close(ep);
	} else if (!strcmp(name, "futex")) {
		ts = rel(nominal_ms);
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	} else if (!strcmp(name, "cond_timedwait")) { /* FUTEX_WAIT_BITSET, absolute REALTIME */
		ts = abs_in(CLOCK_REALTIME, nominal_ms);
		pthread_mutex_lock(&mu);
		while (pthread_cond_timedwait(&cv, &mu, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&mu);
	} else if (!strcmp(name, "sem_timedwait")) {
		sem_t s;
		sem_init(&s, 0, 0);
		ts = abs_in(CLOCK_REALTIME, nominal_ms);
		while (sem_timedwait(&s, &ts) != 0 && errno == EINTR)
			;
	} else if (!strcmp(name, "sigtimedwait")) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		ts = rel(nominal_ms);
		sigtimedwait(&set, NULL, &ts);
	} else if (!strcmp(name, "setitimer")) {
		struct itimerval it = { { 0, 0 }, { nominal_ms / 1000, (nominal_ms % 1000) * 1000 } }, cur;
		setitimer(ITIMER_REAL, &it, NULL);
		getitimer(ITIMER_REAL, &cur);
		if (cur.it_value.tv_sec * 1000 + cur.it_value.tv_usec / 1000 > nominal_ms)
			printf("getitimer: more than set\n");
		wait_signal();
	} else if (!strcmp(name, "alarm")) {
		alarm(1);
		unsigned left = alarm(1);
		if (left != 1)
			printf("alarm: %u left\n", left);
		wait_signal();
	} else if (!strcmp(name, "timerfd")) {
		uint64_t exp;
		fd = timerfd_create(CLOCK_MONOTONIC, 0);
		timerfd_settime(fd, 0, &its, NULL);
		read(fd, &exp, sizeof exp);
		close(fd);
	} else if (!strcmp(name, "timerfd_abs")) {
		uint64_t exp;
		fd = timerfd_create(CLOCK_REALTIME, 0);
		its.it_value = abs_in(CLOCK_REALTIME, nominal_ms);
		timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
		struct itimerspec cur;
		timerfd_gettime(fd, &cur);
		if (cur.it_value.tv_sec * 1000 + cur.it_value.tv_nsec / 1000000 > nominal_ms)
			printf("timerfd_gettime: more than set\n");
		read(fd, &exp, sizeof exp);
		close(fd);
	} else if (!strcmp(name, "timer_abs")) {
		timer_t id;
		struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
		timer_create(CLOCK_MONOTONIC, &sev, &id);
		its.it_value = abs_in(CLOCK_MONOTONIC, nominal_ms);
		timer_settime(id, TIMER_ABSTIME, &its, NULL);
		wait_signal();
		timer_delete(id);
	} else {
		printf("%s: unknown case\n", name);
		return 1;
	}
	long long dm = (now(CLOCK_MONOTONIC) - m0) / 1000000, dr = (now(CLOCK_REALTIME) - r0) / 1000000;
	n = dm >= nominal_ms - 1 && dm <= 3 * nominal_ms && dr >= nominal_ms - 1 && dr <= 3 * nominal_ms;
	if (n)
		printf("%s ok\n", name);
	else if (last)
		printf("%s: %lld ms monotonic, %lld ms realtime for %ld ms\n", name, dm, dr, nominal_ms);
	return n;
}

int main(int argc, char **argv)
{
	static const char *const all[] = {
		"nanosleep", "clock_nanosleep", "abs_monotonic", "abs_realtime", "select", "pselect", "poll",
		"ppoll", "epoll", "futex", "cond_timedwait", "sem_timedwait", "sigtimedwait", "setitimer",
		"alarm", "timerfd", "timerfd_abs", "timer_abs",
	};
	const char *env = getenv("TIMERS_MS");
	long nominal = env ? atol(env) : 100;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	int n = argc > 1 ? argc - 1 : (int)(sizeof all / sizeof all[0]);
	for (int i = 0; i < n; i++) {
		const char *c = argc > 1 ? argv[i + 1] : all[i];
		long ms = !strcmp(c, "alarm") ? 1000 : nominal;
		if (!run(c, ms, 0))
			run(c, ms, 1);
	}
	return 0;
}
