/* cr_threads.c: 16 threads for the checkpoint tests, in futex waits and in
 * computation at any moment. Each round, every worker computes its share
 * (a hash loop whose length depends on its number, so some wait on the
 * round's futex barrier while others still compute), adds it under a
 * mutex, and waits for the next round on a raw FUTEX_WAIT; the main thread
 * prints the round's total. Totals depend only on the round, so the output
 * is the same however the run is cut.
 *   cr_threads [ROUNDS]   default 40; exits 0 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 16
/* <linux/futex.h>'s values: musl-gcc has no kernel headers. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

static atomic_int round_no;     /* futex word: the round workers may run */
static atomic_int arrived;      /* futex word: workers done with this round */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long total;
static unsigned long per_thread[NTHREADS];
static int rounds;

static long futex(atomic_int *w, int op, int val)
{
	return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static unsigned long work(int t, int r)
{
	unsigned long h = 1469598103934665603UL ^ (unsigned long)(t * 131 + r);
	long n = 100000L * (1 + (t * 7 + r) % NTHREADS);
	for (long i = 0; i < n; i++)
		h = (h ^ (unsigned long)i) * 1099511628211UL;
	return h % 100003;
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;
	for (int r = 1; r <= rounds; r++) {
		int cur;
		while ((cur = atomic_load(&round_no)) < r)
			futex(&round_no, FUTEX_WAIT_PRIVATE, cur);
		unsigned long v = work(t, r);
		per_thread[t] += v;
		pthread_mutex_lock(&lock);
		total += v;
		pthread_mutex_unlock(&lock);
		if (atomic_fetch_add(&arrived, 1) + 1 == NTHREADS * r)
			futex(&arrived, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 40;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(long)t);
	for (int r = 1; r <= rounds; r++) {
		atomic_store(&round_no, r);
		futex(&round_no, FUTEX_WAKE_PRIVATE, NTHREADS);
		int a;
		while ((a = atomic_load(&arrived)) < NTHREADS * r)
			futex(&arrived, FUTEX_WAIT_PRIVATE, a);
		pthread_mutex_lock(&lock);
		printf("round %d total %lu\n", r, total);
		pthread_mutex_unlock(&lock);
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	unsigned long check = 0;
	for (int t = 0; t < NTHREADS; t++) {
		pthread_join(th[t], NULL);
		check += per_thread[t];
	}
	printf("threads joined, per-thread sums add up: %s (%lu)\n", check == total ? "yes" : "FAIL", check);
	return 0;
}
