/* Restoring the process's file descriptors from a checkpoint (sections
 * "fds" and "fdlocks", cr/fdimage.h) in a fresh process: the restorer's
 * own fds 0-2, those --inherit-fd names and the image's directory are
 * moved to numbers no image uses first; the objects the records share
 * (pipes, sockets, files in flight, cr/objects.c) are made; then every fd
 * is put at its number with its close-on-exec flag (cr/fdmake.c makes the
 * others), dups after what they share, epoll sets filled once every target
 * exists; the fds the image does not have are closed (all but in->dirfd),
 * and the locks are taken last, since closing any fd of a file drops the
 * process's POSIX locks on it. */
#include "cr/fdrestore.h"
#include "cr/resources.h"
#include "cr/resutil.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include "cr/treerestore.h"
#include <linux/eventpoll.h>

/* The records of section "fds", checked for size, into pr. */
long zv_cr_fds_parse(struct zv_cr_in *in, struct zv_cr_precs *pr, const uint8_t *p, uint64_t len)
{
	const struct zv_cr_fds_head *h = (const void *)p;
	if (len < sizeof *h || h->magic != ZV_CR_FDS_MAGIC)
		return zv_cr_in_refuse(in, "the image's fds section is damaged");
	if (h->version < 1 || h->version > ZV_CR_FDS_VERSION)
		return zv_cr_in_refuse(in, "the image's fds section has version %u, not 1 to %u", h->version,
				       ZV_CR_FDS_VERSION);
	if (h->count > len / sizeof(struct zv_cr_fd))
		return zv_cr_in_refuse(in, "the image's fds section is damaged");
	pr->n = h->count;
	pr->rec = zv_cr_kalloc(pr->n * sizeof *pr->rec);
	if (!pr->rec)
		return zv_cr_in_refuse(in, "out of memory restoring the file descriptors");
	uint64_t off = sizeof *h;
	int last = -1;
	pr->top = -1;
	for (unsigned i = 0; i < pr->n; i++) {
		const struct zv_cr_fd *r = (const void *)(p + off);
		if (off > len || len - off < sizeof *r || len - off - sizeof *r < r->len || r->fd <= last ||
		    (r->kind == ZV_CRFD_DUP && (r->u.dup_of < 0 || r->u.dup_of >= r->fd)) ||
		    (r->kind == ZV_CRFD_EPOLL && r->u.epoll.ntargets > r->len / sizeof(struct zv_cr_epoll_target)) ||
		    (r->kind <= ZV_CRFD_CHR && (!r->len || ((const char *)(r + 1))[r->len - 1])) ||
		    (r->kind == ZV_CRFD_FIFO && (!r->u.pipe.pathlen || zv_cr_pad8(r->u.pipe.pathlen) > r->len ||
						 ((const char *)(r + 1))[r->u.pipe.pathlen - 1])) ||
		    (r->kind == ZV_CRFD_MEMFD && (!r->u.memfd.namelen || r->u.memfd.namelen > r->len ||
						  r->len - r->u.memfd.namelen != r->u.memfd.size ||
						  ((const char *)(r + 1))[r->u.memfd.namelen - 1])) ||
		    (r->kind == ZV_CRFD_DELETED && (r->u.deleted.pathlen < 2 || r->u.deleted.pathlen > r->len ||
						    r->len - r->u.deleted.pathlen != r->u.deleted.size ||
						    ((const char *)(r + 1))[0] != '/' ||
						    ((const char *)(r + 1))[r->u.deleted.pathlen - 1])))
			return zv_cr_in_refuse(in, "the image's fds section is damaged (record %u)", i);
		pr->rec[i] = r;
		last = r->fd;
		if (r->fd < ZV_CR_INFLIGHT)
			pr->top = r->fd;
		off += sizeof *r + zv_cr_pad8(r->len);
	}
	return 0;
}

static int in_image(const struct zv_cr_precs *pr, long fd)
{
	unsigned lo = 0, hi = pr->n;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (pr->rec[mid]->fd == fd)
			return 1;
		if (pr->rec[mid]->fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int in_any_image(const struct zv_cr_rctx *c, long fd)
{
	for (int p = 0; p < c->nprocs; p++)
		if (in_image(&c->procs[p], fd))
			return 1;
	return 0;
}

/* Spare numbers are searched from 3 up: above the images' highest fd there
 * may be no room (the kernel's hidden fds sit just under the limit). */
int zv_cr_spare(struct zv_cr_rctx *c, int fd)
{
	for (;;) {
		long n = zv_sys3(__NR_fcntl, fd, F_DUPFD_CLOEXEC, c->next_spare);
		if (n < 0)
			return (int)n;
		c->next_spare = (int)n + 1;
		if (!in_any_image(c, n))
			return (int)n;
		/* n is an image's: keep it taken until the image's fd is
		 * put there (dup3 replaces it), so the search moves on. */
	}
}

const struct zv_cr_fd *zv_cr_record(const struct zv_cr_rctx *c, int p, int recno)
{
	const struct zv_cr_precs *pr = &c->procs[p];
	for (unsigned i = 0; i < pr->n; i++)
		if (pr->rec[i]->fd == recno)
			return pr->rec[i];
	return NULL;
}

int zv_cr_made_fd(const struct zv_cr_rctx *c, int p, int recno)
{
	for (unsigned i = 0; i < c->nmade; i++)
		if (c->made[i].proc == p && c->made[i].recno == recno)
			return c->made[i].fd;
	return -1;
}

long zv_cr_add_made(struct zv_cr_rctx *c, int p, int recno, int fd)
{
	if (c->nmade == c->maxmade) {
		unsigned max = c->maxmade ? c->maxmade * 2 : 128;
		struct zv_cr_made *m = zv_cr_kalloc(max * sizeof *m);
		if (!m)
			return zv_cr_in_refuse(c->in, "out of memory restoring the file descriptors");
		if (c->nmade)
			memcpy(m, c->made, c->nmade * sizeof *m);
		zv_cr_kfree(c->made, c->maxmade * sizeof *m);
		c->made = m;
		c->maxmade = max;
	}
	c->made[c->nmade++] = (struct zv_cr_made){ p, recno, fd };
	return 0;
}

/* Room for the images' highest fd and a few spare ones; rlimits proper come
 * back with the timers. */
static long raise_nofile(struct zv_cr_rctx *c)
{
	struct { uint64_t cur, max; } lim;
	int top = -1;
	for (int p = 0; p < c->nprocs; p++)
		top = c->procs[p].top > top ? c->procs[p].top : top;
	uint64_t need = (uint64_t)top + 1;
	if (zv_sys4(__NR_prlimit64, 0, 7 /* RLIMIT_NOFILE */, NULL, &lim) < 0 || lim.cur >= need + 16)
		return 0;
	if (lim.max < need)
		return zv_cr_in_refuse(c->in, "fd %d is above this process's fd limit (%lu)", top, (unsigned long)lim.max);
	lim.cur = lim.max < need + 16 ? lim.max : need + 16;
	zv_sys4(__NR_prlimit64, 0, 7, &lim, NULL);
	return 0;
}

static long place(struct zv_cr_rctx *c, const struct zv_cr_fd *r, long fd, int own)
{
	long e;
	if (fd == r->fd)
		e = zv_sys3(__NR_fcntl, fd, F_SETFD, r->fdflags);
	else
		e = zv_sys3(__NR_dup3, fd, r->fd, (r->fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0);
	if (fd != r->fd && own)
		zv_close((int)fd);
	if (e < 0)
		return zv_cr_in_refuse(c->in, "fd %d: cannot be put at its number: %s", r->fd, zv_strerror((int)-e));
	return 0;
}

static int is_stdio(const struct zv_cr_precs *pr, int fd)
{
	for (unsigned i = 0; i < pr->n; i++)
		if (pr->rec[i]->fd == fd)
			return pr->rec[i]->kind == ZV_CRFD_STDIO || pr->rec[i]->kind == ZV_CRFD_EXTERNAL;
	return 0;
}

static long fill_epoll(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	const struct zv_cr_epoll_target *t = zv_cr_rec_extra(r);
	for (uint32_t i = 0; i < r->u.epoll.ntargets; i++) {
		struct epoll_event ev = { .events = t[i].events, .data = t[i].data };
		long e = zv_sys4(__NR_epoll_ctl, r->fd, EPOLL_CTL_ADD, t[i].fd, &ev);
		if (e == -EPERM && is_stdio(&c->procs[c->self], t[i].fd))
			continue; /* the restorer's stdio is a regular file, always ready */
		if (e < 0)
			return zv_cr_in_refuse(c->in, "fd %d: cannot watch fd %d again: %s", r->fd, t[i].fd,
					       zv_strerror((int)-e));
	}
	return 0;
}

/* Closes every fd the image does not have, but in->dirfd: the restorer's
 * moved copies, the objects' spare ends, whatever it had open. */
static long close_others(struct zv_cr_rctx *c)
{
	long dfd = zv_openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return zv_cr_in_refuse(c->in, "cannot list /proc/self/fd: %s", zv_strerror((int)-dfd));
	/* Listed in full before closing, so the listing does not shift under us. */
	char buf[8192];
	long r;
	while ((r = zv_sys3(__NR_getdents64, dfd, buf, sizeof buf)) > 0) {
		int close_fd[sizeof buf / 20];
		int n = 0;
		for (long off = 0; off < r;) {
			const char *name = buf + off + 19;
			off += *(unsigned short *)(buf + off + 16);
			unsigned long fd;
			if (zv_parse_ulong(name, &fd) == 0 && (long)fd != dfd && (int)fd != c->in->dirfd &&
			    (int)fd != c->in->errfd &&
			    !in_image(&c->procs[c->self], (long)fd))
				close_fd[n++] = (int)fd;
		}
		for (int i = 0; i < n; i++)
			zv_close(close_fd[i]);
	}
	zv_close((int)dfd);
	return 0;
}

/* Before anything is made: the restorer's fds that records stand for
 * (0-2, --inherit-fd's) and the image's directory go to spare numbers. */
long zv_cr_fds_prepare(struct zv_cr_rctx *c, const int *inherit, int ninherit)
{
	if (raise_nofile(c) < 0)
		return -1;
	int dirfd = zv_cr_spare(c, c->in->dirfd);
	if (dirfd < 0)
		return zv_cr_in_refuse(c->in, "no fd free beside the image's");
	zv_close(c->in->dirfd);
	c->in->dirfd = dirfd;
	if (c->in->errfd > 2) { /* kept, as dirfd, where the image has no fd */
		int errfd = zv_cr_spare(c, c->in->errfd);
		zv_close(c->in->errfd);
		c->in->errfd = errfd;
		zv_cr_errfd = errfd;
	}
	for (int i = 0; i < 3; i++)
		c->stdio[i] = zv_sys3(__NR_fcntl, i, F_GETFD, 0) < 0 ? -1 : zv_cr_spare(c, i);
	for (int i = 0; i < ninherit && i < 16; i++) {
		c->inherit[i][0] = inherit[i];
		c->inherit[i][1] = zv_sys3(__NR_fcntl, inherit[i], F_GETFD, 0) < 0 ? -1 : zv_cr_spare(c, inherit[i]);
		c->ninherit = i + 1;
	}
	return 0;
}

/* This process's fds (c->self) at their numbers. */
static long place_all(struct zv_cr_rctx *c)
{
	const struct zv_cr_precs *pr = &c->procs[c->self];
	for (unsigned i = 0; i < pr->n; i++) {
		const struct zv_cr_fd *r = pr->rec[i];
		if (r->kind == ZV_CRFD_DUP || r->fd >= ZV_CR_INFLIGHT)
			continue;
		int own = 0;
		long fd = zv_cr_made_fd(c, c->self, r->fd);
		if (fd < 0)
			fd = zv_cr_make_fd(c, r, &own);
		if (fd < 0 || place(c, r, fd, own) < 0)
			return -1;
	}
	for (unsigned i = 0; i < pr->n; i++) {
		const struct zv_cr_fd *r = pr->rec[i];
		if (r->kind == ZV_CRFD_DUP && place(c, r, r->u.dup_of, 0) < 0)
			return -1;
	}
	for (unsigned i = 0; i < pr->n; i++)
		if (pr->rec[i]->kind == ZV_CRFD_EPOLL && fill_epoll(c, pr->rec[i]) < 0)
			return -1;
	return close_others(c);
}

long zv_cr_restore_fds(struct zv_cr_in *in, const int *inherit, int ninherit, const struct zv_cr_made *made,
		       unsigned nmade)
{
	uint64_t len, llen;
	const uint8_t *p = zv_cr_get(in, "fds", &len);
	if (p == (const void *)-1)
		return -1;
	if (!p)
		return zv_cr_in_refuse(in, "the image has no fds section");
	struct zv_cr_precs pr = { 0 };
	struct zv_cr_rctx c = { .in = in, .procs = &pr, .nprocs = 1, .next_spare = 3, .stdio = { -1, -1, -1 } };
	long r = zv_cr_fds_parse(in, &pr, p, len);
	if (r == 0)
		r = zv_cr_fds_prepare(&c, inherit, ninherit);
	if (r == 0 && made) { /* a tree's process: its restorer made them */
		c.made = (struct zv_cr_made *)made;
		c.nmade = nmade;
	} else if (r == 0) {
		r = zv_cr_objects_make(&c);
	}
	if (r == 0)
		r = place_all(&c);
	zv_cr_kfree(pr.rec, pr.n * sizeof *pr.rec);
	zv_cr_kfree(c.objs, c.maxobjs * sizeof *c.objs);
	if (!made)
		zv_cr_kfree(c.made, c.maxmade * sizeof *c.made);
	zv_cr_release(p, len);
	if (r < 0)
		return -1;
	const uint8_t *l = zv_cr_get(in, "fdlocks", &llen);
	if (l == (const void *)-1)
		return -1;
	r = zv_cr_restore_locks(in, l, llen);
	if (l)
		zv_cr_release(l, llen);
	return r < 0 ? -1 : 0;
}

long zv_cr_memfd_fd(struct zv_cr_in *in, uint64_t ino)
{
	uint64_t len;
	const uint8_t *p = zv_cr_get(in, "fds", &len);
	if (!p || p == (const void *)-1)
		return -1;
	struct zv_cr_precs pr = { 0 };
	long fd = -1;
	if (zv_cr_fds_parse(in, &pr, p, len) == 0)
		for (unsigned i = 0; i < pr.n && fd < 0; i++)
			if (pr.rec[i]->kind == ZV_CRFD_MEMFD && pr.rec[i]->u.memfd.ino == ino && pr.rec[i]->fd < ZV_CR_INFLIGHT)
				fd = pr.rec[i]->fd;
	zv_cr_kfree(pr.rec, pr.n * sizeof *pr.rec);
	zv_cr_release(p, len);
	return fd;
}
