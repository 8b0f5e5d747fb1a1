/* Saving the process's file descriptors into a checkpoint (sections "fds"
 * and "fdlocks", cr/fdimage.h). Runs on the checkpointing thread while the
 * other guest threads are frozen, and changes nothing the guest can see:
 * pipes' bytes are copied with tee(2), which leaves them in the pipe, and
 * no file the guest has open is opened (closing it would drop the
 * process's POSIX locks on it). What the host would have to re-create from
 * outside the process is refused, with one line naming the fd, unless it
 * is the same file as fd 0, 1 or 2: then it becomes the restorer's. */
#include "cr/fdent.h"
#include "cr/resutil.h"
#include "cr/fdimage.h"
#include "cr/procfile.h"
#include "cr/resources.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include <linux/kcmp.h>

#define O_ACCMODE_ 3

static int readable(const struct zv_cr_ent *e) { return (e->flags & O_ACCMODE_) != O_WRONLY; }
static int writable(const struct zv_cr_ent *e) { return (e->flags & O_ACCMODE_) != O_RDONLY; }

static int same_file(const struct zv_cr_ent *a, const struct zv_cr_ent *b)
{
	return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
}

/* Whether fds a and b share one open file description (dup): kcmp, or,
 * where it is missing or forbidden (container seccomp profiles), whether
 * flipping O_NONBLOCK on a shows on b: the guest is frozen, and the flag
 * is put back at once. */
static int same_description(int a, int b)
{
	static int no_kcmp;
	long pid = zv_getpid();
	if (!no_kcmp) {
		long r = zv_sys5(__NR_kcmp, pid, pid, KCMP_FILE, a, b);
		if (r >= 0)
			return r == 0;
		no_kcmp = 1;
	}
	long fa = zv_sys3(__NR_fcntl, a, F_GETFL, 0), fb = zv_sys3(__NR_fcntl, b, F_GETFL, 0);
	if (fa < 0 || fb < 0 || ((fa ^ fb) & O_NONBLOCK) || (fa & O_PATH) ||
	    zv_sys3(__NR_fcntl, a, F_SETFL, fa ^ O_NONBLOCK) < 0)
		return 0;
	long now = zv_sys3(__NR_fcntl, b, F_GETFL, 0);
	zv_sys3(__NR_fcntl, a, F_SETFL, fa);
	return now >= 0 && ((now ^ fb) & O_NONBLOCK);
}

/* Pipes reach outside unless the process has both a reading and a writing
 * end of them. */
static void mark_outside_pipes(struct zv_cr_ents *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		if (e->kind != ZV_CRFD_PIPE)
			continue;
		int r = 0, w = 0;
		for (unsigned j = 0; j < s->n; j++)
			if (s->e[j].kind == ZV_CRFD_PIPE && same_file(&s->e[j], e)) {
				r |= readable(&s->e[j]);
				w |= writable(&s->e[j]);
			}
		if (!(r && w)) {
			e->kind = 0;
			e->why = "a pipe whose other end is in another process";
		}
	}
}

/* Output to a file on fd 1 or 2 (`> log`, a test's capture file) follows
 * the restorer's like a terminal's or a pipe's: `zvisor restore DIR > out`
 * writes to out. So do the other write-only fds of that file. */
static void stdio_files_follow(struct zv_cr_ents *s)
{
	for (unsigned i = 0; i < s->n && s->e[i].fd <= 2; i++) {
		struct zv_cr_ent *o = &s->e[i];
		if (o->fd == 0 || o->kind != ZV_CRFD_FILE || (o->flags & 3) != O_WRONLY)
			continue;
		for (unsigned j = 0; j < s->n; j++)
			if (s->e[j].kind == ZV_CRFD_FILE && (s->e[j].flags & 3) == O_WRONLY && same_file(&s->e[j], o))
				s->e[j].kind = 0;
	}
}

/* What cannot be saved but is the same file as fd 0, 1 or 2 becomes a dup
 * of the restorer's: fds 0-2 themselves stay at their own number (so that
 * `zvisor restore DIR > out` sends fd 1 to out even when the original's
 * fds 0-2 were one terminal). */
static long settle_outside(struct zv_cr_out *o, struct zv_cr_ents *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		if (e->kind)
			continue;
		int which = e->fd <= 2 ? e->fd : -1;
		for (unsigned j = 0; which < 0 && j < s->n && s->e[j].fd <= 2; j++)
			if (same_description(s->e[j].fd, e->fd))
				which = s->e[j].fd;
		for (unsigned j = 0; which < 0 && j < s->n && s->e[j].fd <= 2; j++)
			if (same_file(&s->e[j], e))
				which = s->e[j].fd;
		if (which < 0)
			return zv_cr_refuse(o, "fd %d (%s): %s", e->fd, e->link,
					    e->why ? e->why : "cannot be saved");
		e->kind = ZV_CRFD_STDIO;
		e->stdio = which;
	}
	return 0;
}

/* fds sharing a description with a lower fd are saved as its dups. */
static void find_dups(struct zv_cr_ents *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		e->dup_of = -1;
		if (e->kind == ZV_CRFD_STDIO)
			continue;
		for (unsigned j = 0; j < i; j++) {
			struct zv_cr_ent *f = &s->e[j];
			if (f->kind == e->kind && f->dup_of < 0 && same_file(f, e) &&
			    same_description(f->fd, e->fd)) {
				e->dup_of = f->fd;
				break;
			}
		}
	}
}

static void put_record(struct zv_cr_buf *b, struct zv_cr_fd *r, const void *extra)
{
	zv_cr_buf_put(b, r, sizeof *r);
	if (r->len)
		zv_cr_buf_put(b, extra, r->len);
}

long zv_cr_save_fds(struct zv_cr_out *o)
{
	struct zv_cr_ents s;
	long r = zv_cr_ents_load(o, &s, o->dirfd);
	if (r < 0)
		return r;
	mark_outside_pipes(&s);
	stdio_files_follow(&s);
	r = settle_outside(o, &s);
	if (r < 0)
		goto out;
	find_dups(&s);

	struct zv_cr_buf fds = { 0 }, locks = { 0 };
	struct zv_cr_fds_head h = { ZV_CR_FDS_MAGIC, ZV_CR_FDS_VERSION, 0, 0 };
	zv_cr_buf_put(&fds, &h, sizeof h);
	h.magic = ZV_CR_LOCKS_MAGIC;
	zv_cr_buf_put(&locks, &h, sizeof h);
	for (unsigned i = 0; i < s.n && r == 0; i++) {
		struct zv_cr_ent *e = &s.e[i];
		struct zv_cr_fd rec = { .fd = e->fd, .kind = e->kind, .flags = e->flags,
					.fdflags = e->fdflags, .pos = e->pos };
		struct zv_cr_extra x = { 0 };
		if (e->dup_of >= 0) {
			rec.kind = ZV_CRFD_DUP;
			rec.u.dup_of = e->dup_of;
		} else {
			r = zv_cr_describe(o, &s, e, &rec, &x);
			if (r == 0)
				r = zv_cr_save_locks(o, &s, e, &locks);
		}
		if (r == 0) {
			put_record(&fds, &rec, x.p);
			if (!fds.failed)
				((struct zv_cr_fds_head *)fds.p)->count++;
		}
		zv_cr_extra_free(&x);
	}
	if (r == 0 && (fds.failed || locks.failed))
		r = zv_cr_refuse(o, "out of memory saving the file descriptors");
	if (r == 0)
		r = zv_cr_put(o, "fds", fds.p, fds.len);
	if (r == 0)
		r = zv_cr_put(o, "fdlocks", locks.p, locks.len);
	zv_cr_buf_free(&fds);
	zv_cr_buf_free(&locks);
out:
	zv_cr_ents_free(&s);
	return r < 0 ? -1 : 0;
}
