/* crheap: the program bench/checkpoint.py checkpoints and restores.
 *   crheap MIB GOFILE [PROCS]
 * Forks PROCS-1 children (default PROCS 1: no child); each process then
 * allocates MIB MiB of its own, fills every page with pseudo-random bytes
 * (touched, non-zero, incompressible, seeded per process, so an image holds
 * every byte of every process), prints "ready", then sleeps in 1 ms naps
 * until GOFILE exists. The bench creates GOFILE just before restoring: the
 * first nap after the restore prints "resumed" (the restore to the first
 * instruction), then one word of every page is read and "read" printed,
 * then that word of every page is written back and "touched" printed (the
 * restore with every page touched), then the page
 * faults the process took until then ("faults N", getrusage's minor and
 * major faults: the restore's in the same process included), then the heap
 * is checked against the checksum taken before the checkpoint: "heap ok" or
 * "heap BAD". The parent waits for its children; exit 0 when every heap is
 * intact, 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t sum(const uint64_t *p, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s = (s + p[i]) * 0x100000001b3ULL;
	return s;
}

static int one(size_t n, uint64_t seed, const char *gofile)
{
	uint64_t *heap = malloc(n * 8);
	if (!heap) {
		perror("malloc");
		return 2;
	}
	uint64_t x = seed;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		heap[i] = x | 1; /* never a zero word */
	}
	uint64_t before = sum(heap, n);
	printf("ready\n");
	struct timespec nap = {0, 1000000L};
	while (access(gofile, F_OK) != 0)
		nanosleep(&nap, NULL);
	printf("resumed\n");
	/* A read of every page (a lazily restored page must arrive), then a
	 * write (a page backed by a private file mapping must be copied). */
	volatile uint64_t *v = heap;
	for (size_t i = 0; i < n; i += 4096 / 8)
		(void)v[i];
	printf("read\n");
	for (size_t i = 0; i < n; i += 4096 / 8)
		v[i] = v[i];
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("touched\n");
	printf("faults %ld\n", ru.ru_minflt + ru.ru_majflt);
	uint64_t after = sum(heap, n);
	printf("heap %s\n", after == before ? "ok" : "BAD");
	return after != before;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: crheap MIB GOFILE [PROCS]\n");
		return 2;
	}
	size_t n = (size_t)atol(argv[1]) << 17; /* 8-byte words */
	int procs = argc == 4 ? atoi(argv[3]) : 1;
	if (procs < 1) {
		fprintf(stderr, "crheap: PROCS must be 1 or more\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	uint64_t seed = 88172645463325252ULL;
	for (int k = 1; k < procs; k++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0)
			return one(n, seed + 0x9e3779b97f4a7c15ULL * (uint64_t)k, argv[2]);
	}
	int bad = one(n, seed, argv[2]);
	int status;
	while (wait(&status) > 0)
		bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	return bad;
}
