/* An inotify instance across a checkpoint (DESIGN 24): its watches (fdinfo
 * "inotify wd:" lines: number, inode, device, mask) with the paths noted
 * as they were added (cr/inotify_notes.c), added again at restore so that
 * each gets its old number. Events not yet read would be lost: refused. */
#include "zvisor.h"
#include "cr/fdent.h"
#include "cr/fdrestore.h"
#include "cr/procfile.h"
#include "cr/cr.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define FIONREAD_ 0x541b
#define IN_DONT_FOLLOW_ 0x02000000
#define MAX_SKIP 65536 /* numbers made and dropped to reach a watch's */

/* fdinfo's sdev is the kernel's own dev_t (major << 20 | minor); stat's
 * st_dev the encoding user space sees. */
static uint64_t user_dev(uint64_t kdev)
{
	uint64_t major = kdev >> 20, minor = kdev & 0xfffff;
	return (minor & 0xff) | (major & 0xfff) << 8 | (minor & ~0xffULL) << 12 | (major & ~0xfffULL) << 32;
}

static long refuse(struct zv_cr_out *o, const struct zv_cr_ent *e, const char *why)
{
	return zv_cr_refuse(o, "fd %d (%s): %s", e->fd, e->link, why);
}

/* The value after key in one line of fdinfo (fields side by side), or NULL. */
static const char *in_line(const char *l, const char *key)
{
	size_t k = zv_strlen(key);
	for (; *l && *l != '\n'; l++)
		if (l[0] == ' ' && !zv_strncmp(l + 1, key, k))
			return l + 1 + k;
	return NULL;
}

struct watch { int32_t wd; uint32_t mask; uint64_t ino, dev; };

long zv_cr_describe_inotify(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			    struct zv_cr_fd *rec, struct zv_cr_extra *x)
{
	int queued = 0;
	if (zv_sys3(__NR_ioctl, e->fd, FIONREAD_, &queued) < 0 || queued > 0)
		return refuse(o, e, "an inotify instance with events not yet read");
	if (zv_cr_fdinfo(s, e->fd) < 0)
		return refuse(o, e, "cannot read its fdinfo");
	/* the watches, newest first in fdinfo: sorted by number */
	struct zv_cr_buf ws = { 0 };
	uint32_t n = 0;
	for (const char *l = s->info; l; l = zv_cr_next_line(l)) {
		if (!zv_startswith(l, "inotify wd:"))
			continue;
		const char *ino = in_line(l, "ino:"), *dev = in_line(l, "sdev:"), *mask = in_line(l, "mask:");
		struct watch w = { (int32_t)zv_cr_hex(l + 11, NULL), mask ? (uint32_t)zv_cr_hex(mask, NULL) : 0,
				   ino ? zv_cr_hex(ino, NULL) : 0, dev ? user_dev(zv_cr_hex(dev, NULL)) : 0 };
		zv_cr_buf_put(&ws, &w, sizeof w);
		n++;
	}
	struct watch *w = (struct watch *)ws.p;
	for (uint32_t i = 1; i < n && !ws.failed; i++)
		for (uint32_t j = i; j > 0 && w[j - 1].wd > w[j].wd; j--) {
			struct watch t = w[j];
			w[j] = w[j - 1];
			w[j - 1] = t;
		}
	struct zv_cr_buf b = { 0 };
	const char *why = ws.failed ? "out of memory for its watches" : NULL;
	for (uint32_t i = 0; i < n && !why; i++) {
		int nofollow = 0;
		const char *path = zv_cr_inotify_path(w[i].dev, w[i].ino, &nofollow);
		struct stat st;
		if (!path) {
			why = "an inotify watch whose file zvisor did not see added";
			break;
		}
		if (zv_sys4(__NR_newfstatat, AT_FDCWD, path, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0) < 0 ||
		    st.st_ino != w[i].ino || st.st_dev != w[i].dev) {
			why = "an inotify watch whose file was renamed or removed since";
			break;
		}
		struct zv_cr_inwatch r = { w[i].wd, w[i].mask | (nofollow ? IN_DONT_FOLLOW_ : 0),
					   (uint32_t)zv_strlen(path) + 1, 0 };
		zv_cr_buf_put(&b, &r, sizeof r);
		zv_cr_buf_put(&b, path, r.pathlen);
	}
	zv_cr_buf_free(&ws);
	if (!why && b.failed)
		why = "out of memory for its watches";
	if (why) {
		zv_cr_buf_free(&b);
		return refuse(o, e, why);
	}
	rec->u.inotify.nwatches = n;
	x->p = b.p;
	x->size = b.cap;
	rec->len = (uint32_t)b.len;
	return 0;
}

/* Whether the record's watches lie within its bytes, each path ended. */
static int whole_record(const struct zv_cr_fd *r)
{
	const uint8_t *p = zv_cr_rec_extra(r), *end = p + r->len;
	for (uint32_t i = 0; i < r->u.inotify.nwatches; i++) {
		const struct zv_cr_inwatch *w = (const void *)p;
		const char *path = (const char *)(w + 1);
		if (p + sizeof *w > end || w->pathlen == 0 || w->pathlen > (uint64_t)(end - (const uint8_t *)path) ||
		    path[w->pathlen - 1])
			return 0;
		p += sizeof *w + ((w->pathlen + 7) & ~7U);
	}
	return 1;
}

/* A file none of the record's watches is, to make numbers on, or NULL. */
static const char *pick_dummy(const struct zv_cr_fd *r)
{
	static const char *const dummies[] = { "/", "/proc", "/dev", "/sys" };
	for (unsigned d = 0; d < sizeof dummies / sizeof dummies[0]; d++) {
		struct stat ds, ws;
		if (zv_sys2(__NR_stat, dummies[d], &ds) < 0)
			continue;
		int taken = 0;
		const uint8_t *q = zv_cr_rec_extra(r);
		for (uint32_t k = 0; k < r->u.inotify.nwatches && !taken; k++) {
			const struct zv_cr_inwatch *v = (const void *)q;
			taken = zv_sys2(__NR_stat, (const char *)(v + 1), &ws) == 0 && ws.st_dev == ds.st_dev &&
				ws.st_ino == ds.st_ino;
			q += sizeof *v + ((v->pathlen + 7) & ~7U);
		}
		if (!taken)
			return dummies[d];
	}
	return NULL;
}

/* Watch numbers come from a counter that goes on from the last one made:
 * a number the image skips is made on a dummy file and dropped, and the
 * IN_IGNORED events the drops queue are read away before the program runs. */
long zv_cr_make_inotify(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	if (!whole_record(r))
		return zv_cr_in_refuse(c->in, "fd %d: a damaged inotify record", r->fd);
	long fd = zv_sys1(__NR_inotify_init1, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return zv_cr_fd_fail(c, r, "cannot make an inotify instance", fd);
	const uint8_t *p = zv_cr_rec_extra(r);
	const char *dummy = NULL;
	int next = 1, skipped = 0;
	long e = 0;
	for (uint32_t i = 0; i < r->u.inotify.nwatches && e >= 0; i++) {
		const struct zv_cr_inwatch *w = (const void *)p;
		const char *path = (const char *)(w + 1);
		p += sizeof *w + ((w->pathlen + 7) & ~7U);
		while (next < w->wd) {
			if ((!dummy && !(dummy = pick_dummy(r))) || ++skipped > MAX_SKIP) {
				e = -ENOSPC;
				break;
			}
			if ((e = zv_sys3(__NR_inotify_add_watch, fd, dummy, 0x00000004 /* IN_ATTRIB */)) < 0)
				break;
			next = (int)e + 1;
			zv_sys2(__NR_inotify_rm_watch, fd, e);
		}
		if (e >= 0)
			e = zv_sys3(__NR_inotify_add_watch, fd, path, w->mask);
		if (e >= 0 && e != w->wd)
			e = -EBADSLT;
		if (e >= 0)
			next = (int)e + 1;
		if (e < 0) {
			zv_close((int)fd);
			return zv_cr_in_refuse(c->in, "fd %d: cannot watch %s again as watch %d: %s", r->fd, path, w->wd,
					       zv_strerror((int)-e));
		}
	}
	char drain[4096];
	while (zv_read((int)fd, drain, sizeof drain) > 0)
		;
	return fd;
}
