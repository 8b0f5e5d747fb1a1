/* The guest's view of the procfs files that would show zvisor: its kernel
 * image, memory and stub regions in maps (and smaps, smaps_rollup,
 * numa_maps), its handlers and kernel-held signal in status.
 *
 * The guest's fd stays the host's procfs fd, so fstat, readlink, fcntl,
 * close-on-exec and poll are native. An open of one of these files marks
 * the fd; reads of a marked fd (read, pread64, readv, preadv, preadv2) are
 * served from a snapshot that a read at offset 0 makes again, as seq_file
 * does, and the file position is the host's (so dup'ed and inherited fds
 * share it). A mark holds the file's (dev, ino), checked before serving, so
 * a stale mark (the fd closed by close_range or an exec's close-on-exec,
 * its number reused) never serves wrong bytes. The layer sees calls only
 * while a mark exists: a program that never opens these files pays
 * nothing. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/procview.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <asm/stat.h>
#include <linux/fcntl.h>
#include <linux/fs.h>

#define MAX_MARKS 16

struct mark {
	int fd;          /* -1: free */
	int kind;        /* enum zv_pv_kind */
	int tid;         /* status: the host thread it shows */
	uint64_t dev, ino;
	struct zv_pv_buf snap;
	int valid;       /* snap holds a snapshot */
};

static struct mark marks[MAX_MARKS] = { [0 ... MAX_MARKS - 1] = { .fd = -1 } };
static int nmarks;
static volatile int pv_lock;
static struct zv_pv_buf raw; /* the host's text, under pv_lock */
static uint64_t stack_lo, stack_hi;

/* Room for n more bytes (and a terminating 0) in b. */
static int reserve(struct zv_pv_buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 16384;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = zv_kmap(cap, 4096, -1);
	if (zv_is_err((long)p))
		return -ENOMEM;
	if (b->p) {
		memcpy(p, b->p, b->len);
		zv_kunmap(b->p, b->cap);
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int zv_pv_put(struct zv_pv_buf *b, const char *s, size_t n)
{
	if (reserve(b, n) < 0)
		return -ENOMEM;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

void zv_procview_stack(uint64_t lo, uint64_t hi)
{
	stack_lo = lo;
	stack_hi = hi;
}

uint64_t zv_pv_stack(uint64_t *hi)
{
	*hi = stack_hi;
	return stack_lo;
}

static int file_id(int fd, uint64_t *dev, uint64_t *ino)
{
	struct stat st;
	if (zv_sys2(__NR_fstat, fd, &st) < 0)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* Whether m's fd no longer holds the file marked (closed, or reused). */
static int stale(const struct mark *m)
{
	uint64_t d, n;
	return file_id(m->fd, &d, &n) < 0 || d != m->dev || n != m->ino;
}

static struct mark *find(int fd)
{
	for (int i = 0; i < MAX_MARKS; i++)
		if (marks[i].fd == fd && fd >= 0)
			return &marks[i];
	return NULL;
}

static void drop(struct mark *m)
{
	if (m->snap.p)
		zv_kunmap(m->snap.p, m->snap.cap);
	*m = (struct mark){ .fd = -1 };
	nmarks--;
}

/* Adds a mark (replacing fd's); a full table first drops the stale ones.
 * Returns whether the layer must be refolded. Under pv_lock. */
static int add(int fd, int kind, int tid, uint64_t dev, uint64_t ino)
{
	struct mark *m = find(fd);
	if (m)
		drop(m);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < MAX_MARKS; i++)
			if (marks[i].fd < 0) {
				marks[i] = (struct mark){ .fd = fd, .kind = kind, .tid = tid, .dev = dev, .ino = ino };
				return ++nmarks == 1;
			}
		for (int i = 0; i < MAX_MARKS; i++)
			if (stale(&marks[i]))
				drop(&marks[i]);
	}
	return 0; /* more than MAX_MARKS open at once: this one stays the host's */
}

static int kind_of_name(const char *s)
{
	if (!zv_strcmp(s, "maps"))
		return ZV_PV_MAPS;
	if (!zv_strcmp(s, "smaps"))
		return ZV_PV_SMAPS;
	if (!zv_strcmp(s, "smaps_rollup"))
		return ZV_PV_ROLLUP;
	if (!zv_strcmp(s, "numa_maps"))
		return ZV_PV_NUMA;
	if (!zv_strcmp(s, "status"))
		return ZV_PV_STATUS;
	return 0;
}

/* A decimal number at *s, moved past it; -1 if there is none. */
static long number(const char **s)
{
	const char *e;
	long v = zv_parse_dec(*s, &e);
	if (e == *s || **s == '-')
		return -1;
	*s = e;
	return v;
}

void zv_procview_opened(struct zv_thread *t, const char *path, long fd)
{
	if (fd < 0 || !path)
		return;
	const char *base = zv_strrchr(path, '/');
	if (!kind_of_name(base ? base + 1 : path))
		return; /* the common case: nothing more */
	/* What the host opened, whatever the path's form: /proc/<pid>/<file>
	 * or /proc/<pid>/task/<tid>/<file>, of this process. */
	char link[64], fdpath[32];
	zv_snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", (int)fd);
	long n = zv_sys4(__NR_readlinkat, AT_FDCWD, fdpath, link, sizeof link - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	if (!zv_startswith(link, "/proc/"))
		return;
	const char *s = link + 6;
	long pid = number(&s), tid = pid;
	if (*s++ != '/')
		return;
	if (zv_startswith(s, "task/")) {
		s += 5;
		if (pid != zv_proc.hpid || (tid = number(&s)) < 0 || *s++ != '/')
			return;
	} else if (pid != zv_proc.hpid && pid != t->htid && !zv_thread_find((int)pid)) {
		return; /* another process's */
	}
	int kind = kind_of_name(s);
	uint64_t dev, ino;
	if (!kind || file_id((int)fd, &dev, &ino) < 0)
		return;
	zv_lock(&pv_lock);
	int fold = add((int)fd, kind, (int)tid, dev, ino);
	zv_unlock(&pv_lock);
	if (fold)
		zv_layers_fold();
}

int zv_pv_read_all(int fd, struct zv_pv_buf *b)
{
	b->len = 0;
	for (;;) {
		if (reserve(b, 8192) < 0)
			return -ENOMEM;
		long n = zv_sys4(__NR_pread64, fd, b->p + b->len, b->cap - b->len - 1, b->len);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	b->p[b->len] = 0;
	return 0;
}

static int snapshot(struct zv_call *c, struct mark *m)
{
	int r = zv_pv_read_all(m->fd, &raw); /* the host's whole file */
	if (r < 0)
		return r;
	m->snap.len = 0;
	m->valid = 0;
	r = m->kind == ZV_PV_STATUS ? zv_pv_filter_status(c->t, c, m->tid, raw.p, raw.len, &m->snap)
				    : zv_pv_filter_maps(m->kind, raw.p, raw.len, &m->snap);
	if (r < 0)
		return r;
	m->valid = 1;
	return 0;
}

struct iov {
	void *base;
	size_t len;
};

/* Copies the snapshot from pos into the guest's buffers; returns how
 * many bytes. */
static long copy_out(struct mark *m, uint64_t pos, const struct iov *v, int nv)
{
	long done = 0;
	for (int i = 0; i < nv && pos < m->snap.len; i++) {
		size_t k = v[i].len;
		if (!k)
			continue;
		if (k > m->snap.len - pos)
			k = m->snap.len - pos;
		if (zv_guest_copy(v[i].base, m->snap.p + pos, k, (uint64_t)v[i].base) < 0)
			return done ? done : -EFAULT;
		pos += k;
		done += (long)k;
	}
	return done;
}

/* A read of marked fd m; off < 0: at (and advancing) the file position. */
static long serve(struct zv_call *c, struct mark *m, const struct iov *v, int nv, long off)
{
	int at_pos = off < 0;
	if (at_pos && (off = zv_sys3(__NR_lseek, m->fd, 0, SEEK_CUR)) < 0)
		return off;
	if (off == 0 || !m->valid) {
		int r = snapshot(c, m);
		if (r < 0)
			return r;
	}
	long n = copy_out(m, (uint64_t)off, v, nv);
	if (n > 0 && at_pos)
		zv_sys3(__NR_lseek, m->fd, off + n, SEEK_SET);
	return n;
}

#define MAX_IOV 1024

static long read_call(struct zv_call *c, struct mark *m)
{
	long *a = c->a;
	struct iov one = { (void *)a[1], (size_t)a[2] };
	switch (c->nr) {
	case __NR_read:
		return serve(c, m, &one, 1, -1);
	case __NR_pread64:
		return a[3] < 0 ? -EINVAL : serve(c, m, &one, 1, a[3]);
	}
	/* readv, preadv, preadv2 */
	long cnt = a[2];
	if (cnt < 0 || cnt > MAX_IOV)
		return -EINVAL;
	static struct iov v[MAX_IOV] ZV_COLD_BSS; /* under pv_lock */
	if (zv_guest_copy(v, (const void *)a[1], (size_t)cnt * sizeof *v, (uint64_t)a[1]) < 0)
		return -EFAULT;
	for (long i = 0; i < cnt; i++)
		if ((long)v[i].len < 0)
			return -EINVAL;
	long off = c->nr == __NR_readv ? -1 : a[3];
	if (c->nr == __NR_preadv && off < 0)
		return -EINVAL;
	if (c->nr == __NR_preadv2 && off < -1)
		return -EINVAL;
	return serve(c, m, v, (int)cnt, off);
}

/* The mark of fd, if it is still the file marked; a stale one is dropped. */
static struct mark *valid_mark(int fd, int *fold)
{
	struct mark *m = find(fd);
	if (m && stale(m)) {
		drop(m);
		*fold = nmarks == 0;
		return NULL;
	}
	return m;
}

static int is_dup(long nr, const long *a)
{
	return nr == __NR_dup || nr == __NR_dup2 || nr == __NR_dup3 ||
	       (nr == __NR_fcntl && (a[1] == F_DUPFD || a[1] == F_DUPFD_CLOEXEC));
}

static long pv_call(struct zv_call *c)
{
	long nr = c->nr, *a = c->a, r;
	int fold = 0;
	if (nr == __NR_close || nr == __NR_close_range || is_dup(nr, a)) {
		r = zv_next(c);
		zv_lock(&pv_lock);
		if (nr == __NR_close) {
			struct mark *m = find((int)a[0]);
			if (m && r != -EBADF)
				drop(m), fold = nmarks == 0;
		} else if (nr == __NR_close_range) {
			if (r == 0 && !(a[2] & 4 /* CLOSE_RANGE_CLOEXEC */))
				for (int i = 0; i < MAX_MARKS; i++)
					if (marks[i].fd >= 0 && (unsigned)marks[i].fd >= (unsigned)a[0] &&
					    (unsigned)marks[i].fd <= (unsigned)a[1])
						drop(&marks[i]), fold = nmarks == 0;
		} else if (r >= 0 && r != a[0]) {
			struct mark *m = valid_mark((int)a[0], &fold), *old = find((int)r);
			if (m)
				fold = add((int)r, m->kind, m->tid, m->dev, m->ino);
			else if (old)
				drop(old), fold = nmarks == 0;
		}
		zv_unlock(&pv_lock);
	} else {
		zv_lock(&pv_lock);
		struct mark *m = valid_mark((int)a[0], &fold);
		if (!m) {
			zv_unlock(&pv_lock);
			r = zv_next(c);
		} else {
			r = read_call(c, m);
			zv_unlock(&pv_lock);
		}
	}
	if (fold)
		zv_layers_fold();
	return r;
}

static int pv_on(void) { return nmarks != 0; }
static int pv_sees(long nr)
{
	switch (nr) {
	case __NR_read: case __NR_pread64: case __NR_readv: case __NR_preadv: case __NR_preadv2:
	case __NR_close: case __NR_close_range: case __NR_dup: case __NR_dup2: case __NR_dup3:
	case __NR_fcntl:
		return 1;
	default:
		return 0;
	}
}

/* A lock another thread held at the fork; written only then, since a write
 * would copy the page for nothing in every fork child. */
static void pv_fork_child(struct zv_thread *t)
{
	if (pv_lock)
		pv_lock = 0;
}

const struct zv_layer zv_procview_layer = {
	.name = "procview", .sees = pv_sees, .active = pv_on, .call = pv_call, .fork_child = pv_fork_child,
};
