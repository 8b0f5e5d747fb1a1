/* Sockets in a checkpoint (cr/fdimage.h's SOCKET records): a Unix socket
 * in any state but listening (cr/fdkinds.c keeps listening ones), or a TCP
 * one, connected or not. Read while the guest is frozen, and left as they
 * were: the messages queued for it to receive are peeked (SO_PEEK_OFF
 * walks the queue, then is put back), and the files they carry in flight
 * (SCM_RIGHTS), which a peek gives this process as new fds, become files
 * of the image: the fd of the process whose description they share, or a
 * record of their own (cr/fdscan.c). Whether a socket leads outside the
 * saved processes is cr/fds.c's question. */
#include "cr/cr.h"
#include "cr/fdent.h"
#include "cr/sockdiag.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define SOL_SOCKET_ 1
#define SO_PEEK_OFF_ 42
#define SO_PASSCRED_ 16
#define SO_KEEPALIVE_ 9
#define SCM_RIGHTS_ 1
#define MSG_PEEK_ 2
#define MSG_DONTWAIT_ 0x40
#define MSG_CMSG_CLOEXEC_ 0x40000000
#define SIOCINQ_ 0x541b
#define SIOCOUTQ_ 0x5411
#define MAX_FDS 253          /* SCM_MAX_FD */
#define QUEUE_MAX (64UL << 20)

static long refuse(struct zv_cr_out *o, const struct zv_cr_ent *e, const char *why)
{
	return zv_cr_refuse(o, "fd %d (%s): %s", e->fd, e->link, why);
}

static int opt(int fd, int level, int name)
{
	int v = 0, len = sizeof v;
	return zv_sys5(__NR_getsockopt, fd, level, name, &v, &len) < 0 ? -1 : v;
}

/* The record number standing for a file received in flight (fd: this
 * saver's copy): an fd of the process or a file already in flight that
 * shares its description, else a new file in flight. -1: refused. */
static long inflight_ref(struct zv_cr_out *o, struct zv_cr_ents *s, int fd)
{
	struct stat st;
	if (zv_sys2(__NR_fstat, fd, &st) < 0) {
		zv_close(fd);
		return zv_cr_refuse(o, "a file in flight cannot be examined");
	}
	for (unsigned i = 0; i < s->n; i++) {
		const struct zv_cr_ent *f = &s->e[i];
		if (f->st.st_dev == st.st_dev && f->st.st_ino == st.st_ino && zv_cr_same_description(f->fd, fd)) {
			zv_close(fd);
			return f->recno;
		}
	}
	long i = zv_cr_ents_add_inflight(o, s, fd);
	return i < 0 ? -1 : s->e[i].recno;
}

static void put_message(struct zv_cr_buf *q, const char *data, long k, const int32_t *refs, int nfds)
{
	struct zv_cr_sockmsg msg = { (uint32_t)k, (uint32_t)nfds };
	zv_cr_buf_put(q, &msg, sizeof msg);
	if (nfds)
		zv_cr_buf_put(q, refs, (size_t)nfds * 4);
	if (k)
		zv_cr_buf_put(q, data, (size_t)k);
}

/* The messages queued for socket i, into its queue buffer. */
static long peek_queue(struct zv_cr_out *o, struct zv_cr_ents *s, unsigned i)
{
	int fd = s->e[i].fd, stream = s->e[i].sk.type == 1;
	int is_unix = s->e[i].sk.domain == 1;
	uint64_t size = 1UL << 18; /* more than a Unix datagram can hold */
	if (!is_unix) { /* TCP: one peek of all of it */
		int inq = 0;
		if (zv_sys3(__NR_ioctl, fd, SIOCINQ_, &inq) < 0 || inq <= 0)
			return 0;
		size = (uint64_t)inq;
	}
	char *buf = zv_cr_kalloc(size);
	if (!buf)
		return refuse(o, &s->e[i], "out of memory for its queue");
	long r = 0;
	if (is_unix)
		zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, SO_PEEK_OFF_, &(int){ 0 }, sizeof(int));
	for (uint64_t total = 0, n = 0; r == 0; n++) {
		union { struct { size_t len; int level, type; } h; char b[32 + MAX_FDS * 4]; } c;
		struct iov_ iov = { buf, size };
		struct msghdr_ m = { 0, 0, &iov, 1, is_unix ? &c : NULL, is_unix ? sizeof c : 0, 0 };
		long k = zv_sys3(__NR_recvmsg, fd, &m, MSG_PEEK_ | MSG_DONTWAIT_ | MSG_CMSG_CLOEXEC_);
		if (k == -EAGAIN || k == -EINTR)
			break;
		if (k < 0) {
			r = refuse(o, &s->e[i], "cannot read its queue");
			break;
		}
		int nfds = 0, fds[MAX_FDS];
		if (m.controllen >= sizeof c.h && c.h.level == SOL_SOCKET_ && c.h.type == SCM_RIGHTS_) {
			nfds = (int)((c.h.len - sizeof c.h) / 4);
			memcpy(fds, c.b + sizeof c.h, (size_t)nfds * 4);
		}
		if (k == 0 && !nfds && (stream || (s->e[i].sk.shutdown & 1)))
			break; /* the end: its peer shut down */
		/* A stream peek that gives fds joins the bytes of the messages
		 * before the one carrying them, and neither a peek nor a read
		 * tells where it starts (a read gives its fds with its first
		 * byte); they go with the last byte, so the messages before
		 * read as none. */
		long before = stream && nfds && k > 1 ? k - 1 : 0;
		int32_t refs[MAX_FDS];
		for (int f = 0; f < nfds; f++) {
			long ref = r == 0 ? inflight_ref(o, s, fds[f]) : (zv_close(fds[f]), -1);
			if (ref < 0)
				r = -1;
			refs[f] = (int32_t)ref;
		}
		struct zv_cr_buf *q = &s->e[i].sk.queue; /* s->e may have moved */
		if (before) {
			put_message(q, buf, before, NULL, 0);
			s->e[i].sk.nmsgs++;
		}
		put_message(q, buf + before, k - before, refs, nfds);
		s->e[i].sk.nmsgs++;
		total += (uint64_t)k;
		if (!is_unix)
			break;
		if (total > QUEUE_MAX || n > 65536 || q->failed)
			r = refuse(o, &s->e[i], "too much queued for it, or out of memory");
	}
	if (is_unix)
		zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, SO_PEEK_OFF_, &s->e[i].sk.peek_off, sizeof(int));
	zv_cr_kfree(buf, size);
	return r;
}

/* TCP: bytes sent but not yet in the peer's queue (loopback delivers them
 * at once unless the peer's window is full): waited for a little. */
static long unsent(struct zv_cr_out *o, struct zv_cr_ent *e)
{
	for (int tries = 0; tries < 50; tries++) {
		int outq = 0;
		if (zv_sys3(__NR_ioctl, e->fd, SIOCOUTQ_, &outq) < 0 || outq == 0)
			return 0;
		struct { long s, ns; } ts = { 0, 2000000 };
		zv_sys2(__NR_nanosleep, &ts, NULL);
	}
	return refuse(o, e, "a TCP connection whose peer has not taken all that was sent to it");
}

long zv_cr_sock_load(struct zv_cr_out *o, struct zv_cr_ents *s, unsigned i)
{
	struct zv_cr_ent *e = &s->e[i];
	struct zv_cr_sockent *k = &e->sk;
	k->domain = opt(e->fd, SOL_SOCKET_, 39 /* SO_DOMAIN */);
	k->type = opt(e->fd, SOL_SOCKET_, 3 /* SO_TYPE */);
	k->protocol = opt(e->fd, SOL_SOCKET_, 38 /* SO_PROTOCOL */);
	k->peek_off = opt(e->fd, SOL_SOCKET_, SO_PEEK_OFF_);
	int alen = sizeof k->addr, plen = sizeof k->peer;
	if (zv_sys3(__NR_getsockname, e->fd, k->addr, &alen) < 0)
		return refuse(o, e, "getsockname failed");
	k->addrlen = (uint32_t)alen;
	k->peerlen = zv_sys3(__NR_getpeername, e->fd, k->peer, &plen) == 0 ? (uint32_t)plen : 0;
	if (opt(e->fd, SOL_SOCKET_, SO_PASSCRED_) > 0)
		k->flags |= ZV_CRSK_PASSCRED;
	if (opt(e->fd, SOL_SOCKET_, SO_KEEPALIVE_) > 0)
		k->flags |= ZV_CRSK_KEEPALIVE;
	if (k->domain == 1) {
		struct zv_cr_unix_diag d;
		long r = zv_cr_unix_diag(e->st.st_ino, &d);
		if (r < 0)
			return refuse(o, e, "sock_diag cannot describe it");
		k->state = d.state;
		k->peer_ino = d.peer_ino;
		k->shutdown = d.shutdown;
		if (d.state != 1 && d.state != 7)
			return refuse(o, e, "a Unix socket in the middle of connecting");
		if (d.state == 1 && !d.peer_ino)
			k->flags |= ZV_CRSK_PEER_GONE;
	} else {
		uint8_t info[8];
		int ilen = sizeof info;
		if (zv_sys5(__NR_getsockopt, e->fd, 6 /* IPPROTO_TCP */, 11 /* TCP_INFO */, info, &ilen) < 0)
			return refuse(o, e, "cannot read its TCP state");
		k->state = info[0];
		if (opt(e->fd, 6, 1 /* TCP_NODELAY */) > 0)
			k->flags |= ZV_CRSK_NODELAY;
		/* 1 established; 8 close-wait: its peer is done sending; 4, 5
		 * fin-wait: it is done sending; 7: not connected */
		if (k->state == 8)
			k->shutdown = 1;
		else if (k->state == 4 || k->state == 5)
			k->shutdown = 2;
		else if (k->state != 1 && k->state != 7)
			return refuse(o, e, "a TCP connection that is opening or closing");
	}
	return k->state == 7 && k->domain != 1 ? 0 : peek_queue(o, s, i);
}

long zv_cr_describe_socket(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec, struct zv_cr_extra *x)
{
	struct zv_cr_sockent *k = &e->sk;
	/* established, close-wait, and fin-wait-1: shut down for writing with
	 * bytes (and the FIN) not yet taken by the peer, which the image
	 * would otherwise lose (only the peer's queue is saved) */
	if (k->domain != 1 && (k->state == 1 || k->state == 8 || k->state == 4) && !(k->flags & ZV_CRSK_CLOSED) &&
	    unsent(o, e) < 0)
		return -1;
	rec->u.sk.domain = k->domain;
	rec->u.sk.type = k->type;
	rec->u.sk.protocol = k->protocol;
	rec->u.sk.state = k->state;
	rec->u.sk.ino = e->st.st_ino;
	rec->u.sk.peer_ino = k->peer_ino;
	rec->u.sk.shutdown = k->shutdown;
	rec->u.sk.flags = k->flags;
	rec->u.sk.addrlen = k->addrlen;
	rec->u.sk.peerlen = k->peerlen;
	rec->u.sk.nmsgs = k->nmsgs;
	rec->u.sk.peek_off = k->peek_off;
	struct zv_cr_buf b = { 0 };
	zv_cr_buf_put(&b, k->addr, k->addrlen);
	zv_cr_buf_put(&b, k->peer, k->peerlen);
	if (k->queue.len)
		zv_cr_buf_put(&b, k->queue.p, k->queue.len);
	if (b.failed) {
		zv_cr_buf_free(&b);
		return refuse(o, e, "out of memory for its queue");
	}
	x->p = b.p;
	x->size = b.cap;
	rec->len = (uint32_t)b.len;
	if (k->domain != 1 && k->state != 7 && !(k->flags & ZV_CRSK_CLOSED) && e->fd >= 0 && e->recno < ZV_CR_INFLIGHT)
		zv_cr_note_reset(e->fd); /* between saved processes: reset if the original is killed */
	return 0;
}
