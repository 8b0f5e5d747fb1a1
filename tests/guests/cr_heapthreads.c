/* cr_heapthreads.c: a large heap and threads that keep counting their
 * process's tasks, for the checkpoint's hash thread (tests/test_cr_hash.py).
 * Fills a heap of MIB MiB and a buffer per thread with a pattern, starts
 * NTHREADS threads that count the process's tasks every millisecond (the
 * links of /proc/self/task, less two: stat holds no fd, which a checkpoint
 * would refuse) and keep the fewest and most they saw, says "ready" and
 * waits for SIGUSR1 (the test cuts it meanwhile); then says whether the
 * heap and buffers still hold the pattern and whether every count, and a
 * listing of /proc/self/task, was NTHREADS + 1, says
 * "ready 2", waits again, checks again and exits 0.
 *   cr_heapthreads [MIB [NTHREADS]]   default 48 MiB, 3 threads */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define MAXT 16
static volatile sig_atomic_t go;
static uint64_t *heap, *buf[MAXT];
static size_t heap_words, buf_words = MIB / 4;
static int nthreads;
static atomic_int fewest = 1 << 30, most, counted, stop, started;

static void on_usr1(int sig) { go++; }

static void wait_go(int n)
{
	sigset_t none;
	sigemptyset(&none);
	while (go < n)
		sigsuspend(&none);
}

static uint64_t word(uint64_t seed, size_t i) { return (i + seed) * 0x9e3779b97f4a7c15UL ^ (i >> 7); }

static int tasks_linked(void)
{
	struct stat st;
	return stat("/proc/self/task", &st) ? -1 : (int)st.st_nlink - 2;
}

static int tasks_listed(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void *counter(void *arg)
{
	int t = (int)(long)arg;
	for (size_t i = 0; i < buf_words; i++)
		buf[t][i] = word(t + 1, i);
	while (!atomic_load(&started)) /* every thread made: counts from then on */
		usleep(1000);
	while (!atomic_load(&stop)) {
		int n = tasks_linked(), f;
		while (n < (f = atomic_load(&fewest)) && !atomic_compare_exchange_weak(&fewest, &f, n))
			;
		while (n > (f = atomic_load(&most)) && !atomic_compare_exchange_weak(&most, &f, n))
			;
		atomic_fetch_add(&counted, 1);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void check(const char *when)
{
	size_t bad = 0;
	for (size_t i = 0; i < heap_words; i++)
		bad += heap[i] != word(0, i);
	for (int t = 0; t < nthreads; t++)
		for (size_t i = 0; i < buf_words; i++)
			bad += buf[t][i] != word(t + 1, i);
	printf("%s: heap and buffers: %s\n", when, bad ? "FAIL" : "the pattern");
	int c = atomic_load(&counted);
	while (atomic_load(&counted) < c + 2 * nthreads) /* counted again, after the cut */
		usleep(1000);
	int f = atomic_exchange(&fewest, 1 << 30), m = atomic_exchange(&most, 0), listed = tasks_listed();
	if (f == nthreads + 1 && m == nthreads + 1 && listed == nthreads + 1)
		printf("%s: every count of the tasks: %d\n", when, nthreads + 1);
	else
		printf("%s: FAIL: the tasks counted %d to %d, listed %d, not %d\n", when, f, m, listed, nthreads + 1);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 48;
	nthreads = argc > 2 ? atoi(argv[2]) : 3;
	if (nthreads < 1 || nthreads > MAXT)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL); /* the threads inherit it blocked */
	signal(SIGUSR1, on_usr1);
	heap_words = mib * MIB / 8;
	heap = mmap(NULL, mib * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (heap == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < heap_words; i++)
		heap[i] = word(0, i);
	pthread_t th[MAXT];
	for (int t = 0; t < nthreads; t++) {
		buf[t] = malloc(buf_words * 8);
		pthread_create(&th[t], NULL, counter, (void *)(long)t);
	}
	atomic_store(&started, 1);
	while (atomic_load(&counted) < 2 * nthreads)
		usleep(1000);
	puts("ready");
	wait_go(1);
	check("after the first cut");
	puts("ready 2");
	wait_go(2);
	check("after the second cut");
	atomic_store(&stop, 1);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	puts("done");
	return 0;
}
