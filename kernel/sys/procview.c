/* The guest's view of the procfs files that would show zvisor: its kernel
 * image, memory and stub regions in maps (and smaps, smaps_rollup,
 * numa_maps), its handlers and kernel-held signal in status and stat;
 * where ids are virtual, the ids in another process's status; and a
 * restored tree's pids in status, stat and a task's children, any
 * process's.
 *
 * The guest's fd stays the host's procfs fd, so fstat, readlink, fcntl,
 * close-on-exec and poll are native. An open of one of these files marks
 * the fd; reads of a marked fd (read, pread64, readv, preadv, preadv2) are
 * served as seq_file serves them: the text is made record by record only
 * as far as the reads reach (from the host's, filtered), made again by a
 * read at offset 0 or anywhere but where the last read ended, and each
 * read returns what seq_file's would. The file position is the host's (so
 * dup'ed and inherited fds share it). A mark holds the file's (dev, ino),
 * checked before serving, so a stale mark (the fd closed by close_range or
 * an exec's close-on-exec, its number reused) never serves wrong bytes.
 * The layer sees calls only while a mark exists: a program that never
 * opens these files pays nothing. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/procview.h"
#include "sys/viewhook.h"
#include "peer/peer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <asm/stat.h>
#include <linux/fcntl.h>
#include <linux/fs.h>

#define MAX_MARKS 16

struct mark {
	int fd;            /* -1: free */
	int kind;          /* enum zv_pv_kind */
	int tid;           /* status: the host thread it shows; another's maps: whom to ask */
	int other;         /* status: of another process */
	uint64_t dev, ino;
	struct zv_pv_buf text; /* the guest's text from offset 0, whole records */
	int whole;         /* text is all of it */
	uint64_t next_raw; /* if not: the host's offset of the next record, */
	uint64_t next_lo;  /* and its address */
	uint64_t read_pos; /* where the last read ended (seq_file's read_pos) */
	size_t bufsz;      /* seq_file's buffer: the most a read gives past a record's rest */
	uint64_t seq;      /* which mark this is: a close drops only the one it closed */
};

static struct mark marks[MAX_MARKS] = { [0 ... MAX_MARKS - 1] = { .fd = -1 } };
static int nmarks;
static uint64_t marks_made;
static volatile int pv_lock;
static struct zv_pv_buf raw; /* the host's text, under pv_lock */

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
	if (m->text.p)
		zv_kunmap(m->text.p, m->text.cap);
	*m = (struct mark){ .fd = -1 };
	nmarks--;
}

/* Adds a mark (replacing fd's); a full table first drops the stale ones.
 * Returns whether the layer must be refolded. Under pv_lock. */
static int add(int fd, int kind, int tid, int other, uint64_t dev, uint64_t ino)
{
	struct mark *m = find(fd);
	if (m)
		drop(m);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < MAX_MARKS; i++)
			if (marks[i].fd < 0) {
				marks[i] = (struct mark){ .fd = fd, .kind = kind, .tid = tid, .other = other, .dev = dev,
							  .ino = ino, .bufsz = 4096, .seq = ++marks_made };
				return ++nmarks == 1;
			}
		for (int i = 0; i < MAX_MARKS; i++)
			if (stale(&marks[i]))
				drop(&marks[i]);
	}
	return 0; /* more than MAX_MARKS open at once: this one stays the host's */
}

int zv_pv_kind_of_name(const char *s)
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
	if (zv_view_mounts && !zv_strcmp(s, "mountinfo"))
		return ZV_PV_MOUNTINFO;
	if (zv_view_mounts && !zv_strcmp(s, "mounts"))
		return ZV_PV_MOUNTS;
	if (!zv_strcmp(s, "locks"))
		return ZV_PV_LOCKS; /* /proc/locks only (zv_procview_opened) */
	if (!zv_strcmp(s, "stat"))
		return ZV_PV_STAT;
	if (!zv_strcmp(s, "children") && zv_guest_ids_on())
		return ZV_PV_CHILDREN;
	if (zv_startswith(s, "fdinfo/") && s[7] >= '0' && s[7] <= '9' && zv_guest_ids_on())
		return ZV_PV_FDINFO; /* a pidfd's pid */
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

/* After a mark is added: the layer must see the fd's reads before the call
 * returns. The first mark folds; a later one may come while another
 * thread's fold is under way (its first mark's, or one after the last
 * mark's drop that found none): it waits for that fold's end and folds if
 * the routes still leave the layer out. */
extern const struct zv_layer zv_procview_layer;
static void fold_for_mark(int first)
{
	if (first || !zv_layer_routed(&zv_procview_layer, __NR_read))
		zv_layers_fold();
}

/* Another process's file is served where ids are virtual or pids a
 * restored tree's (its status) and when it is hosted (its maps-like files,
 * as it shows them itself: procview_peer.c). */
static int other_served(int kind, int tid)
{
	if (kind == ZV_PV_STATUS)
		return zv_ids_other_hook != NULL || zv_guest_ids_on();
	if (kind == ZV_PV_STAT)
		return zv_guest_ids_on();
	if (kind == ZV_PV_CHILDREN || kind == ZV_PV_FDINFO)
		return 1; /* made a kind only while a restored tree's ids are shown */
	return (kind == ZV_PV_MAPS || kind == ZV_PV_SMAPS || kind == ZV_PV_NUMA || kind == ZV_PV_ROLLUP) &&
	       zv_peer_hosted(tid) == 1;
}

void zv_procview_opened(struct zv_thread *t, const char *path, long fd)
{
	if (fd < 0 || !path)
		return;
	const char *base = zv_strrchr(path, '/');
	if (!zv_pv_kind_of_name(base ? base + 1 : path) &&
	    !(base && base - path >= 7 && !memcmp(base - 7, "/fdinfo", 7) && zv_guest_ids_on()))
		return; /* the common case: nothing more */
	/* What the host opened, whatever the path's form: /proc/<pid>/<file>
	 * or /proc/<pid>/task/<tid>/<file>, of this process, or /proc/locks;
	 * another process's status where ids are virtual or pids a restored
	 * tree's. */
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
	int other = 0;
	if (pid < 0) {
		if (zv_strcmp(s, "locks"))
			return;
		tid = 0; /* /proc/locks: the host's list of every lock */
	} else if (*s++ != '/' || !zv_strcmp(s, "locks")) {
		return;
	} else if (zv_startswith(s, "task/")) {
		s += 5;
		if ((tid = number(&s)) < 0 || *s++ != '/')
			return;
		other = pid != zv_proc.hpid;
	} else if (pid != zv_proc.hpid && pid != t->htid && !zv_thread_find((int)pid)) {
		other = 1;
	}
	int kind = zv_pv_kind_of_name(s);
	uint64_t dev, ino;
	if (!kind || (other && !other_served(kind, (int)tid)) || file_id((int)fd, &dev, &ino) < 0)
		return; /* another process's file stays the host's, but for virtual ids, a restored tree's pids and hosted maps */
	/* an fd that cannot read stays the host's (its reads fail there; ours
	 * would read through an fd of our own) */
	long fl = zv_sys2(__NR_fcntl, fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return;
	zv_lock(&pv_lock);
	int fold = add((int)fd, kind, (int)tid, other, dev, ino);
	zv_unlock(&pv_lock);
	fold_for_mark(fold);
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

/* The host's text, CHUNK bytes at a time; also where advance reads to. */
#define CHUNK 65536
static char chunk[CHUNK + 1] ZV_COLD_BSS; /* under pv_lock */

static int put_text(void *ctx, const char *s, size_t n) { return zv_pv_put(ctx, s, n); }

/* Made whole from the host's text at once: status and smaps_rollup (one
 * record each), mountinfo and mounts (lines). */
static int whole_kind(int kind)
{
	return kind == ZV_PV_STATUS || kind == ZV_PV_ROLLUP || kind == ZV_PV_MOUNTINFO || kind == ZV_PV_MOUNTS ||
	       kind == ZV_PV_LOCKS || kind == ZV_PV_STAT || kind == ZV_PV_CHILDREN || kind == ZV_PV_FDINFO;
}

/* status, stat and smaps_rollup: one record, made whole from the host's;
 * mountinfo and mounts through the view; children's records. */
static int make_whole(struct zv_call *c, struct mark *m, int src)
{
	int r = zv_pv_read_all(src, &raw);
	if (r < 0)
		return r;
	m->text.len = 0;
	if (m->kind == ZV_PV_MOUNTINFO || m->kind == ZV_PV_MOUNTS)
		r = zv_view_mounts(m->kind == ZV_PV_MOUNTINFO, raw.p, raw.len, put_text, &m->text);
	else if (m->kind == ZV_PV_LOCKS)
		r = zv_pv_filter_locks(raw.p, raw.len, &m->text);
	else if (m->kind == ZV_PV_STAT)
		r = zv_pv_filter_stat(c->t, c, m->tid, m->other, raw.p, raw.len, &m->text);
	else if (m->kind == ZV_PV_CHILDREN)
		r = zv_pv_filter_children(raw.p, raw.len, &m->text);
	else if (m->kind == ZV_PV_FDINFO)
		r = zv_pv_filter_fdinfo(raw.p, raw.len, &m->text);
	else
		r = m->kind == ZV_PV_STATUS ? zv_pv_filter_status(c->t, c, m->tid, m->other, raw.p, raw.len, &m->text)
					    : zv_pv_filter_rollup(raw.p, raw.len, &m->text);
	m->whole = r == 0;
	return r;
}

/* Whether the host's text at s (n bytes) starts with the record at lo. */
static int starts_at(const char *s, long n, int kind, uint64_t lo)
{
	const char *e;
	return n > 0 && zv_parse_hex(s, &e) == lo && e > s && e < s + n && *e == (kind == ZV_PV_NUMA ? ' ' : '-');
}

/* maps, smaps, numa_maps: m's text goes on, record by record, until it
 * holds more than want bytes or all of it. A first batch reads the host's
 * text from its start. A later one goes on from the record after the last
 * made, where src (a host fd of its own, which walks its text to that
 * offset) shows it, if it is still there; if the text moved (a mapping
 * made or removed, a field grown), from the start again, leaving out the
 * records below that next record's address, as seq_file goes on from the
 * address of the next mapping. Each later batch takes at least as much as
 * there is, so that the walks cost at most the text's length in all. */
static int make_records(struct mark *m, int src, size_t want)
{
	static struct zv_pv_filter f; /* under pv_lock */
	size_t enough = m->text.len && want < 2 * m->text.len ? 2 * m->text.len : want;
	uint64_t at = 0; /* the host's offset of chunk[0] */
	size_t have = 0;
	zv_pv_filter_begin(&f, m->kind);
	if (m->text.len) {
		long k = zv_sys4(__NR_pread64, src, chunk, CHUNK, m->next_raw - 1);
		if (k > 0)
			chunk[k] = 0;
		if (k > 1 && chunk[0] == '\n' && starts_at(chunk + 1, k - 1, m->kind, m->next_lo)) {
			have = (size_t)k - 1;
			memmove(chunk, chunk + 1, have);
			at = m->next_raw;
		} else {
			f.resume = m->next_lo;
		}
	}
	for (;;) {
		int eof = 0;
		if (have < CHUNK) {
			long k = zv_sys4(__NR_pread64, src, chunk + have, CHUNK - have, at + have);
			if (k < 0)
				return (int)k;
			eof = k == 0;
			have += (size_t)k;
		}
		chunk[have] = 0;
		size_t i = 0, n; /* i: where the line in hand starts */
		int nl;
		struct zv_pv_lines it = { chunk, have, 0 };
		for (const char *line; (line = zv_pv_next_line(&it, &n, &nl)); i = it.at) {
			if (!nl && !eof && (i || have < CHUNK))
				break; /* not whole yet (one longer than CHUNK is taken as it is) */
			uint64_t lo;
			int r = zv_pv_filter_line(&f, line, n, nl, enough, &m->text, &lo);
			if (r < 0)
				return r;
			if (r == 1) {
				m->next_raw = at + i;
				m->next_lo = lo;
				return 0;
			}
		}
		if (eof) {
			m->whole = 1;
			return 0;
		}
		memmove(chunk, chunk + i, have - i);
		at += i;
		have -= i;
	}
}

/* Another hosted process's maps-like file: its own view, whole; the
 * host's text if it does not answer. */
static int from_peer(struct mark *m, int src)
{
	int r = zv_pv_from_peer(m->tid, m->kind, &m->text);
	if (r < 0)
		r = zv_pv_read_all(src, &m->text);
	m->whole = r == 0;
	return r;
}

/* Makes m's text longer than want bytes, or whole. The host's text is read
 * through a host fd of our own on the same file, opened for the while:
 * reading the guest's would move the host's read position of its file,
 * which its next lseek or read would then walk the text from the start to
 * find again. Without one (no /proc, no fd free), through the guest's. */
static int produce(struct zv_call *c, struct mark *m, size_t want)
{
	if (m->whole || m->text.len > want)
		return 0;
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/thread-self/fd/%d", m->fd);
	long src = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	int own = src >= 0;
	if (!own)
		src = m->fd;
	int peer = m->other && m->kind != ZV_PV_STATUS && m->kind != ZV_PV_STAT && m->kind != ZV_PV_CHILDREN &&
		   m->kind != ZV_PV_FDINFO;
	int r = peer ? from_peer(m, (int)src)
		: whole_kind(m->kind)		     ? make_whole(c, m, (int)src)
						     : make_records(m, (int)src, want);
	if (own)
		zv_close((int)src);
	if (r < 0) { /* a batch cut short: nothing half made goes on */
		m->text.len = 0;
		m->whole = 0;
	}
	return r;
}

/* How many bytes a read of want at p returns, as seq_file's: the rest of
 * the record holding p, then whole records while fewer than want are
 * there and they fit its buffer (the first one always: the buffer doubles
 * until it does). */
static long seq_count(struct zv_call *c, struct mark *m, size_t p, size_t want)
{
	/* enough for the common read in one batch: from a record's start, a
	 * buffer's worth; from inside one, its rest too */
	int r = produce(c, m, p + (want < m->bufsz ? want : m->bufsz) + (p ? m->bufsz : 0));
	if (r < 0)
		return r;
	if (p >= m->text.len)
		return 0;
	size_t got = 0, count = 0, q = p;
	if (!zv_pv_record_starts(m->kind, m->text.p, p)) {
		q = zv_pv_record_end(m->kind, m->text.p, m->text.len, p);
		if (q - p >= want)
			return (long)want;
		got = q - p;
	}
	while (count < want - got) {
		if ((r = produce(c, m, q)) < 0)
			return r;
		if (q >= m->text.len)
			break;
		size_t len = zv_pv_record_end(m->kind, m->text.p, m->text.len, q) - q;
		if (!count)
			while (len >= m->bufsz)
				m->bufsz *= 2;
		else if (count + len >= m->bufsz)
			break;
		count += len;
		q += len;
	}
	return (long)(got + (count < want - got ? count : want - got));
}

struct iov {
	void *base;
	size_t len;
};

/* The guest's file position moves on by n from pos, as its read would have
 * moved it: by reading n bytes of the host's text there (seq_file goes on
 * from where it stands), not by lseek, which would make the host walk its
 * text from the start to the new place. */
static void advance(struct mark *m, long pos, long n)
{
	long done = 0;
	while (done < n) {
		long k = zv_sys3(__NR_read, m->fd, chunk, n - done < CHUNK ? n - done : CHUNK);
		if (k <= 0)
			break;
		done += k;
	}
	if (done != n)
		zv_sys3(__NR_lseek, m->fd, pos + n, SEEK_SET);
}

/* One read of want bytes at p into the guest's buf, as seq_file's: a read
 * at 0, or anywhere but where the last one ended, starts the text again;
 * one where the last ended goes on. status and smaps_rollup (one record,
 * and the rollup costs all of smaps) are made again only at 0. */
static long seq_read(struct zv_call *c, struct mark *m, uint64_t p, void *buf, size_t want)
{
	int single = whole_kind(m->kind);
	if (p == 0 || (p != m->read_pos && !single)) {
		m->text.len = 0;
		m->whole = 0;
	}
	long n = seq_count(c, m, (size_t)p, want);
	if (n <= 0)
		return n;
	if (zv_guest_copy(buf, m->text.p + p, (size_t)n, (uint64_t)buf) < 0)
		return -EFAULT;
	m->read_pos = p + (uint64_t)n;
	return n;
}

/* A read of marked fd m; off < 0: at (and advancing) the file position.
 * These files have no read_iter: readv and preadv read each buffer in
 * turn, stopping after a short one, as the host's loop does. */
static long serve(struct zv_call *c, struct mark *m, const struct iov *v, int nv, long off)
{
	int at_pos = off < 0;
	if (at_pos && (off = zv_sys3(__NR_lseek, m->fd, 0, SEEK_CUR)) < 0)
		return off;
	long done = 0;
	for (int i = 0; i < nv; i++) {
		if (!v[i].len)
			continue;
		long n = seq_read(c, m, (uint64_t)(off + done), v[i].base, v[i].len);
		if (n < 0) {
			done = done ? done : n;
			break;
		}
		done += n;
		if ((size_t)n != v[i].len)
			break;
	}
	if (done > 0 && at_pos)
		advance(m, off, done);
	return done;
}

#define MAX_IOV 1024

static long read_call(struct zv_call *c, struct mark *m)
{
	long *a = c->a;
	struct iov one = { (void *)a[1], (size_t)a[2] };
	int k = zv_row(c->nr)->reads;
	switch (k) {
	case ZV_READS_BUF:
		return serve(c, m, &one, 1, -1);
	case ZV_READS_BUF_AT:
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
	long off = k == ZV_READS_IOV ? -1 : a[3];
	if (k == ZV_READS_IOV_AT && off < 0)
		return -EINVAL;
	if (k == ZV_READS_IOV_AT2 && off < -1)
		return -EINVAL;
	if (k == ZV_READS_IOV_AT2 && (a[5] & ~1L /* RWF_HIPRI */))
		return -EOPNOTSUPP; /* the host's loop for files without read_iter */
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

static int is_dup(int fdop, const long *a)
{
	return fdop == ZV_FDOP_DUP || (fdop == ZV_FDOP_FCNTL && (a[1] == F_DUPFD || a[1] == F_DUPFD_CLOEXEC));
}

static long pv_call(struct zv_call *c)
{
	long *a = c->a, r;
	int fold = 0, added = 0, fdop = zv_row(c->nr)->fdop;
	if (fdop == ZV_FDOP_CLOSE || fdop == ZV_FDOP_CLOSE_RANGE || is_dup(fdop, a)) {
		/* Another thread may open a file that gets this number (and its
		 * mark) between the host's close and the drop: the close drops
		 * only the mark that was there before it. */
		uint64_t was = 0;
		if (fdop == ZV_FDOP_CLOSE) {
			zv_lock(&pv_lock);
			struct mark *m = find((int)a[0]);
			was = m ? m->seq : 0;
			zv_unlock(&pv_lock);
		}
		r = zv_next(c);
		zv_lock(&pv_lock);
		if (fdop == ZV_FDOP_CLOSE) {
			struct mark *m = find((int)a[0]);
			if (m && m->seq == was && r != -EBADF)
				drop(m), fold = nmarks == 0;
		} else if (fdop == ZV_FDOP_CLOSE_RANGE) {
			if (r == 0 && !(a[2] & 4 /* CLOSE_RANGE_CLOEXEC */))
				for (int i = 0; i < MAX_MARKS; i++)
					if (marks[i].fd >= 0 && (unsigned)marks[i].fd >= (unsigned)a[0] &&
					    (unsigned)marks[i].fd <= (unsigned)a[1])
						drop(&marks[i]), fold = nmarks == 0;
		} else if (r >= 0 && r != a[0]) {
			struct mark *m = valid_mark((int)a[0], &fold), *old = find((int)r);
			if (m)
				fold = add((int)r, m->kind, m->tid, m->other, m->dev, m->ino), added = 1;
			else if (old)
				drop(old), fold = nmarks == 0;
		}
		zv_unlock(&pv_lock);
		if (added) {
			fold_for_mark(fold);
			return r;
		}
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
	return zv_row(nr)->reads || zv_row(nr)->fdop;
}

/* A lock another thread held at the fork; written only then, since a write
 * would copy the page for nothing in every fork child. */
static void pv_fork_child(struct zv_thread *t)
{
	if (pv_lock)
		pv_lock = 0;
}

ZV_LAYER(procview, 500) = {
	.name = "procview", .sees = pv_sees, .active = pv_on, .call = pv_call, .fork_child = pv_fork_child,
	.opened = zv_procview_opened, .own_text = zv_pv_give, .exe_of = zv_pv_peer_exe,
};
