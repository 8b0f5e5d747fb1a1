/* The objects the restored fds share (cr/fdrestore.h), made once for every
 * process to restore, before any process's fds are placed, at spare
 * numbers no image uses: listening sockets first (a connection to one is
 * accepted from it), then the other sockets (pairs made together,
 * cr/sockmake.c), pipes and FIFOs, pseudo-terminals (cr/fdpty.c); then a
 * description for each record that is an end of them, the files in
 * flight, the messages queued for each
 * socket sent to it again with the files they carry, and last the
 * shutdowns, which would refuse those sends. A process alone does this
 * itself; a tree's restorer does it before it forks the tree, whose
 * processes inherit the descriptions. */
#include "cr/fdrestore.h"
#include "cr/resutil.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define SOL_SOCKET_ 1
#define SCM_RIGHTS_ 1
#define MSG_DONTWAIT_ 0x40
#define MSG_NOSIGNAL_ 0x4000
#define MAX_FDS 253

struct zv_cr_obj *zv_cr_obj_find(struct zv_cr_rctx *c, int kind, uint64_t id)
{
	for (unsigned i = 0; i < c->nobjs; i++)
		if (c->objs[i].id == id && (c->objs[i].kind == kind ||
					   ((kind == ZV_CRFD_SOCKET || kind == ZV_CRFD_LISTEN) &&
					    (c->objs[i].kind == ZV_CRFD_SOCKET || c->objs[i].kind == ZV_CRFD_LISTEN))))
			return &c->objs[i];
	return NULL;
}

struct zv_cr_obj *zv_cr_obj_new(struct zv_cr_rctx *c, int kind, uint64_t id, int p, const struct zv_cr_fd *r)
{
	if (c->nobjs == c->maxobjs) {
		unsigned max = c->maxobjs ? c->maxobjs * 2 : 64;
		struct zv_cr_obj *o = zv_cr_kalloc(max * sizeof *o);
		if (!o)
			return NULL;
		if (c->nobjs)
			memcpy(o, c->objs, c->nobjs * sizeof *o);
		zv_cr_kfree(c->objs, c->maxobjs * sizeof *o);
		c->objs = o;
		c->maxobjs = max;
	}
	struct zv_cr_obj *o = &c->objs[c->nobjs++];
	*o = (struct zv_cr_obj){ kind, id, -1, -1, p, r };
	return o;
}

/* A pipe (or a FIFO: opened for both, so no open waits and the bytes stay
 * while it is held), filled with its bytes from the record that has them. */
static long make_pipe(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	if (zv_cr_obj_find(c, r->kind, r->u.pipe.id))
		return 0;
	struct zv_cr_obj *o = zv_cr_obj_new(c, r->kind, r->u.pipe.id, p, r);
	if (!o)
		return zv_cr_fd_fail(c, r, "out of memory", 0);
	int e[2];
	long k;
	if (r->kind == ZV_CRFD_PIPE) {
		k = zv_sys2(__NR_pipe2, e, O_CLOEXEC);
	} else {
		const char *path = zv_cr_rec_extra(r);
		k = zv_openat(AT_FDCWD, path, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0);
		e[0] = e[1] = (int)k;
	}
	if (k < 0)
		return zv_cr_fd_fail(c, r, r->kind == ZV_CRFD_PIPE ? "cannot make a pipe" : "cannot open the FIFO again", k);
	o->fd = zv_cr_spare(c, e[0]);
	o->other = e[1] == e[0] ? o->fd : zv_cr_spare(c, e[1]);
	zv_close(e[0]);
	if (e[1] != e[0])
		zv_close(e[1]);
	if (o->fd < 0 || o->other < 0)
		return zv_cr_fd_fail(c, r, "no fd free for a pipe", -EMFILE);
	if ((k = zv_sys3(__NR_fcntl, o->other, F_SETPIPE_SZ, r->u.pipe.size)) < 0)
		return zv_cr_fd_fail(c, r, "cannot give the pipe its size", k);
	for (int q = 0; q < c->nprocs; q++)
		for (unsigned i = 0; i < c->procs[q].n; i++) {
			const struct zv_cr_fd *b = c->procs[q].rec[i];
			uint32_t at = b->kind == ZV_CRFD_FIFO ? zv_cr_pad8(b->u.pipe.pathlen) : 0;
			if (b->kind != r->kind || b->u.pipe.id != r->u.pipe.id || b->len <= at)
				continue;
			const char *bytes = (const char *)zv_cr_rec_extra(b) + at;
			for (uint32_t done = 0; done < b->len - at;) {
				k = zv_write(o->other, bytes + done, b->len - at - done);
				if (k <= 0)
					return zv_cr_fd_fail(c, b, "cannot put the pipe's bytes back", k ? k : -EIO);
				done += (uint32_t)k;
			}
			return 0; /* one record per pipe holds them */
		}
	return 0;
}

/* An end of a pipe or FIFO for record r: a description of its own, with
 * the record's access mode (the original may have had several). */
static long open_end(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	struct zv_cr_obj *o = zv_cr_obj_find(c, r->kind, r->u.pipe.id);
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/self/fd/%d", (r->flags & 3) == O_WRONLY ? o->other : o->fd);
	long fd = zv_openat(AT_FDCWD, path, (int)((r->flags & 3) | O_CLOEXEC | O_NONBLOCK), 0);
	if (fd < 0)
		return zv_cr_fd_fail(c, r, "cannot open an end of its pipe", fd);
	zv_sys3(__NR_fcntl, fd, F_SETFL, r->flags & (O_APPEND | O_NONBLOCK));
	int s = zv_cr_spare(c, (int)fd);
	zv_close((int)fd);
	return s < 0 ? zv_cr_fd_fail(c, r, "no fd free", s) : zv_cr_add_made(c, p, r->fd, s);
}

/* The description for record recno of process p: made now if it is
 * not yet (a file sent in a message). */
static int file_for(struct zv_cr_rctx *c, int p, int recno)
{
	int fd = zv_cr_made_fd(c, p, recno);
	if (fd >= 0)
		return fd;
	const struct zv_cr_fd *r = zv_cr_record(c, p, recno);
	while (r && r->kind == ZV_CRFD_DUP)
		r = zv_cr_record(c, p, r->u.dup_of);
	if (!r)
		return zv_cr_in_refuse(c->in, "a message names a file the image does not have (damaged image)");
	int own;
	int self = c->self;
	c->self = p; /* stdio and --inherit-fd records: the restorer's */
	long k = zv_cr_make_fd(c, r, &own);
	c->self = self;
	if (k < 0)
		return -1;
	int s = own ? zv_cr_spare(c, (int)k) : (int)k;
	if (own)
		zv_close((int)k);
	if (s < 0 || zv_cr_add_made(c, p, r->fd, s) < 0)
		return -1;
	return s;
}

/* The messages queued for socket record r (process p), sent to it again:
 * from the other end made with it, else (a socket others sent to by its
 * name) from a socket of our own. */
static long refill(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r, struct zv_cr_obj *o)
{
	const uint8_t *at = zv_cr_rec_extra(r), *end = at + r->len;
	at += zv_cr_pad8(r->u.sk.addrlen) + zv_cr_pad8(r->u.sk.peerlen);
	int from = o->other;
	long k = 0;
	if (from < 0) {
		if (r->u.sk.domain != 1 || r->u.sk.type == 1 || r->u.sk.addrlen <= 2)
			return zv_cr_fd_fail(c, r, "its queued messages cannot be sent to it again", 0);
		k = zv_sys3(__NR_socket, 1, r->u.sk.type | O_CLOEXEC, 0);
		if (k < 0)
			return zv_cr_fd_fail(c, r, "cannot make a socket", k);
		from = (int)k;
	}
	for (uint32_t m = 0; m < r->u.sk.nmsgs && k >= 0; m++) {
		const struct zv_cr_sockmsg *msg = (const void *)at;
		const int32_t *refs = (const void *)(msg + 1);
		const uint8_t *data = (const uint8_t *)msg + sizeof *msg + zv_cr_pad8(msg->nfds * 4);
		if (data + msg->len > end || msg->nfds > MAX_FDS) {
			k = zv_cr_in_refuse(c->in, "the image's fds section is damaged (fd %d's queue)", r->fd);
			break;
		}
		union { struct { size_t len; int level, type; } h; char b[16 + MAX_FDS * 4]; } cm;
		struct iov_ iov = { (void *)data, msg->len };
		struct msghdr_ mh = { 0, 0, &iov, 1, 0, 0, 0 };
		if (o->other < 0) { /* to its name */
			mh.name = (void *)((const uint8_t *)zv_cr_rec_extra(r));
			mh.namelen = (int)r->u.sk.addrlen;
		}
		if (msg->nfds) {
			cm.h.len = sizeof cm.h + msg->nfds * 4;
			cm.h.level = SOL_SOCKET_;
			cm.h.type = SCM_RIGHTS_;
			for (uint32_t f = 0; f < msg->nfds && k >= 0; f++) {
				int fd = file_for(c, p, refs[f]);
				if (fd < 0)
					k = -1;
				memcpy(cm.b + sizeof cm.h + f * 4, &fd, 4);
			}
			mh.control = &cm;
			mh.controllen = (cm.h.len + 7) & ~7UL;
		}
		if (k >= 0 && (k = zv_sys3(__NR_sendmsg, from, &mh, MSG_DONTWAIT_ | MSG_NOSIGNAL_)) != (long)msg->len)
			k = zv_cr_fd_fail(c, r, "cannot queue its messages again", k < 0 ? k : -EIO);
		at = data + zv_cr_pad8(msg->len);
	}
	if (from != o->other)
		zv_close(from);
	return k < 0 ? -1 : 0;
}

/* Shutdowns as they were (each socket's own: what its peer did shows on
 * it too, so replaying both sides' is the same state), SO_PEEK_OFF. */
static void finish_socket(const struct zv_cr_fd *r, struct zv_cr_obj *o)
{
	uint32_t sd = r->u.sk.shutdown;
	if (r->u.sk.domain == 1) {
		if (sd & 1)
			zv_sys2(__NR_shutdown, o->fd, 0 /* SHUT_RD */);
		if (sd & 2)
			zv_sys2(__NR_shutdown, o->fd, 1 /* SHUT_WR */);
	} else {
		if (sd & 2)
			zv_sys2(__NR_shutdown, o->fd, 1);
		if ((sd & 1) && o->other >= 0) /* its peer had sent everything */
			zv_sys2(__NR_shutdown, o->other, 1);
	}
	if ((r->u.sk.flags & ZV_CRSK_CLOSED) && o->other >= 0)
		zv_sys2(__NR_shutdown, o->other, 2 /* SHUT_RDWR: to the outside, closed */);
	if (r->u.sk.peek_off >= 0)
		zv_sys5(__NR_setsockopt, o->fd, SOL_SOCKET_, 42 /* SO_PEEK_OFF */, &r->u.sk.peek_off, sizeof(int));
}

/* A listening socket's object: by its inode (version 1's records have
 * none: one per record). */
static uint64_t listen_id(int p, unsigned i, const struct zv_cr_fd *r)
{
	return r->u.sock.ino ? r->u.sock.ino : ~((uint64_t)p << 32 | i);
}

#define EACH_RECORD(p, i, r) \
	for (int p = 0; p < c->nprocs; p++) \
		for (unsigned i = 0; i < c->procs[p].n; i++) \
			for (const struct zv_cr_fd *r = c->procs[p].rec[i]; r; r = NULL)

long zv_cr_objects_make(struct zv_cr_rctx *c)
{
	/* listening sockets, the other sockets, pipes and FIFOs */
	EACH_RECORD(p, i, r)
		if (r->kind == ZV_CRFD_LISTEN && !zv_cr_obj_find(c, r->kind, listen_id(p, i, r))) {
			struct zv_cr_obj *o = zv_cr_obj_new(c, r->kind, listen_id(p, i, r), p, r);
			long fd = o ? zv_cr_make_listen(c, r) : zv_cr_fd_fail(c, r, "out of memory", 0);
			if (fd < 0)
				return -1;
			o->fd = zv_cr_spare(c, (int)fd);
			zv_close((int)fd);
			if (o->fd < 0)
				return zv_cr_fd_fail(c, r, "no fd free", o->fd);
		}
	EACH_RECORD(p, i, r)
		if (r->kind == ZV_CRFD_SOCKET && zv_cr_make_socket(c, p, r) < 0)
			return -1;
	EACH_RECORD(p, i, r)
		if ((r->kind == ZV_CRFD_PIPE || r->kind == ZV_CRFD_FIFO) && make_pipe(c, p, r) < 0)
			return -1;
	EACH_RECORD(p, i, r)
		if (r->kind == ZV_CRFD_PTM && zv_cr_make_pty(c, p, r) < 0)
			return -1;
	/* a description for each record of them */
	EACH_RECORD(p, i, r) {
		long k = 0;
		if (r->kind == ZV_CRFD_PIPE || r->kind == ZV_CRFD_FIFO) {
			k = open_end(c, p, r);
		} else if (r->kind == ZV_CRFD_PTM || r->kind == ZV_CRFD_PTS) {
			k = zv_cr_pty_end(c, p, r);
		} else if (r->kind == ZV_CRFD_SOCKET || r->kind == ZV_CRFD_LISTEN) {
			struct zv_cr_obj *o = zv_cr_obj_find(c, r->kind, r->kind == ZV_CRFD_SOCKET ? r->u.sk.ino
											      : listen_id(p, i, r));
			zv_sys3(__NR_fcntl, o->fd, F_SETFL, r->flags & (O_APPEND | O_NONBLOCK));
			k = zv_cr_add_made(c, p, r->fd, o->fd);
		}
		if (k < 0)
			return -1;
	}
	/* the files in flight, the queues, then the shutdowns */
	EACH_RECORD(p, i, r)
		if (r->fd >= ZV_CR_INFLIGHT && file_for(c, p, r->fd) < 0)
			return -1;
	EACH_RECORD(p, i, r) {
		struct zv_cr_obj *o = r->kind == ZV_CRFD_SOCKET ? zv_cr_obj_find(c, r->kind, r->u.sk.ino) : NULL;
		if (o && o->rec == r && r->u.sk.nmsgs && refill(c, p, r, o) < 0)
			return -1;
	}
	EACH_RECORD(p, i, r) {
		struct zv_cr_obj *o = r->kind == ZV_CRFD_SOCKET ? zv_cr_obj_find(c, r->kind, r->u.sk.ino) : NULL;
		if (o && o->rec == r)
			finish_socket(r, o);
		if (r->kind == ZV_CRFD_PTM)
			zv_cr_pty_finish(c, r);
	}
	return 0;
}
