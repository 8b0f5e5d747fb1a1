/* cr_sleepers.c: waits with timeouts for the checkpoint tests: nanosleep,
 * select on a pipe that never becomes readable, and epoll_wait on it, each
 * timed with CLOCK_MONOTONIC. A checkpoint taken inside a wait must let it
 * continue after the restore with the time it had left (the gap between
 * checkpoint and restore hidden by the virtual clock), so what each wait
 * measured, rounded to 500 ms, is the same as in a run never cut (a
 * loaded machine's freeze may take 250 ms; a wait made again whole, or
 * one that lost its time left, is off by more).
 *   cr_sleepers [ROUNDS [MS]]   default 2 rounds of 1000 ms waits; exits 0 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What a wait measured, to the nearest 500 ms. */
static void report(int round, const char *what, long ms, long rc)
{
	long q = (ms + 250) / 500 * 500;
	printf("round %d %s returned %ld after ~%ld ms\n", round, what, rc, q);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2;
	long ms = argc > 2 ? atol(argv[2]) : 1000;
	setvbuf(stdout, NULL, _IOLBF, 0);
	int p[2];
	if (pipe(p) != 0) {
		perror("pipe");
		return 1;
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 42};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0) {
		perror("epoll");
		return 1;
	}
	printf("waiting %d rounds of %ld ms\n", rounds, ms);
	for (int r = 1; r <= rounds; r++) {
		long t0 = now_ms();
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		long rc = nanosleep(&ts, NULL);
		report(r, "nanosleep", now_ms() - t0, rc);

		t0 = now_ms();
		fd_set rd;
		FD_ZERO(&rd);
		FD_SET(p[0], &rd);
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		rc = select(p[0] + 1, &rd, NULL, NULL, &tv);
		report(r, "select", now_ms() - t0, rc);

		t0 = now_ms();
		rc = epoll_wait(ep, &ev, 1, (int)ms);
		report(r, "epoll_wait", now_ms() - t0, rc);
	}
	/* The pipe still works: the restored one is the same pipe. */
	write(p[1], "x", 1);
	char c = 0;
	long rc = epoll_wait(ep, &ev, 1, 1000);
	long n = read(p[0], &c, 1);
	printf("pipe readable: %ld (data %u), read %ld '%c'\n", rc, ev.data.u32, n, c);
	return 0;
}
