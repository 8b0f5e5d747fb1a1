/* cr_counter.c: a counter for the checkpoint tests (tests/test_checkpoint.py).
 * Prints one line per step, each after a short nanosleep, so that a
 * checkpoint taken at any moment falls between lines or inside a sleep; the
 * lines depend only on the step, so the output is the same however the run
 * is cut. All signals but SIGUSR2 are blocked (the checkpoint request must
 * get through anyway), and SIGUSR2 reaching the guest is a FAIL (zvisor run
 * --checkpoint-on=SIGUSR2 must keep it).
 *   cr_counter [STEPS [MS]]   default 60 steps of 40 ms; exits 7 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void on_usr2(int sig)
{
	static const char m[] = "FAIL: SIGUSR2 reached the guest\n";
	write(1, m, sizeof m - 1);
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 60;
	long ms = argc > 2 ? atol(argv[2]) : 40;
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, SIGUSR2);
	sigprocmask(SIG_BLOCK, &all, NULL);
	signal(SIGUSR2, on_usr2);
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* Some state on the heap and the stack that the lines depend on. */
	unsigned long *heap = calloc(4096, sizeof *heap);
	unsigned long stackv[64];
	memset(stackv, 0, sizeof stackv);
	unsigned long sum = 0;
	for (long i = 1; i <= steps; i++) {
		heap[i % 4096] += i * 2654435761UL;
		stackv[i % 64] ^= heap[i % 4096];
		sum += heap[i % 4096] % 1000 + stackv[i % 64] % 7;
		printf("step %ld sum %lu\n", i, sum);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	printf("done %ld steps, sum %lu\n", steps, sum);
	return 7;
}
