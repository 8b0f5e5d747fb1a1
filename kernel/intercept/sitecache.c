/* What the stubs platform learned about a file's code, kept per file in the
 * user's cache directory (intercept/cachedir.c), so
 * that the next exec of the same program maps its windows without decoding
 * a function (DESIGN "The site cache and shared text").
 *
 * An entry is keyed by the file's identity (device, inode, size, mtime and
 * ctime to the nanosecond: any write or rename over it changes them) and
 * the part of the file mapped; it lists the windows as file offsets, and the
 * syscall byte pairs the decode found inside other instructions, and how
 * many other pairs intercept/sudoff.c found once the windows were made. It is
 * never trusted beyond that: each window must still hold a `syscall` at its
 * end, or the entry is dropped. Entries are written to a temporary name and
 * renamed, so concurrent writers leave one whole entry; a damaged entry is
 * removed with one line on stderr; a full disk or an unwritable directory
 * only means no cache. --no-cache turns it off. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/fdlist.h"
#include "intercept/sitecache.h"
#include "intercept/stubs.h"
#include "sys/execstate.h"
#include <asm/stat.h>
#include <linux/fcntl.h>
#include <linux/mman.h>

#define MAGIC (0x364e49575a56ULL ^ ZV_ANALYSIS_VERSION << 48) /* "ZVWIN6", the analysis' version */
#define MAX_ENTRY_WINDOWS 16384 /* windows, then the pairs proven inside instructions */
#define INSIDE (~0UL)           /* a rec's d for such a pair, at p == s */

#define key zv_cache_key
struct header {
	struct key key;
	uint64_t n, sum; /* windows, and a checksum of them */
	uint64_t verdict; /* intercept/sudoff.c's count once every window is made; ~0: unknown */
};
struct rec { uint64_t p, s, d; }; /* file offsets of [p, s] and the trampoline (0: none) */

static uint64_t cap_bytes = ZV_CACHE_DEFAULT_CAP;

uint64_t zv_sitecache_cap(void) { return cap_bytes; }

static uint64_t fnv(const void *v, size_t n, uint64_t h)
{
	const uint8_t *p = v;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* ZVISOR_CACHE_MAX: the directory's bound in MiB (0: no shared copies). */
static void cap_of(const char *v)
{
	unsigned long mib;
	if (zv_parse_ulong(v, &mib) == 0 && mib < (1UL << 30))
		cap_bytes = mib << 20;
}

void zv_sitecache_init(char **envp, int warn)
{
	const char *xdg = NULL, *home = NULL, *runtime = NULL;
	cap_bytes = ZV_CACHE_DEFAULT_CAP;
	for (; *envp; envp++) {
		if (zv_startswith(*envp, "XDG_CACHE_HOME=/"))
			xdg = *envp + 15;
		else if (zv_startswith(*envp, "HOME=/"))
			home = *envp + 5;
		else if (zv_startswith(*envp, "XDG_RUNTIME_DIR=/"))
			runtime = *envp + 16;
		else if (zv_startswith(*envp, "ZVISOR_CACHE_MAX="))
			cap_of(*envp + 17);
	}
	zv_cachedir_init(xdg, home, runtime, zv_proc.no_cache, warn); /* intercept/cachedir.c */
	if (zv_proc.tree_fd >= 0) { /* what the exec'ing image knew */
		zv_treecache_load(zv_proc.tree_fd);
		zv_proc.tree_fd = -1;
	}
}

int zv_sitecache_key(int fd, struct zv_stub_batch *b, uint64_t magic, uint64_t off, uint64_t len,
		     struct zv_cache_key *k)
{
	struct stat st;
	uint64_t mine[7], *id = b ? b->ident : mine;
	if (!b || !b->has_ident) {
		if (zv_sys2(__NR_fstat, fd, &st) != 0)
			return 0;
		uint64_t now[7] = { st.st_dev, st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtime, st.st_mtime_nsec,
				    (uint64_t)st.st_ctime, st.st_ctime_nsec };
		memcpy(id, now, sizeof now);
		if (b)
			b->has_ident = 1;
	}
	*k = (struct key){ magic, id[0], id[1], id[2], id[3], id[4], id[5], id[6], off, len };
	return 1;
}

static int key_of(int fd, struct zv_stub_batch *b, uint64_t off, uint64_t len, struct key *k)
{
	return zv_sitecache_key(fd, b, MAGIC, off, len, k);
}

void zv_sitecache_path(const struct zv_cache_key *k, const char *ext, char *out, size_t n)
{
	zv_snprintf(out, n, "%s/%016lx.%s", zv_sitecache_dir(), fnv(k, sizeof *k, 0xcbf29ce484222325ULL), ext);
}

static void path_of(const struct key *k, char *out, size_t n)
{
	zv_sitecache_path(k, "win", out, n);
}

/* Code that is no file's (the host's vDSO, the same bytes in every process
 * of a boot): keyed by its size and a hash of its bytes, a word at a time
 * (byte-wise FNV would cost a fifth of the decode it saves). No device is ~0. */
uint64_t zv_sitecache_hash(const uint8_t *base, uint64_t size)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL, w;
	for (uint64_t i = 0; i + 8 <= size; i += 8) {
		__builtin_memcpy(&w, base + i, 8); /* one load: a memcpy call per word cost as much as the hash */
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	return h;
}

static int key_of_bytes(uint64_t hash, uint64_t size, struct key *k)
{
	*k = (struct key){ MAGIC, ~0UL, hash, size, 0, 0, 0, 0, 0, size };
	return 1;
}

/* The mtime a cache file of key k is given when it is made, from its own
 * device and inode: any write since (the host sets mtime to the time of
 * the write) or a copy of it made elsewhere (another inode) shows. */
struct ts { long s, ns; };
static void marker(const struct stat *st, const struct zv_cache_key *k, struct ts ts[2])
{
	uint64_t h = fnv(k, sizeof *k, 0xcbf29ce484222325ULL);
	h = fnv(&st->st_dev, sizeof st->st_dev, h);
	h = fnv(&st->st_ino, sizeof st->st_ino, h);
	ts[0].s = 0;
	ts[0].ns = (1L << 30) - 2; /* UTIME_OMIT: the access time stays (the bound's LRU) */
	ts[1].s = 1000000000L + (long)(h % 1000000000UL);
	ts[1].ns = (long)((h >> 32) % 1000000000UL);
}

int zv_sitecache_marked(const struct stat *st, const struct zv_cache_key *k)
{
	struct ts ts[2];
	marker(st, k, ts);
	return (long)st->st_mtime == ts[1].s && (long)st->st_mtime_nsec == ts[1].ns;
}

void zv_sitecache_mark(long fd, const struct zv_cache_key *k)
{
	struct stat st;
	struct ts ts[2];
	if (zv_sys2(__NR_fstat, fd, &st) != 0)
		return;
	marker(&st, k, ts);
	zv_sys4(__NR_utimensat, fd, NULL, ts, 0);
}

void zv_sitecache_drop(const char *path, const char *why)
{
	if (zv_sys3(__NR_unlinkat, AT_FDCWD, path, 0) == 0) /* not one already gone */
		zv_dprintf(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2, "zvisor: ignoring the damaged cache file %s (%s)\n",
			   path, why);
}

/* An entry's records: from its file (read a chunk at a time: one host
 * call, not one per window) or from memory (intercept/treecache.c). */
struct source {
	long fd;
	const struct rec *mem;
	uint64_t nmem;
	struct rec chunk[128];
};

static const struct rec *rec_at(struct source *src, uint64_t i, uint64_t n)
{
	if (src->mem)
		return i < src->nmem ? &src->mem[i] : NULL;
	uint64_t per = sizeof src->chunk / sizeof src->chunk[0], ci = i % per;
	if (ci == 0) {
		uint64_t want = n - i < per ? n - i : per;
		if (zv_sys4(__NR_pread64, src->fd, src->chunk, want * sizeof src->chunk[0],
			    sizeof(struct header) + i * sizeof src->chunk[0]) != (long)(want * sizeof src->chunk[0]))
			return NULL;
	}
	return &src->chunk[ci];
}

/* b from the entry of key k whose header is h: NULL, or why not (NULL in
 * *why too if it is another file's with the same hash: not damage). */
static int parse(const struct key *kp, const struct header *h, struct source *src, uint64_t addr,
		 struct zv_stub_batch *b, const char **why)
{
	const struct key k = *kp;
	const uint64_t off = k.off, len = k.len;
	*why = "short";
	if (memcmp(&h->key, &k, sizeof k) != 0) {
		*why = NULL;
		return 0;
	}
	if (h->n > MAX_ENTRY_WINDOWS) {
		*why = "too many windows";
		return 0;
	}
	uint64_t sum = 0xcbf29ce484222325ULL;
	int ok = 1;
	b->n = b->ninside = 0;
	for (uint64_t i = 0; i < h->n && ok; i++) {
		const struct rec *rp = rec_at(src, i, h->n);
		if (!(ok = rp != NULL))
			break;
		const struct rec r = *rp;
		if (r.d == INSIDE) {
			/* no sum that can wrap: r is untrusted */
			ok = r.p == r.s && r.p >= off && len >= 2 && r.p - off <= len - 2 && k.size >= 2 &&
			     r.p <= k.size - 2 && b->ninside < b->maxinside;
			if (ok) {
				sum = fnv(&r, sizeof r, sum);
				b->inside[b->ninside++] = addr + (r.p - off);
			}
			continue;
		}
		ok = b->n < b->max &&
		     (r.d ? r.p == r.s && r.d >= off && r.d + 5 <= off + len && r.d + 128 >= r.s + 2 && r.d <= r.s + 2 + 127
			  : r.p < r.s) &&
		     r.s - r.p <= ZV_STUB_MAX_MOVED && r.p >= off && r.s + 2 <= off + len &&
		     r.s + 2 <= k.size; /* never read past the file's end */
		if (!ok)
			break;
		sum = fnv(&r, sizeof r, sum);
		struct zv_stub_window *w = &b->w[b->n++];
		w->p = addr + (r.p - off);
		w->s = addr + (r.s - off);
		w->d = r.d ? addr + (r.d - off) : 0;
	}
	if (ok && fnv(&h->verdict, sizeof h->verdict, sum) != h->sum)
		ok = 0;
	if (ok)
		b->verdict = h->verdict == ~0UL || h->verdict > (1UL << 40) ? -1 : (long)h->verdict;
	else
		b->n = b->ninside = 0;
	*why = "windows do not match the file";
	return ok;
}

/* An entry of a file's code without windows, for the rest of the tree
 * (intercept/sitememo.c): small, and no copy can exist. */
#define MEMO_RECS 16
struct small_entry {
	struct header h;
	struct rec r[MEMO_RECS];
};
static size_t entry_of(const struct key *k, uint64_t addr, const struct zv_stub_batch *b, struct header *e);
static void share(const struct key *k, uint64_t addr, const struct zv_stub_batch *b)
{
	struct small_entry e;
	size_t n;
	if (b->n == 0 && b->ninside <= MEMO_RECS && b->verdict >= 0 && k->dev != ~0UL && zv_sitememo_on() &&
	    (n = entry_of(k, addr, b, &e.h)) != 0)
		zv_sitememo_add(&e, n, sizeof *k);
}

int zv_sitecache_lookup_known(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, struct zv_stub_batch *b)
{
	struct key k;
	struct small_entry e;
	size_t n;
	const char *why;
	if (!(prot & PROT_READ) || !zv_sitememo_on() || !zv_sitecache_dir()[0] || !key_of(fd, b, off, len, &k) ||
	    (n = zv_sitememo_find(&k, sizeof k, &e, sizeof e)) < sizeof e.h)
		return 0;
	struct source src = { .fd = -1, .mem = e.r, .nmem = (n - sizeof e.h) / sizeof(struct rec) };
	if (parse(&k, &e.h, &src, addr, b, &why) && b->n == 0)
		return 1;
	b->n = b->ninside = 0;
	return 0;
}

static int lookup(const struct key *k, uint64_t addr, struct zv_stub_batch *b)
{
	const char *why;
	struct source src = { .fd = -1 };
	if (!zv_sitecache_dir()[0]) { /* none: what the process tree knows */
		size_t n;
		const struct header *h = zv_treecache_find(k, sizeof *k, &n);
		if (!h || n < sizeof *h)
			return 0;
		src.mem = (const struct rec *)(h + 1);
		src.nmem = (n - sizeof *h) / sizeof(struct rec);
		return parse(k, h, &src, addr, b, &why);
	}
	char path[300];
	path_of(k, path, sizeof path);
	src.fd = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (src.fd < 0)
		return 0;
	struct header h;
	struct stat st;
	int ok = 0;
	why = "short";
	if (zv_sys2(__NR_fstat, src.fd, &st) != 0 || !zv_sitecache_marked(&st, k))
		why = "written since it was made"; /* or another's copy: its windows are not trusted */
	else if (zv_sys4(__NR_pread64, src.fd, &h, sizeof h, 0) == sizeof h)
		ok = parse(k, &h, &src, addr, b, &why);
	zv_fdlist_close(zv_load_fds, (int)src.fd, (int)src.fd); /* a load's: with its other files */
	if (!ok && why)
		zv_sitecache_drop(path, why);
	if (ok)
		share(k, addr, b);
	return ok;
}

int zv_sitecache_lookup(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, struct zv_stub_batch *b)
{
	struct key k;
	return (prot & PROT_READ) && key_of(fd, b, off, len, &k) && lookup(&k, addr, b);
}

/* Whether the code still holds b's windows and pairs; copies each window's
 * moved bytes into b. */
static int check(struct zv_stub_batch *b)
{
	int ok = 1;
	for (int i = 0; i < b->n && ok; i++) {
		struct zv_stub_window *w = &b->w[i];
		ok = ((const uint8_t *)w->s)[0] == 0x0f && ((const uint8_t *)w->s)[1] == 0x05;
		memcpy(w->code, (const uint8_t *)w->p, w->s - w->p);
		if (w->d) /* the padding a trampoline takes */
			memcpy(w->code, (const uint8_t *)w->d, 5);
	}
	for (int i = 0; i < b->ninside && ok; i++)
		ok = zv_stubs_is_call_pair((const uint8_t *)b->inside[i]);
	if (!ok)
		b->n = b->ninside = 0;
	return ok;
}

static void drop_key(const struct key *k)
{
	char path[300];
	if (!zv_sitecache_dir()[0]) {
		zv_treecache_drop(k, sizeof *k);
		return;
	}
	zv_sitememo_drop(k, sizeof *k);
	path_of(k, path, sizeof path);
	zv_sitecache_drop(path, "windows do not match the file");
}

int zv_sitecache_check(int fd, uint64_t off, uint64_t len, struct zv_stub_batch *b)
{
	struct key k;
	if (check(b))
		return 1;
	if (key_of(fd, b, off, len, &k))
		drop_key(&k);
	return 0;
}

/* The vDSO's entry as this image used or stored it, carried to the next
 * image in the exec state ("w="), which then reads no cache file: the
 * vDSO is the same bytes in every process of a boot. Trusted no more than
 * a file: the same hash and size, and check()'s test of every window. */
#define CARRIED_MAX 24
static struct {
	uint64_t hash, size, verdict; /* verdict as in the header: ~0 unknown */
	int n;                        /* 0: nothing carried */
	struct rec r[CARRIED_MAX];    /* offsets in the vDSO */
} carried;

static void carry(uint64_t hash, uint64_t base, uint64_t size, const struct zv_stub_batch *b)
{
	carried.n = 0;
	if (!b->n || b->n + b->ninside > CARRIED_MAX)
		return;
	for (int i = 0; i < b->n; i++)
		carried.r[i] = (struct rec){ b->w[i].p - base, b->w[i].s - base, b->w[i].d ? b->w[i].d - base : 0 };
	for (int i = 0; i < b->ninside; i++)
		carried.r[b->n + i] = (struct rec){ b->inside[i] - base, b->inside[i] - base, INSIDE };
	carried.hash = hash;
	carried.size = size;
	carried.verdict = b->verdict < 0 ? ~0UL : (uint64_t)b->verdict;
	carried.n = b->n + b->ninside;
}

/* b from the carried entry, its offsets checked as lookup() checks a file's. */
static int from_carried(uint64_t hash, uint64_t base, uint64_t size, struct zv_stub_batch *b)
{
	if (!carried.n || carried.hash != hash || carried.size != size)
		return 0;
	b->n = b->ninside = 0;
	for (int i = 0; i < carried.n; i++) {
		const struct rec r = carried.r[i];
		int ok = r.s < size && size - r.s >= 2 && r.p <= r.s && r.s - r.p <= ZV_STUB_MAX_MOVED;
		if (ok && r.d == INSIDE) {
			ok = r.p == r.s && b->ninside < b->maxinside;
			if (ok)
				b->inside[b->ninside++] = base + r.p;
		} else if (ok) {
			ok = b->n < b->max && (r.d ? r.p == r.s && r.d < size && size - r.d >= 5 : r.p < r.s);
			if (ok)
				b->w[b->n++] = (struct zv_stub_window){ .p = base + r.p, .s = base + r.s, .d = r.d ? base + r.d : 0 };
		}
		if (!ok) {
			b->n = b->ninside = 0;
			return 0;
		}
	}
	b->verdict = carried.verdict > (1UL << 40) ? -1 : (long)carried.verdict;
	return 1;
}

int zv_sitecache_lookup_bytes(uint64_t hash, const uint8_t *base, uint64_t size, struct zv_stub_batch *b)
{
	struct key k;
	if (!key_of_bytes(hash, size, &k))
		return 0;
	if (from_carried(hash, (uint64_t)base, size, b)) {
		if (check(b))
			return 1;
		carried.n = 0; /* then the file, as if nothing was carried */
	}
	if (!lookup(&k, (uint64_t)base, b))
		return 0;
	if (check(b)) {
		carry(hash, (uint64_t)base, size, b);
		return 1;
	}
	drop_key(&k);
	return 0;
}

long zv_sitecache_create(const char *tmp)
{
	long cfd = zv_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (cfd == -ENOENT && zv_sitecache_make_dir())
		cfd = zv_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	return cfd;
}

int zv_sitecache_encode_vdso(char *buf, size_t n, const struct zv_exec_carry *x)
{
	(void)x;
	/* without a cache directory, what this tree knows, in a memfd that
	 * the new image reads (sys/exec.c closes it if the exec fails); with
	 * nothing known, the directory is not looked for (on a platform that
	 * never used it, after a chroot, it would be the wrong one) */
	zv_proc.tree_fd = zv_treecache_empty() || zv_sitecache_dir()[0] ? -1 : zv_treecache_save();
	if (!carried.n && zv_proc.tree_fd < 0)
		return -1;
	size_t k = 0;
	if (carried.n)
		k = (size_t)zv_snprintf(buf, n, "%lx.%lx.%lx.%x", carried.hash, carried.size, carried.verdict, carried.n);
	for (int i = 0; i < carried.n && k < n; i++) {
		const struct rec *r = &carried.r[i];
		if (r->d == INSIDE)
			k += (size_t)zv_snprintf(buf + k, n - k, ".%lx.i", r->p);
		else
			k += (size_t)zv_snprintf(buf + k, n - k, ".%lx.%lx.%lx", r->p, r->s, r->d);
	}
	if (zv_proc.tree_fd >= 0 && k < n)
		k += (size_t)zv_snprintf(buf + k, n - k, "t%d", zv_proc.tree_fd);
	return (int)k;
}

const char *zv_sitecache_decode_vdso(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	carried.hash = *s == 't' ? 0 : zv_parse_hex(s, &s);
	carried.size = *s == '.' ? zv_parse_hex(s + 1, &s) : 0;
	carried.verdict = *s == '.' ? zv_parse_hex(s + 1, &s) : ~0UL;
	uint64_t n = *s == '.' ? zv_parse_hex(s + 1, &s) : 0;
	carried.n = 0;
	for (uint64_t i = 0; i < n && i < CARRIED_MAX && *s == '.'; i++) {
		struct rec *r = &carried.r[i];
		r->p = zv_parse_hex(s + 1, &s);
		if (s[0] == '.' && s[1] == 'i') {
			r->s = r->p;
			r->d = INSIDE;
			s += 2;
		} else {
			r->s = *s == '.' ? zv_parse_hex(s + 1, &s) : 0;
			r->d = *s == '.' ? zv_parse_hex(s + 1, &s) : 0;
		}
		carried.n = (int)i + 1;
	}
	if (carried.n != (int)n)
		carried.n = 0; /* short or too long: not used */
	if (*s == 't') /* the tree's memfd (zv_sitecache_init reads it) */
		zv_proc.tree_fd = (int)zv_parse_dec(s + 1, &s);
	while (*s && *s != ',')
		s++;
	return s;
}

ZV_EXEC_FIELD(sitecache_vdso, 100, 'w', zv_sitecache_encode_vdso, zv_sitecache_decode_vdso);

/* The entry of b's windows, as a cache file holds it, into e (room for
 * MAX_ENTRY_WINDOWS records); returns its length. */
static size_t entry_of(const struct key *k, uint64_t addr, const struct zv_stub_batch *b, struct header *e)
{
	struct rec *r = (struct rec *)(e + 1);
	uint64_t n = (uint64_t)(b->n + b->ninside), off = k->off;
	if (n > MAX_ENTRY_WINDOWS)
		return 0;
	*e = (struct header){ *k, n, 0xcbf29ce484222325ULL, b->verdict < 0 ? ~0UL : (uint64_t)b->verdict };
	for (int i = 0; i < b->n + b->ninside; i++) {
		if (i < b->n)
			r[i] = (struct rec){ b->w[i].p - addr + off, b->w[i].s - addr + off, b->w[i].d ? b->w[i].d - addr + off : 0 };
		else
			r[i] = (struct rec){ b->inside[i - b->n] - addr + off, b->inside[i - b->n] - addr + off, INSIDE };
		e->sum = fnv(&r[i], sizeof r[i], e->sum);
	}
	e->sum = fnv(&e->verdict, sizeof e->verdict, e->sum);
	return sizeof *e + n * sizeof *r;
}

static void store(const struct key *k, uint64_t addr, const struct zv_stub_batch *b)
{
	size_t size = sizeof(struct header) + MAX_ENTRY_WINDOWS * sizeof(struct rec);
	struct header *e = zv_kmap(size, 4096, -1);
	if (zv_is_err((long)e))
		return;
	size_t len = entry_of(k, addr, b, e);
	char path[300], tmp[320];
	if (!len) {
	} else if (!zv_sitecache_dir()[0]) {
		zv_treecache_add(e, len, sizeof *k); /* none: for the rest of the process tree */
	} else {
		share(k, addr, b);
		path_of(k, path, sizeof path);
		zv_snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, zv_getpid());
		long cfd = zv_sitecache_create(tmp);
		if (cfd >= 0) {
			int ok = zv_sys4(__NR_pwrite64, cfd, e, len, 0) == (long)len;
			if (ok)
				zv_sitecache_mark(cfd, k);
			zv_close((int)cfd);
			if (!ok || zv_sys4(__NR_renameat, AT_FDCWD, tmp, AT_FDCWD, path) != 0)
				zv_sys3(__NR_unlinkat, AT_FDCWD, tmp, 0); /* a full disk: no entry */
		}
	}
	zv_kunmap(e, size);
}

void zv_sitecache_store(int fd, uint64_t addr, uint64_t len, uint64_t off, struct zv_stub_batch *b)
{
	struct key k;
	if (key_of(fd, b, off, len, &k))
		store(&k, addr, b);
}

void zv_sitecache_store_bytes(uint64_t hash, const uint8_t *base, uint64_t size, const struct zv_stub_batch *b)
{
	struct key k;
	if (key_of_bytes(hash, size, &k)) {
		store(&k, (uint64_t)base, b);
		carry(hash, (uint64_t)base, size, b);
	}
}
