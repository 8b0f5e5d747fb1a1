/* Restoring the process's file descriptors from a checkpoint (sections
 * "fds" and "fdlocks", cr/fdimage.h) in a fresh process: the restorer's
 * own fds 0-2 and the image's directory are moved to numbers the image
 * does not use first; every fd is then made (cr/fdmake.c) and put at its number
 * with its close-on-exec flag, dups after what they share, epoll sets
 * filled once every target exists; the fds the image does not have are
 * closed (all but in->dirfd), and the locks are taken last, since closing
 * any fd of a file drops the process's POSIX locks on it. */
#include "cr/fdrestore.h"
#include "cr/resources.h"
#include "cr/resutil.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include <linux/eventpoll.h>

/* The records of section "fds", checked for size, into c->rec. */
static long parse(struct zv_cr_rctx *c, const uint8_t *p, uint64_t len)
{
	const struct zv_cr_fds_head *h = (const void *)p;
	if (len < sizeof *h || h->magic != ZV_CR_FDS_MAGIC)
		return zv_cr_in_refuse(c->in, "the image's fds section is damaged");
	if (h->version != ZV_CR_FDS_VERSION)
		return zv_cr_in_refuse(c->in, "the image's fds section has version %u, not %u", h->version,
				       ZV_CR_FDS_VERSION);
	if (h->count > len / sizeof(struct zv_cr_fd))
		return zv_cr_in_refuse(c->in, "the image's fds section is damaged");
	c->n = h->count;
	c->rec = zv_cr_kalloc(c->n * sizeof *c->rec + c->n * sizeof *c->pipes);
	if (!c->rec)
		return zv_cr_in_refuse(c->in, "out of memory restoring the file descriptors");
	c->pipes = (void *)(c->rec + c->n);
	uint64_t off = sizeof *h;
	int last = -1;
	for (unsigned i = 0; i < c->n; i++) {
		const struct zv_cr_fd *r = (const void *)(p + off);
		if (off > len || len - off < sizeof *r || len - off - sizeof *r < r->len || r->fd <= last ||
		    (r->kind == ZV_CRFD_DUP && (r->u.dup_of < 0 || r->u.dup_of >= r->fd)) ||
		    (r->kind == ZV_CRFD_EPOLL && r->u.epoll.ntargets > r->len / sizeof(struct zv_cr_epoll_target)) ||
		    (r->kind <= ZV_CRFD_CHR && (!r->len || ((const char *)(r + 1))[r->len - 1])) ||
		    (r->kind == ZV_CRFD_MEMFD && (!r->u.memfd.namelen || r->u.memfd.namelen > r->len ||
						  r->len - r->u.memfd.namelen != r->u.memfd.size ||
						  ((const char *)(r + 1))[r->u.memfd.namelen - 1])))
			return zv_cr_in_refuse(c->in, "the image's fds section is damaged (record %u)", i);
		c->rec[i] = r;
		last = r->fd;
		off += sizeof *r + zv_cr_pad8(r->len);
	}
	c->top = last;
	c->next_spare = 3;
	return 0;
}

static int in_image(struct zv_cr_rctx *c, long fd)
{
	unsigned lo = 0, hi = c->n;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (c->rec[mid]->fd == fd)
			return 1;
		if (c->rec[mid]->fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Spare numbers are searched from 3 up: above the image's highest fd there
 * may be no room (the kernel's hidden fds sit just under the limit). */
int zv_cr_spare(struct zv_cr_rctx *c, int fd)
{
	for (;;) {
		long n = zv_sys3(__NR_fcntl, fd, F_DUPFD_CLOEXEC, c->next_spare);
		if (n < 0)
			return (int)n;
		c->next_spare = (int)n + 1;
		if (!in_image(c, n))
			return (int)n;
		/* n is the image's: keep it taken until the image's fd is
		 * put there (dup3 replaces it), so the search moves on. */
	}
}

/* Room for the image's highest fd and a few spare ones; rlimits proper come
 * back with the timers. */
static long raise_nofile(struct zv_cr_rctx *c)
{
	struct { uint64_t cur, max; } lim;
	uint64_t need = (uint64_t)c->top + 1;
	if (zv_sys4(__NR_prlimit64, 0, 7 /* RLIMIT_NOFILE */, NULL, &lim) < 0 || lim.cur >= need + 16)
		return 0;
	if (lim.max < need)
		return zv_cr_in_refuse(c->in, "fd %d is above this process's fd limit (%lu)", c->top,
				       (unsigned long)lim.max);
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

static int is_stdio(struct zv_cr_rctx *c, int fd)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->rec[i]->fd == fd)
			return c->rec[i]->kind == ZV_CRFD_STDIO;
	return 0;
}

static long fill_epoll(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	const struct zv_cr_epoll_target *t = zv_cr_rec_extra(r);
	for (uint32_t i = 0; i < r->u.epoll.ntargets; i++) {
		struct epoll_event ev = { .events = t[i].events, .data = t[i].data };
		long e = zv_sys4(__NR_epoll_ctl, r->fd, EPOLL_CTL_ADD, t[i].fd, &ev);
		if (e == -EPERM && is_stdio(c, t[i].fd))
			continue; /* the restorer's stdio is a regular file, always ready */
		if (e < 0)
			return zv_cr_in_refuse(c->in, "fd %d: cannot watch fd %d again: %s", r->fd, t[i].fd,
					       zv_strerror((int)-e));
	}
	return 0;
}

/* Closes every fd the image does not have, but in->dirfd: the restorer's
 * moved copies, the pipes' spare ends, whatever it had open. */
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
			    !in_image(c, (long)fd))
				close_fd[n++] = (int)fd;
		}
		for (int i = 0; i < n; i++)
			zv_close(close_fd[i]);
	}
	zv_close((int)dfd);
	return 0;
}

static long restore(struct zv_cr_rctx *c, const uint8_t *p, uint64_t len)
{
	if (parse(c, p, len) < 0 || raise_nofile(c) < 0)
		return -1;
	int dirfd = zv_cr_spare(c, c->in->dirfd);
	if (dirfd < 0)
		return zv_cr_in_refuse(c->in, "no fd free beside the image's");
	zv_close(c->in->dirfd);
	c->in->dirfd = dirfd;
	for (int i = 0; i < 3; i++)
		c->stdio[i] = zv_sys3(__NR_fcntl, i, F_GETFD, 0) < 0 ? -1 : zv_cr_spare(c, i);
	for (unsigned i = 0; i < c->n; i++) {
		const struct zv_cr_fd *r = c->rec[i];
		if (r->kind == ZV_CRFD_DUP)
			continue;
		int own;
		long fd = zv_cr_make_fd(c, r, &own);
		if (fd < 0 || place(c, r, fd, own) < 0)
			return -1;
	}
	for (unsigned i = 0; i < c->n; i++) {
		const struct zv_cr_fd *r = c->rec[i];
		if (r->kind == ZV_CRFD_DUP && place(c, r, r->u.dup_of, 0) < 0)
			return -1;
	}
	for (unsigned i = 0; i < c->n; i++)
		if (c->rec[i]->kind == ZV_CRFD_EPOLL && fill_epoll(c, c->rec[i]) < 0)
			return -1;
	return close_others(c);
}

long zv_cr_restore_fds(struct zv_cr_in *in)
{
	uint64_t len, llen;
	const uint8_t *p = zv_cr_get(in, "fds", &len);
	if (p == (const void *)-1)
		return -1;
	if (!p)
		return zv_cr_in_refuse(in, "the image has no fds section");
	struct zv_cr_rctx c = { .in = in, .stdio = { -1, -1, -1 } };
	long r = restore(&c, p, len);
	zv_cr_kfree(c.rec, c.n * sizeof *c.rec + c.n * sizeof *c.pipes);
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
	struct zv_cr_rctx c = { .in = in };
	long fd = -1;
	if (parse(&c, p, len) == 0)
		for (unsigned i = 0; i < c.n && fd < 0; i++)
			if (c.rec[i]->kind == ZV_CRFD_MEMFD && c.rec[i]->u.memfd.ino == ino)
				fd = c.rec[i]->fd;
	zv_cr_kfree(c.rec, c.n * sizeof *c.rec + c.n * sizeof *c.pipes);
	zv_cr_release(p, len);
	return fd;
}
