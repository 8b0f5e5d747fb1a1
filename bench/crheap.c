/* crheap: the program bench/checkpoint.py checkpoints and restores.
 *   crheap MIB GOFILE
 * Allocates MIB MiB, fills every page with pseudo-random bytes (touched,
 * non-zero, incompressible, so an image holds every byte), prints "ready",
 * then sleeps in 1 ms naps until GOFILE exists. The bench creates GOFILE
 * just before restoring: the first nap after the restore prints "resumed"
 * (the end of the restore's timing), then the heap is checked against the
 * checksum taken before the checkpoint: "heap ok", exit 0, or "heap BAD",
 * exit 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t sum(const uint64_t *p, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s = (s + p[i]) * 0x100000001b3ULL;
	return s;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: crheap MIB GOFILE\n");
		return 2;
	}
	size_t n = (size_t)atol(argv[1]) << 17; /* 8-byte words */
	uint64_t *heap = malloc(n * 8);
	if (!heap) {
		perror("malloc");
		return 2;
	}
	uint64_t x = 88172645463325252ULL;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		heap[i] = x | 1; /* never a zero word */
	}
	uint64_t before = sum(heap, n);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	struct timespec nap = {0, 1000000L};
	while (access(argv[2], F_OK) != 0)
		nanosleep(&nap, NULL);
	printf("resumed\n");
	uint64_t after = sum(heap, n);
	printf("heap %s\n", after == before ? "ok" : "BAD");
	return after != before;
}
