/* The program tests/test_coredump.py lets die by a signal that dumps core,
 * natively and inside zvisor, and whose core gdb then reads: the backtrace
 * must name this program's functions, where the signal was taken. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int spinning;

/* Loops in a function of its own, where a signal from outside finds it. */
__attribute__((noinline)) void spin_here(void)
{
	for (;;)
		spinning++;
}

/* abort() or raise(SIGQUIT), two calls below main. */
__attribute__((noinline)) void inner(const char *how)
{
	if (!strcmp(how, "abort"))
		abort();
	raise(SIGQUIT);
}

__attribute__((noinline)) void outer(const char *how)
{
	inner(how);
}

static void *worker(void *arg)
{
	spin_here();
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "--list")) {
		puts("abort\nquit\nspin\nthreads");
		return 0;
	}
	if (!strcmp(mode, "spin")) {
		puts("spinning"); /* the test sends its signal when it reads this */
		fflush(stdout);
		spin_here();
	}
	if (!strcmp(mode, "threads")) {
		/* The worker spins in spin_here when main aborts: the core
		 * shows both threads where they were. */
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
		while (spinning < 1000)
			;
		outer("abort");
	}
	if (!strcmp(mode, "abort") || !strcmp(mode, "quit"))
		outer(mode);
	fprintf(stderr, "usage: coredump abort|quit|spin|threads\n");
	return 2;
}
