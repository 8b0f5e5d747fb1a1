/* crfill FILE MODE [cold]: what filling restored memory costs, outside
 * zvisor. FILE stands for a checkpoint's pages.bin: it is mapped
 * MAP_PRIVATE as `zvisor restore` maps a placed mapping (docs/CHECKPOINT.md,
 * "Memory mapped from the image"); then, as build/bench/crheap does after a
 * restore, one word of every page is read, then written. MODE says what
 * else happens from the mapping on:
 *   lazy      nothing (zvisor restore today)
 *   populate  a second thread breaks the copy-on-write of every page with
 *             madvise(MADV_POPULATE_WRITE), 2 MiB at a time, from the end
 *             (the reader starts at the front)
 *   idle      the same thread under SCHED_IDLE: only a core no one else
 *             wants runs it
 *   readahead a second thread reads the file into the page cache
 *             (readahead(2), 4 MiB at a time): what a cold image lacks
 *   thp       a second thread copies each 2 MiB into a new anonymous
 *             MADV_HUGEPAGE mapping and moves it over the file mapping
 *             (mremap). A bound, not a method: it races with the writes
 *             (a write between the copy and the move is lost), which a
 *             real filler would have to stop
 *   thpsync   the same before the first read: an eager restore into 2 MiB
 *             pages
 * cold: the file's pages leave the page cache first (POSIX_FADV_DONTNEED).
 * Prints one JSON line: milliseconds from the mapping to the end of the
 * mapping step (start), of the read pass (read), of the write pass
 * (touched) and of the filler (all), the process's page faults (the
 * filler's count too), and its AnonHugePages. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define HP (2UL << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static char *base;
static size_t len;
static int fd;
static const char *mode;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* 2 MiB of anonymous memory aligned to 2 MiB, asked for huge pages. */
static char *huge_chunk(void)
{
	char *t = mmap(NULL, 2 * HP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	char *al = (char *)(((unsigned long)t + HP - 1) & ~(HP - 1));
	if (al > t)
		munmap(t, al - t);
	munmap(al + HP, t + 2 * HP - (al + HP));
	madvise(al, HP, MADV_HUGEPAGE);
	return al;
}

static void *filler(void *arg)
{
	(void)arg;
	if (!strcmp(mode, "idle")) {
		struct sched_param sp = { 0 };
		sched_setscheduler(0, SCHED_IDLE, &sp);
	}
	if (!strcmp(mode, "populate") || !strcmp(mode, "idle")) {
		for (size_t hi = len; hi > 0;) {
			size_t c = hi > HP ? HP : hi;
			hi -= c;
			madvise(base + hi, c, MADV_POPULATE_WRITE);
		}
	} else if (!strcmp(mode, "readahead")) {
		for (size_t o = 0; o < len; o += 2 * HP)
			readahead(fd, (off_t)o, 2 * HP);
	} else if (!strncmp(mode, "thp", 3)) {
		for (size_t o = 0; o + HP <= len; o += HP) {
			char *c = huge_chunk();
			if (!c)
				break;
			memcpy(c, base + o, HP);
			mremap(c, HP, HP, MREMAP_MAYMOVE | MREMAP_FIXED, base + o);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: crfill FILE MODE [cold]\n");
		return 2;
	}
	mode = argv[2];
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	len = (size_t)lseek(fd, 0, SEEK_END) & ~(HP - 1);
	if (argc > 3 && !strcmp(argv[3], "cold"))
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	/* a 2 MiB-aligned place, as a heap's placed mapping mostly is */
	char *r = mmap(NULL, len + HP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r = (char *)(((unsigned long)r + HP - 1) & ~(HP - 1));
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	double t0 = now();
	base = mmap(r, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pthread_t th;
	int bg = strcmp(mode, "lazy") && strcmp(mode, "thpsync");
	if (bg)
		pthread_create(&th, NULL, filler, NULL);
	else if (!strcmp(mode, "thpsync"))
		filler(NULL);
	double t1 = now();
	volatile unsigned long sum = 0;
	for (size_t o = 0; o < len; o += 4096)
		sum += *(volatile unsigned long *)(base + o);
	double t2 = now();
	for (size_t o = 0; o < len; o += 4096)
		*(volatile unsigned long *)(base + o) += 1;
	double t3 = now();
	if (bg)
		pthread_join(th, NULL);
	double t4 = now();
	getrusage(RUSAGE_SELF, &ru1);
	long huge = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "AnonHugePages:", 14))
			huge = atol(line + 14);
	if (f)
		fclose(f);
	printf("{\"mode\": \"%s\", \"start\": %.3f, \"read\": %.3f, \"touched\": %.3f, \"all\": %.3f, "
	       "\"faults\": %ld, \"anon_huge_kb\": %ld}\n",
	       mode, t1 - t0, t2 - t0, t3 - t0, t4 - t0,
	       (ru1.ru_minflt - ru0.ru_minflt) + (ru1.ru_majflt - ru0.ru_majflt), huge);
	return 0;
}
