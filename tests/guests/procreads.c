/* procreads: /proc/self/{maps,smaps,numa_maps,smaps_rollup} read in every
 * pattern real readers use, in a process of 4000 mappings (each text well
 * over 64 KiB): small and large sequential reads, readv, pread at offsets
 * in any order, lseek back into text already read, a dup sharing the
 * position, and reads after mappings were made or removed in between.
 * Each read is checked against a reference read of the whole file: its
 * bytes, and its count against seq_file's rule (the rest of the record at
 * the offset, then whole records while fewer than asked are there and they
 * fit a 4 KiB buffer), so a native run checks the rule and a run under
 * zvisor the same. Fields that other processes change (Pss and the like,
 * numa_maps' counts) are compared with their digits masked.
 *
 * Modes: patterns; changes; reopen [N] (the stress-ng madvise pattern:
 * open smaps, read 4 KiB, close, N times). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define NMAPS 4000
#define BIG (8 << 20)

static char ref[BIG], got[BIG];
static void *maps[NMAPS];
static int failures, quiet_checks;

enum { MAPS, SMAPS, NUMA, ROLLUP };
static const char *paths[] = { "/proc/self/maps", "/proc/self/smaps", "/proc/self/numa_maps",
			       "/proc/self/smaps_rollup" };
static const char *names[] = { "maps", "smaps", "numa_maps", "smaps_rollup" };

static void make_maps(void)
{
	/* alternate protections, so that neighbours never merge */
	for (int i = 0; i < NMAPS; i++)
		maps[i] = mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
}

static int open_kind(int k)
{
	int fd = open(paths[k], O_RDONLY | O_CLOEXEC);
	if (fd < 0 && k == NUMA)
		return -1; /* no NUMA in this kernel: the same natively and under zvisor */
	if (fd < 0) {
		printf("FAIL open %s\n", paths[k]);
		exit(1);
	}
	return fd;
}

static void mark_volatile(int k, size_t len);

static size_t read_whole(int k, char *buf)
{
	int fd = open_kind(k);
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf + len, BIG - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	if (buf == ref)
		mark_volatile(k, len);
	return len;
}

static int is_header(int k, const char *s)
{
	if (k == NUMA || k == MAPS)
		return 1;
	if (k == ROLLUP)
		return s == ref;
	char *e;
	strtoul(s, &e, 16);
	return e != s && *e == '-';
}

static int record_starts(int k, const char *text, size_t at)
{
	return at == 0 || (k != ROLLUP && text[at - 1] == '\n' && is_header(k, text + at));
}

static size_t record_end(int k, const char *text, size_t len, size_t at)
{
	for (size_t i = at; i < len;)
		if (text[i++] == '\n' && (i == len || record_starts(k, text, i)))
			return i;
	return len;
}

/* What seq_file's read of want bytes at p returns. */
static size_t model(int k, size_t len, size_t p, size_t want)
{
	if (p >= len)
		return 0;
	size_t got_ = 0, count = 0, q = p, buf = 4096;
	if (!record_starts(k, ref, p)) {
		q = record_end(k, ref, len, p);
		if (q - p >= want)
			return want;
		got_ = q - p;
	}
	while (count < want - got_ && q < len) {
		size_t r = record_end(k, ref, len, q) - q;
		if (count && count + r >= buf)
			break;
		count += r;
		q += r;
	}
	return got_ + (count < want - got_ ? count : want - got_);
}

/* Which bytes of the reference other processes change: digits in smaps'
 * and smaps_rollup's fields (Pss, Shared_*), and after '=' in numa_maps
 * (mapmax, N0). */
static char volatile_byte[BIG];

static void mark_volatile(int k, size_t len)
{
	int field = 0, eq = 0;
	for (size_t i = 0; i < len; i++) {
		char c = ref[i];
		if (i == 0 || ref[i - 1] == '\n') {
			field = (k == SMAPS || k == ROLLUP) && i && !(k == SMAPS && is_header(k, ref + i));
			eq = 0;
		}
		if (c == '=')
			eq = 1;
		if (c == ' ')
			eq = 0;
		volatile_byte[i] = (field && (c == ' ' || (c >= '0' && c <= '9'))) || (k == NUMA && eq && c >= '0' && c <= '9');
	}
}

static int same(int k, size_t len, size_t at, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (at + i >= len || (buf[i] != ref[at + i] && !(volatile_byte[at + i] && (buf[i] == ' ' || (buf[i] >= '0' && buf[i] <= '9')))))
			return 0;
	return 1;
}

static void check_as(int k, const char *what, size_t len, size_t p, size_t want, size_t m, ssize_t n,
		     const char *buf)
{
	if (n < 0 || (size_t)n != m || !same(k, len, p, buf, (size_t)n)) {
		if (failures++ < 10 && !quiet_checks)
			printf("FAIL %s %s: at %zu want %zu got %zd, seq_file gives %zu%s\n", names[k], what, p, want, n, m,
			       n >= 0 && (size_t)n == m ? " (bytes differ)" : "");
		if (getenv("PROCREADS_DEBUG") && n > 0) {
			size_t i = 0;
			while (i < (size_t)n && buf[i] == ref[p + i])
				i++;
			size_t from = i > 60 ? i - 60 : 0;
			printf("  ref: %.80s\n  got: %.80s\n", ref + p + from, buf + from);
		}
	}
}

static void check(int k, const char *what, size_t len, size_t p, size_t want, ssize_t n, const char *buf)
{
	check_as(k, what, len, p, want, model(k, len, p, want), n, buf);
}

static const size_t sizes[] = { 1, 7, 100, 1000, 4095, 4096, 4097, 10000, 65536 };
#define NSIZES (sizeof sizes / sizeof *sizes)

static int patterns(int k, int quiet)
{
	size_t len = read_whole(k, ref);
	int fd = open_kind(k);
	if (fd < 0) {
		if (!quiet)
			printf("%s: absent\n", names[k]);
		return 1;
	}
	int before = failures;
	quiet_checks = quiet;
	if (k != ROLLUP && len < 65536)
		printf("FAIL %s: only %zu bytes\n", names[k], len);
	/* sequential reads of every size, then the first 3000 bytes one by one */
	size_t p = 0;
	for (int i = 0; p < len; i++) {
		size_t want = sizes[i % NSIZES];
		ssize_t n = read(fd, got, want);
		check(k, "read", len, p, want, n, got);
		if (n <= 0)
			break;
		p += (size_t)n;
	}
	if (read(fd, got, 100) != 0)
		printf("FAIL %s: no end\n", names[k]);
	lseek(fd, 0, SEEK_SET);
	for (p = 0; p < 3000 && p < len; p++)
		check(k, "read 1", len, p, 1, read(fd, got, 1), got);
	/* readv of three buffers, one empty */
	lseek(fd, 0, SEEK_SET);
	for (p = 0; p < len;) {
		struct iovec v[3] = { { got, 10 }, { got + 10, 0 }, { got + 10, 5000 } };
		ssize_t n = readv(fd, v, 3);
		/* no read_iter: one read per buffer, until a short one */
		size_t first = model(k, len, p, 10), m = first < 10 ? first : 10 + model(k, len, p + 10, 5000);
		check_as(k, "readv", len, p, 5010, m, n, got);
		if (n <= 0)
			break;
		p += (size_t)n;
	}
	/* pread at offsets in any order, then sequential preads */
	unsigned x = 12345;
	for (int i = 0; i < (k == SMAPS ? 40 : 150); i++) {
		x = x * 1103515245 + 12345;
		size_t at = (x >> 8) % (len + 200), want = sizes[(x >> 4) % NSIZES];
		check(k, "pread", len, at, want, pread(fd, got, want, (off_t)at), got);
	}
	for (p = 0; p < len;) {
		ssize_t n = pread(fd, got, 4096, (off_t)p);
		check(k, "pread on", len, p, 4096, n, got);
		if (n <= 0)
			break;
		p += (size_t)n;
	}
	/* lseek back into what was read, and a dup sharing the position */
	lseek(fd, 0, SEEK_SET);
	p = 0;
	for (int i = 0; i < 4; i++) {
		ssize_t n = read(fd, got, 4096);
		check(k, "read before seek", len, p, 4096, n, got);
		p += n > 0 ? (size_t)n : 0;
	}
	for (size_t back = p / 2; back > 0; back /= 3) {
		if (lseek(fd, (off_t)back, SEEK_SET) != (off_t)back)
			printf("FAIL %s: lseek\n", names[k]);
		ssize_t n = read(fd, got, 4096);
		check(k, "read after seek back", len, back, 4096, n, got);
		if (lseek(fd, 0, SEEK_CUR) != (off_t)back + n)
			printf("FAIL %s: position after read\n", names[k]);
	}
	int d = dup(fd);
	lseek(fd, 100, SEEK_SET);
	check(k, "read before dup", len, 100, 50, read(fd, got, 50), got);
	check(k, "read of dup", len, 150, 50, read(d, got, 50), got);
	if (lseek(fd, 0, SEEK_CUR) != 200)
		printf("FAIL %s: shared position\n", names[k]);
	close(d);
	close(fd);
	int clean = failures == before;
	if (quiet)
		failures = before;
	else
		printf("%s: %s\n", names[k], clean ? "every pattern as seq_file" : "differs");
	return clean;
}

static int has_line(int k, const char *text, unsigned long lo)
{
	char key[32];
	snprintf(key, sizeof key, k == NUMA ? "\n%lx " : "\n%lx-", lo);
	return strstr(text, key) != NULL;
}

/* Mappings made and removed between two reads, far past the first 4 KiB:
 * what follows shows them as they are now (seq_file goes on from the
 * address of the next mapping), in address order. */
static void changes(int k)
{
	int fd = open_kind(k);
	if (fd < 0) {
		printf("%s: absent\n", names[k]);
		return;
	}
	size_t len = 0;
	ssize_t n = read(fd, got, 4096);
	len = n > 0 ? (size_t)n : 0;
	int i = NMAPS / 2 + 300 * k, j = i + 100;
	unsigned long gone = (unsigned long)maps[i];
	munmap(maps[i], 4096);
	munmap(maps[j], 4096);
	munmap(maps[j + 1], 4096);
	char *fresh = mmap(maps[j + 1], 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	char key[64];
	snprintf(key, sizeof key, "%lx-%lx r-xp", (unsigned long)fresh, (unsigned long)fresh + 8192);
	while ((n = read(fd, got + len, 4096)) > 0)
		len += (size_t)n;
	got[len] = 0;
	int order = 1;
	unsigned long last = 0;
	for (char *l = got; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		char *e;
		unsigned long lo = strtoul(l, &e, 16);
		if (e == l || *e != (k == NUMA ? ' ' : '-'))
			continue;
		order &= lo > last || !last;
		last = lo;
	}
	printf("%s changed: removed shown %d, new shown %d, in order %d\n", names[k], has_line(k, got, gone),
	       k == NUMA ? has_line(k, got, (unsigned long)fresh) : strstr(got, key) != NULL, order);
	lseek(fd, 0, SEEK_SET);
	for (len = 0; (n = read(fd, got + len, 4096)) > 0;)
		len += (size_t)n;
	got[len] = 0;
	printf("%s again: removed shown %d\n", names[k], has_line(k, got, gone));
	close(fd);
}

/* Other processes running this same file (the suite runs the builds side
 * by side, natively and under each platform) change its numa_maps counts
 * (mapmax) between two reads: the checks run from a copy of our own,
 * removed at exit. Without one (no room in TMPDIR), from the file itself. */
static const char *copy_path;
static void remove_copy(void) { unlink(copy_path); }
static void run_from_own_copy(char **argv)
{
	if ((copy_path = getenv("PROCREADS_COPY"))) {
		atexit(remove_copy);
		return;
	}
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/procreads.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int in = open("/proc/self/exe", O_RDONLY), out = mkstemp(path);
	char buf[65536];
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	int ok = in >= 0 && out >= 0 && n == 0 && fchmod(out, 0700) == 0;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) == 0 && ok && setenv("PROCREADS_COPY", path, 1) == 0)
		execv(path, argv);
	if (out >= 0)
		unlink(path);
	unsetenv("PROCREADS_COPY");
}

int main(int argc, char **argv)
{
	run_from_own_copy(argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("procreads %s\n", argc > 1 ? argv[1] : "");
	memset(ref, 0, sizeof ref);
	memset(got, 0, sizeof got);
	memset(volatile_byte, 0, sizeof volatile_byte);
	make_maps();
	if (argc > 1 && !strcmp(argv[1], "reopen")) {
		int times = argc > 2 ? atoi(argv[2]) : 200, diff = 0;
		size_t len = read_whole(SMAPS, ref), m = model(SMAPS, len, 0, 4096);
		for (int i = 0; i < times; i++) {
			int fd = open_kind(SMAPS);
			ssize_t n = read(fd, got, 4096);
			close(fd);
			diff += n != (ssize_t)m || !same(SMAPS, len, 0, got, m);
		}
		printf("reopen: %d reads of the first 4 KiB, as seq_file: %d\n", times, !diff);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "changes")) {
		for (int k = MAPS; k <= NUMA; k++)
			changes(k);
		return 0;
	}
	/* a first pass faults in the code and data the checks use, so that
	 * the second one's texts stay alike */
	for (int k = MAPS; k <= ROLLUP; k++)
		patterns(k, 1);
	/* numa_maps shows active= and mapmax= only while some of a mapping's
	 * pages are inactive or mapped elsewhere: the host's page aging can
	 * add or drop them between the reference read and a check, moving
	 * where records end. A pass with such a change is taken again from a
	 * fresh reference; every pass still checks every read exactly, and
	 * the last one prints its failures. */
	for (int k = MAPS; k <= ROLLUP; k++) {
		int quiet_tries = k == NUMA ? 2 : 0;
		while (quiet_tries-- > 0)
			if (patterns(k, 1))
				break;
		if (quiet_tries >= 0)
			printf("%s: every pattern as seq_file\n", names[k]);
		else
			patterns(k, 0);
	}
	return failures != 0;
}
