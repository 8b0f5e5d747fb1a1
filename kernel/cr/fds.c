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
#include "cr/census.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include <linux/kcmp.h>

#define O_ACCMODE_ 3
#define POLLERR_ 8
#define POLLHUP_ 16

static int readable(const struct zv_cr_ent *e) { return (e->flags & O_ACCMODE_) != O_WRONLY; }
static int writable(const struct zv_cr_ent *e) { return (e->flags & O_ACCMODE_) != O_RDONLY; }

static int same_file(const struct zv_cr_ent *a, const struct zv_cr_ent *b)
{
	return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
}

static short poll_now(int fd)
{
	struct { int fd; short events, revents; } p = { fd, 0, 0 };
	return zv_sys3(__NR_poll, &p, 1, 0) > 0 ? p.revents : 0;
}

/* The census of this process alone (cr/census.h): its own pipes, sockets
 * and connections; its fds 0-2 and each --inherit-fd N are the outside's. */
static void census_self(struct zv_cr_census *c, const struct zv_cr_ents *s, const int *inherit, int ninherit)
{
	c->self = 1;
	for (unsigned i = 0; i < s->n; i++) {
		const struct zv_cr_ent *e = &s->e[i];
		if (e->kind == ZV_CRFD_PIPE || e->kind == ZV_CRFD_FIFO)
			zv_cr_census_pipe(c, e->st.st_ino, (readable(e) ? 1 : 0) | (writable(e) ? 2 : 0));
		if (e->kind == ZV_CRFD_SOCKET || e->kind == ZV_CRFD_LISTEN)
			zv_cr_census_sock(c, e->st.st_ino);
		struct zv_cr_endpoint l, r;
		if (e->kind == ZV_CRFD_SOCKET && e->sk.domain != 1 && e->sk.peerlen &&
		    zv_cr_endpoint_of(e->sk.addr, e->sk.addrlen, &l) == 0 &&
		    zv_cr_endpoint_of(e->sk.peer, e->sk.peerlen, &r) == 0)
			zv_cr_census_conn(c, &l, &r, 0);
		if (e->kind == ZV_CRFD_SOCKET && e->sk.domain != 1 && e->sk.state == 8)
			c->tcp_held = 1; /* its peer may be a socket closed since */
		if (e->kind == ZV_CRFD_PTM || e->kind == ZV_CRFD_PTS)
			zv_cr_census_pty(c, (uint32_t)e->pty, e->kind == ZV_CRFD_PTM ? 1 : 2);
		if (e->fd <= 2 && !e->inflight)
			zv_cr_census_outside(c, e->fd, e->st.st_dev, e->st.st_ino);
	}
	zv_cr_census_proc(c, (int)zv_getpid());
	if (c->tcp_held)
		zv_cr_census_closed_peers(c);
	for (int k = 0; k < ninherit; k++)
		for (unsigned i = 0; i < s->n; i++)
			if (s->e[i].fd == inherit[k] && !s->e[i].inflight)
				zv_cr_census_outside(c, inherit[k], s->e[i].st.st_dev, s->e[i].st.st_ino);
}

/* Pipes (and FIFOs) lead outside unless the saved processes hold both a
 * reading and a writing end of them, or no one at all holds the other
 * side (the host says so: POLLHUP on a reading end, POLLERR on a writing
 * one). */
static void mark_outside_pipes(struct zv_cr_ents *s, const struct zv_cr_census *c)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		if (e->kind != ZV_CRFD_PIPE && e->kind != ZV_CRFD_FIFO)
			continue;
		uint32_t ends = zv_cr_census_pipe_ends(c, e->st.st_ino) | (readable(e) ? 1 : 0) | (writable(e) ? 2 : 0);
		if (ends == 3)
			continue;
		short ev = poll_now(e->fd);
		if ((ends == 1 && (ev & POLLHUP_)) || (ends == 2 && (ev & POLLERR_)))
			continue;
		e->kind = 0;
		e->why = c->self ? "a pipe whose other end is in another process"
				 : "a pipe whose other end is outside the saved processes";
	}
}

/* A Unix socket leads outside when connected to a socket the saved
 * processes do not hold; a TCP connection when its other end is not
 * theirs (--tcp-close: then it is saved closed). */
static void mark_outside_sockets(struct zv_cr_ents *s, const struct zv_cr_census *c, int tcp_close)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		struct zv_cr_endpoint l, r;
		if (e->kind != ZV_CRFD_SOCKET)
			continue;
		if (e->sk.domain == 1) {
			if (e->sk.peer_ino && !zv_cr_census_has_sock(c, e->sk.peer_ino)) {
				e->kind = 0;
				e->why = "a Unix socket connected to a process outside the saved ones";
			}
			continue;
		}
		if (e->sk.state == 7 || (zv_cr_endpoint_of(e->sk.addr, e->sk.addrlen, &l) == 0 &&
					 zv_cr_endpoint_of(e->sk.peer, e->sk.peerlen, &r) == 0 &&
					 zv_cr_census_has_peer(c, &l, &r)))
			continue;
		/* close-wait, its peer a socket closed since (by a process of
		 * the tree, or one that ended): nothing more can come or be
		 * taken; saved as --tcp-close saves one, its queue then the end */
		if (tcp_close || (e->sk.state == 8 && zv_cr_endpoint_of(e->sk.addr, e->sk.addrlen, &l) == 0 &&
				  zv_cr_endpoint_of(e->sk.peer, e->sk.peerlen, &r) == 0 &&
				  zv_cr_census_peer_closed(c, &l, &r))) {
			e->sk.flags |= ZV_CRSK_CLOSED;
			continue;
		}
		e->kind = 0;
		e->why = "a TCP connection to the outside (zvisor checkpoint --tcp-close saves it closed)";
	}
}

/* A pseudo-terminal's terminal leads outside unless its master is the
 * saved processes' (the user's terminal is not): it may then be the
 * restorer's (fds 0-2, as a shell job's). */
static void mark_outside_ptys(struct zv_cr_ents *s, const struct zv_cr_census *c)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		if (e->kind == ZV_CRFD_PTS && !(zv_cr_census_pty_ends(c, (uint32_t)e->pty) & 1)) {
			e->kind = 0;
			e->why = "a terminal whose pseudo-terminal master is outside the saved processes";
		}
	}
}

/* A pidfd leads outside when its process is not a saved one (one waited
 * for already is no one's). */
static void mark_outside_pidfds(struct zv_cr_ents *s, const struct zv_cr_census *c)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		if (e->kind == ZV_CRFD_PIDFD && e->pid > 0 && !zv_cr_census_has_proc(c, e->pid)) {
			e->kind = 0;
			e->why = c->self ? "a pidfd of another process" : "a pidfd of a process outside the saved ones";
		}
	}
}

/* Output to a file on fd 1 or 2 (`> log`, a test's capture file) follows
 * the restorer's like a terminal's or a pipe's: `zvisor restore DIR > out`
 * writes to out. So do the other write-only fds of that file. */
static void stdio_files_follow(struct zv_cr_ents *s, const struct zv_cr_census *c)
{
	int ok[3] = { 0, !c->self, !c->self }; /* alone: its own fd 1 or 2 is that file, written only */
	for (unsigned i = 0; c->self && i < s->n && s->e[i].fd <= 2; i++)
		if (s->e[i].fd && s->e[i].kind == ZV_CRFD_FILE && (s->e[i].flags & 3) == O_WRONLY)
			ok[s->e[i].fd] = 1;
	for (unsigned j = 0; j < s->n; j++) {
		struct zv_cr_ent *e = &s->e[j];
		int key = e->kind == ZV_CRFD_FILE && (e->flags & 3) == O_WRONLY ?
				  zv_cr_census_out_key(c, e->st.st_dev, e->st.st_ino) : -1;
		if (key > 0 && key <= 2 && ok[key])
			e->kind = 0;
	}
}

/* What leads outside but is the same file as one the restore provides
 * becomes the restorer's: fds 0-2 (the tree's root's fds 0-2; a process
 * alone: its own, which stay at their own number, so that `zvisor restore
 * DIR > out` sends fd 1 to out even when the original's fds 0-2 were one
 * terminal), or --inherit-fd N's (EXTERNAL). */
static long settle_outside(struct zv_cr_out *o, struct zv_cr_ents *s, const struct zv_cr_census *c)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct zv_cr_ent *e = &s->e[i];
		if (e->kind)
			continue;
		int which = c->self && e->fd <= 2 && !e->inflight ? e->fd : -1;
		for (unsigned j = 0; c->self && which < 0 && j < s->n && s->e[j].fd <= 2; j++)
			if (!s->e[j].inflight && zv_cr_same_description(s->e[j].fd, e->fd))
				which = s->e[j].fd;
		if (which < 0)
			which = zv_cr_census_out_key(c, e->st.st_dev, e->st.st_ino);
		if (which < 0) {
			if (e->inflight)
				return zv_cr_refuse(o, "a file in flight (%s): %s", e->link, e->why ? e->why : "cannot be saved");
			return zv_cr_refuse(o, "fd %d (%s): %s", e->fd, e->link, e->why ? e->why : "cannot be saved");
		}
		e->kind = which <= 2 ? ZV_CRFD_STDIO : ZV_CRFD_EXTERNAL;
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
		for (unsigned j = 0; j < i && !e->inflight; j++) {
			struct zv_cr_ent *f = &s->e[j];
			if (f->kind == e->kind && f->dup_of < 0 && same_file(f, e) &&
			    zv_cr_same_description(f->fd, e->fd)) {
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

long zv_cr_save_fds(struct zv_cr_out *o, const struct zv_cr_fdopts *opts)
{
	struct zv_cr_ents s;
	struct zv_cr_census self = { 0 };
	const struct zv_cr_census *c = opts->census ? opts->census : &self;
	long r = zv_cr_ents_load(o, &s, o->dirfd, opts->session);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < s.n && r == 0; i++) /* s.n grows with the files in flight */
		if (s.e[i].kind == ZV_CRFD_SOCKET)
			r = zv_cr_sock_load(o, &s, i);
	if (r < 0)
		goto out;
	if (!opts->census)
		census_self(&self, &s, opts->inherit, opts->ninherit);
	mark_outside_pipes(&s, c);
	mark_outside_sockets(&s, c, opts->tcp_close);
	mark_outside_ptys(&s, c);
	mark_outside_pidfds(&s, c);
	stdio_files_follow(&s, c);
	r = settle_outside(o, &s, c);
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
		struct zv_cr_fd rec = { .fd = e->recno, .kind = e->kind, .flags = e->flags,
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
	zv_cr_census_free(&self);
	return r < 0 ? -1 : 0;
}
