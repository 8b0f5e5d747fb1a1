/* cr_lazy.c: memory that a restore maps from its image must stay the
 * anonymous memory it was (tests/test_cr_lazy.py). Fills a heap and a
 * second mapping with a pattern, says "ready" and waits for SIGUSR1 (the
 * test cuts it meanwhile); then checks, each on one line, what anonymous
 * memory does: its bytes, its maps, smaps, numa_maps and smaps_rollup
 * lines, fork (copies apart), MADV_DONTNEED (zeros), MADV_WIPEONFORK
 * (zeros in the child), mremap's growth (zeros); says "ready 2", waits
 * again, checks again (after a second cut) and exits 0.
 *   cr_lazy [MIB]   a heap of MIB MiB (default 32) */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1UL << 20)
static volatile sig_atomic_t go;
static uint64_t *heap, *grown;
static size_t heap_len, grown_len = 2 * MIB;

static void on_usr1(int sig) { go++; }

/* SIGUSR1 is blocked (main) but in sigsuspend, so none comes between the
 * test of go and the wait. */
static void wait_go(int n)
{
	sigset_t none;
	sigemptyset(&none);
	while (go < n)
		sigsuspend(&none);
}

static uint64_t word(size_t i) { return (i + 1) * 0x9e3779b97f4a7c15UL; }

/* The pattern over [from, to) words of p, or the first bad index. */
static long bad_word(const uint64_t *p, size_t from, size_t to, int zeros)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != (zeros ? 0 : word(i)))
			return (long)i;
	return -1;
}

static void fill(uint64_t *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		p[i] = word(i);
}

/* The maps line (or smaps record) of address a in the file. */
static int find_record(const char *file, uintptr_t a, char *out, size_t n)
{
	FILE *f = fopen(file, "r");
	char line[512];
	int in = 0;
	size_t k = 0;
	out[0] = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		int head = sscanf(line, "%lx-%lx ", &lo, &hi) == 2;
		if (!strcmp(file, "/proc/self/numa_maps"))
			head = sscanf(line, "%lx ", &lo) == 1, hi = lo + 1;
		if (head && in)
			break;
		if (head && lo <= a && a < hi)
			in = 1;
		if (in && k + strlen(line) < n) {
			strcpy(out + k, line);
			k += strlen(line);
		}
	}
	if (f)
		fclose(f);
	return in;
}

static long field_kb(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	return p ? atol(p + strlen(key)) : -1;
}

static void check_maps(const char *what)
{
	char rec[4096];
	find_record("/proc/self/maps", (uintptr_t)heap, rec, sizeof rec);
	unsigned long lo, hi, off, ino;
	char perms[8], dev[16], name[256] = "";
	int n = sscanf(rec, "%lx-%lx %7s %lx %15s %lu %255s", &lo, &hi, perms, &off, dev, &ino, name);
	printf("%s maps: %s\n", what, n >= 6 && !off && !strcmp(dev, "00:00") && !ino && !name[0] ? "anonymous" : rec);
	find_record("/proc/self/smaps", (uintptr_t)heap, rec, sizeof rec);
	long rss = field_kb(rec, "\nRss:"), anon = field_kb(rec, "\nAnonymous:"), pc = field_kb(rec, "\nPrivate_Clean:"),
	     sc = field_kb(rec, "\nShared_Clean:");
	if (rss == anon && pc == 0 && sc == 0 && rss >= (long)(heap_len >> 10))
		printf("%s smaps: anonymous, every page resident\n", what);
	else
		printf("FAIL %s smaps: Rss %ld Anonymous %ld Private_Clean %ld Shared_Clean %ld\n", what, rss, anon, pc, sc);
	if (find_record("/proc/self/numa_maps", (uintptr_t)heap, rec, sizeof rec) && strstr(rec, "file="))
		printf("FAIL %s numa_maps: %s", what, rec);
	else
		printf("%s numa_maps: no file\n", what);
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	size_t k = f ? fread(rec, 1, sizeof rec - 1, f) : 0;
	rec[k] = 0;
	if (f)
		fclose(f);
	long ranon = field_kb(rec, "\nAnonymous:"), rpc = field_kb(rec, "\nPrivate_Clean:");
	printf("%s smaps_rollup: %s\n", what,
	       ranon >= (long)(heap_len >> 10) && rpc < (long)(heap_len >> 10) ? "the heap is anonymous" : "FAIL");
}

static void check_bytes(const char *what)
{
	long b = bad_word(heap, 0, heap_len / 8, 0);
	printf("%s heap: %s\n", what, b < 0 ? "the pattern" : "FAIL: a word differs");
	b = bad_word(grown, 0, MIB / 8, 0);
	long z = bad_word(grown, MIB / 8, grown_len / 8, 1);
	printf("%s second mapping: %s\n", what, b < 0 && z < 0 ? "the pattern, then zeros" : "FAIL");
}

static void check_fork(const char *what)
{
	pid_t c = fork();
	if (c == 0) {
		int ok = bad_word(heap, 0, heap_len / 8, 0) < 0;
		memset(heap, 0x5a, heap_len / 2); /* the parent's copy must not see it */
		_exit(ok ? 0 : 3);
	}
	int st;
	waitpid(c, &st, 0);
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && bad_word(heap, 0, heap_len / 8, 0) < 0;
	printf("%s fork: %s\n", what, ok ? "the child saw the pattern, its writes stayed its own" : "FAIL");
}

static void check_madvise(const char *what)
{
	size_t from = heap_len / 8 / 4, to = from + MIB / 8; /* a MiB a quarter in */
	madvise((char *)heap + from * 8, MIB, MADV_DONTNEED);
	long z = bad_word(heap, from, to, 1);
	printf("%s MADV_DONTNEED: %s\n", what, z < 0 ? "zeros" : "FAIL: not zeros");
	fill(heap, from, to);

	from = heap_len / 8 / 2, to = from + MIB / 8;
	if (madvise((char *)heap + from * 8, MIB, MADV_WIPEONFORK) != 0) {
		printf("FAIL %s MADV_WIPEONFORK: %m\n", what);
		return;
	}
	pid_t c = fork();
	if (c == 0)
		_exit(bad_word(heap, from, to, 1) < 0 && bad_word(heap, 0, from, 0) < 0 ? 0 : 3);
	int st;
	waitpid(c, &st, 0);
	madvise((char *)heap + from * 8, MIB, MADV_KEEPONFORK);
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && bad_word(heap, from, to, 0) < 0;
	printf("%s MADV_WIPEONFORK: %s\n", what, ok ? "zeros in the child only" : "FAIL");
}

static void checks(const char *what)
{
	check_bytes(what);
	check_madvise(what);
	check_fork(what);
	check_maps(what);
}

int main(int argc, char **argv)
{
	heap_len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 32) * MIB;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	heap = mmap(NULL, heap_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	grown = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (heap == MAP_FAILED || grown == MAP_FAILED)
		return 1;
	fill(heap, 0, heap_len / 8);
	fill(grown, 0, MIB / 8);
	printf("ready\n");
	wait_go(1);
	/* grown after the cut: the part it gains reads zeros */
	grown = mremap(grown, MIB, grown_len, MREMAP_MAYMOVE);
	if (grown == MAP_FAILED)
		return 1;
	checks("after the first cut:");
	printf("ready 2\n");
	wait_go(2);
	checks("after the second cut:");
	printf("done\n");
	return 0;
}
