/* Sockets made again at restore (cr/objects.c calls these): listening
 * ones bound and listening; a Unix socket alone, bound to its name; two
 * connected ones together (a pair of records naming each other): a
 * connection accepted from a listening socket at the accepted end's name
 * (the image's own, else one of ours for the moment), so both ends have
 * the names they had, or a socketpair; a TCP connection likewise, the
 * connecting end bound to its old address first, so the two addresses are
 * the ones the program saw; one whose peer had closed, or a TCP one to
 * the outside (--tcp-close), with another end that is closed once its
 * queue is sent again. */
#include "cr/fdrestore.h"
#include "cr/census.h"
#include "cr/resutil.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define EADDRINUSE_ 98
#define ECONNREFUSED_ 111
#define SOL_SOCKET_ 1
#define SO_REUSEADDR_ 2

long zv_cr_fd_fail(struct zv_cr_rctx *c, const struct zv_cr_fd *r, const char *what, long err)
{
	if (r->fd >= ZV_CR_INFLIGHT)
		return zv_cr_in_refuse(c->in, "a file in flight: %s%s%s", what, err ? ": " : "", err ? zv_strerror((int)-err) : "");
	return zv_cr_in_refuse(c->in, "fd %d: %s%s%s", r->fd, what, err ? ": " : "", err ? zv_strerror((int)-err) : "");
}

/* Whether something answers at a Unix address. */
static int answered(int type, const void *addr, uint32_t alen)
{
	long t = zv_sys3(__NR_socket, 1, type | O_CLOEXEC, 0);
	long k = t < 0 ? t : zv_sys3(__NR_connect, t, addr, alen);
	if (t >= 0)
		zv_close((int)t);
	return k != -ECONNREFUSED_ && k != -ENOENT;
}

/* bind, where a Unix socket's file left by a socket that is gone is
 * removed first, and an address the killed original may still hold is
 * waited for a little. *made: the bind made the file. */
static long bind_again(int fd, int type, const void *addr, uint32_t alen, int *made)
{
	const char *path = (const char *)addr + 2;
	int unix_path = *(const uint16_t *)addr == 1 && alen > 2 && path[0];
	int tries = 0, unlinked = 0;
	if (made)
		*made = unix_path && zv_sys3(__NR_faccessat, AT_FDCWD, path, 0) < 0;
	for (;;) {
		long e = zv_sys3(__NR_bind, fd, addr, alen);
		if (e != -EADDRINUSE_)
			return e;
		if (unix_path && !answered(type, addr, alen) && unlinked++ < 3 && zv_sys1(__NR_unlink, path) == 0)
			continue;
		if (!zv_cr_retry(&tries))
			return e;
	}
}

static long in_use(struct zv_cr_rctx *c, const struct zv_cr_fd *r, long e)
{
	if (e == -EADDRINUSE_)
		return zv_cr_fd_fail(c, r, "its address is in use (by the original, still running, or by a "
				     "connection of its in TIME_WAIT)", 0);
	return zv_cr_fd_fail(c, r, "cannot bind it again", e);
}

long zv_cr_make_listen(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	long fd = zv_sys3(__NR_socket, r->u.sock.domain, r->u.sock.type | O_CLOEXEC, r->u.sock.protocol);
	if (fd < 0)
		return zv_cr_fd_fail(c, r, "cannot make a socket", fd);
	int one = 1;
	zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, SO_REUSEADDR_, &one, sizeof one);
	if (r->u.sock.domain == 10 /* AF_INET6 */)
		zv_sys5(__NR_setsockopt, fd, 41 /* IPPROTO_IPV6 */, 26 /* IPV6_V6ONLY */, &r->u.sock.v6only, sizeof(int));
	uint32_t alen = r->u.sock.addrlen < sizeof r->u.sock.addr ? r->u.sock.addrlen : sizeof r->u.sock.addr;
	long e = bind_again((int)fd, r->u.sock.type, r->u.sock.addr, alen, NULL);
	if (e == 0)
		e = zv_sys2(__NR_listen, fd, r->u.sock.backlog);
	if (e < 0) {
		zv_close((int)fd);
		return e == -EADDRINUSE_ ? zv_cr_fd_fail(c, r, "cannot listen again: the address is in use (by the original, "
					  "still running, or by a connection of its in TIME_WAIT)", 0)
					: zv_cr_fd_fail(c, r, "cannot listen again", e);
	}
	return fd;
}

/* A UDP socket: its options, its name (a socket never bound has port 0
 * and no address: left to bind itself as it sends), its peer. */
long zv_cr_make_udp(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	long fd = zv_sys3(__NR_socket, r->u.sock.domain, r->u.sock.type | O_CLOEXEC, r->u.sock.protocol);
	if (fd < 0)
		return zv_cr_fd_fail(c, r, "cannot make a socket", fd);
	static const int opt[] = { 6 /* SO_BROADCAST */, SO_REUSEADDR_, 15 /* SO_REUSEPORT */ };
	int one = 1;
	for (int i = 0; i < 3; i++)
		if (r->u.sock.backlog & (1 << i))
			zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, opt[i], &one, sizeof one);
	if (r->u.sock.domain == 10 /* AF_INET6 */)
		zv_sys5(__NR_setsockopt, fd, 41 /* IPPROTO_IPV6 */, 26 /* IPV6_V6ONLY */, &r->u.sock.v6only, sizeof(int));
	uint32_t alen = r->u.sock.addrlen < sizeof r->u.sock.addr ? r->u.sock.addrlen : sizeof r->u.sock.addr;
	struct zv_cr_endpoint name;
	long e = 0;
	static const uint8_t any[16];
	if (zv_cr_endpoint_of(r->u.sock.addr, alen, &name) == 0 && (name.port || memcmp(name.addr, any, 16)))
		e = bind_again((int)fd, r->u.sock.type, r->u.sock.addr, alen, NULL);
	if (e == 0 && r->len)
		e = zv_sys3(__NR_connect, fd, zv_cr_rec_extra(r), r->len);
	if (e < 0) {
		zv_close((int)fd);
		return in_use(c, r, e);
	}
	return fd;
}

/* --- a socket record's addresses --- */

static const uint8_t *addr_of(const struct zv_cr_fd *r) { return zv_cr_rec_extra(r); }
static const uint8_t *peer_of(const struct zv_cr_fd *r) { return addr_of(r) + zv_cr_pad8(r->u.sk.addrlen); }
static int named(const struct zv_cr_fd *r) { return r->u.sk.domain == 1 && r->u.sk.addrlen > 2; }

/* The socket record of inode ino in any process (its process in *pp). */
static const struct zv_cr_fd *socket_rec(struct zv_cr_rctx *c, uint64_t ino, int *pp)
{
	for (int p = 0; p < c->nprocs; p++)
		for (unsigned i = 0; i < c->procs[p].n; i++) {
			const struct zv_cr_fd *r = c->procs[p].rec[i];
			if (r->kind == ZV_CRFD_SOCKET && r->u.sk.ino == ino) {
				*pp = p;
				return r;
			}
		}
	return NULL;
}

/* The TCP record whose connection is r's, seen from its other end. */
static const struct zv_cr_fd *tcp_peer_rec(struct zv_cr_rctx *c, const struct zv_cr_fd *r, int *pp)
{
	struct zv_cr_endpoint l, p;
	if (zv_cr_endpoint_of(addr_of(r), r->u.sk.addrlen, &l) < 0 || zv_cr_endpoint_of(peer_of(r), r->u.sk.peerlen, &p) < 0)
		return NULL;
	for (int q = 0; q < c->nprocs; q++)
		for (unsigned i = 0; i < c->procs[q].n; i++) {
			const struct zv_cr_fd *b = c->procs[q].rec[i];
			struct zv_cr_endpoint bl, bp;
			if (b != r && b->kind == ZV_CRFD_SOCKET && b->u.sk.domain != 1 &&
			    zv_cr_endpoint_of(addr_of(b), b->u.sk.addrlen, &bl) == 0 &&
			    zv_cr_endpoint_of(peer_of(b), b->u.sk.peerlen, &bp) == 0 && !memcmp(&bl, &p, sizeof p) &&
			    !memcmp(&bp, &l, sizeof l)) {
				*pp = q;
				return b;
			}
		}
	return NULL;
}

/* The listening socket the image has at a's address, or -1. */
static int image_listener(struct zv_cr_rctx *c, const struct zv_cr_fd *a, const uint8_t *addr, uint32_t alen)
{
	struct zv_cr_endpoint want, have;
	int tcp = a->u.sk.domain != 1;
	if (tcp && zv_cr_endpoint_of(addr, alen, &want) < 0)
		return -1;
	for (unsigned i = 0; i < c->nobjs; i++) {
		const struct zv_cr_obj *o = &c->objs[i];
		if (o->kind != ZV_CRFD_LISTEN || o->rec->u.sock.domain != a->u.sk.domain || o->rec->u.sock.type != a->u.sk.type)
			continue;
		if (!tcp && o->rec->u.sock.addrlen == alen && !memcmp(o->rec->u.sock.addr, addr, alen))
			return o->fd;
		static const uint8_t any[16];
		if (tcp && zv_cr_endpoint_of(o->rec->u.sock.addr, o->rec->u.sock.addrlen, &have) == 0 && have.port == want.port &&
		    (!memcmp(have.addr, want.addr, 16) || !memcmp(have.addr, any, 16)))
			return o->fd;
	}
	return -1;
}

static void options(int fd, const struct zv_cr_fd *r)
{
	int one = 1;
	if (r->u.sk.flags & ZV_CRSK_PASSCRED)
		zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, 16 /* SO_PASSCRED */, &one, sizeof one);
	if (r->u.sk.flags & ZV_CRSK_KEEPALIVE)
		zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, 9 /* SO_KEEPALIVE */, &one, sizeof one);
	if (r->u.sk.flags & ZV_CRSK_NODELAY)
		zv_sys5(__NR_setsockopt, fd, 6 /* IPPROTO_TCP */, 1 /* TCP_NODELAY */, &one, sizeof one);
}

/* Records the socket fd (and the other end, or -1) as record r's object. */
static long keep(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r, long fd, long other)
{
	struct zv_cr_obj *o = zv_cr_obj_new(c, ZV_CRFD_SOCKET, r->u.sk.ino, p, r);
	if (!o)
		return zv_cr_fd_fail(c, r, "out of memory", 0);
	options((int)fd, r);
	o->fd = zv_cr_spare(c, (int)fd);
	zv_close((int)fd);
	o->other = other >= 0 ? zv_cr_spare(c, (int)other) : -1;
	if (other >= 0)
		zv_close((int)other);
	return o->fd < 0 || (other >= 0 && o->other < 0) ? zv_cr_fd_fail(c, r, "no fd free", -EMFILE) : 0;
}

static long new_socket(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	long fd = zv_sys3(__NR_socket, r->u.sk.domain, r->u.sk.type | O_CLOEXEC, r->u.sk.protocol);
	if (fd < 0)
		return zv_cr_fd_fail(c, r, "cannot make a socket", fd);
	if (r->u.sk.domain != 1)
		zv_sys5(__NR_setsockopt, fd, SOL_SOCKET_, SO_REUSEADDR_, &(int){ 1 }, sizeof(int));
	return fd;
}

/* A connection to a listening socket at addr (the image's, else one made
 * for it and gone after): *conn the connecting socket (bound first to its
 * own address when bind), *acc the accepted one. */
static long connect_pair(struct zv_cr_rctx *c, const struct zv_cr_fd *cr, const struct zv_cr_fd *ar,
			 const uint8_t *addr, uint32_t alen, int bind, long *conn, long *acc)
{
	int made = 0;
	long lfd = image_listener(c, cr, addr, alen), tmp = -1, e = 0;
	*conn = *acc = -1;
	if (lfd < 0) {
		tmp = new_socket(c, ar);
		if (tmp < 0)
			return -1;
		e = bind_again((int)tmp, ar->u.sk.type, addr, alen, &made);
		if (e == 0)
			e = zv_sys2(__NR_listen, tmp, 1);
		if (e < 0) {
			zv_close((int)tmp);
			return in_use(c, ar, e);
		}
		lfd = tmp;
	}
	long fl = zv_sys3(__NR_fcntl, lfd, F_GETFL, 0);
	zv_sys3(__NR_fcntl, lfd, F_SETFL, fl | O_NONBLOCK); /* an accept that finds nothing must not wait */
	*conn = new_socket(c, cr);
	if (*conn >= 0 && bind)
		e = bind_again((int)*conn, cr->u.sk.type, addr_of(cr), cr->u.sk.addrlen, NULL);
	if (*conn >= 0 && e == 0)
		e = zv_sys3(__NR_connect, *conn, addr, alen);
	if (*conn >= 0 && e == 0)
		*acc = zv_sys4(__NR_accept4, lfd, NULL, NULL, O_CLOEXEC);
	zv_sys3(__NR_fcntl, lfd, F_SETFL, fl);
	if (tmp >= 0)
		zv_close((int)tmp);
	if (made)
		zv_sys1(__NR_unlink, (const char *)addr + 2);
	if (*conn < 0)
		return -1;
	if (e < 0 || *acc < 0) {
		zv_close((int)*conn);
		return e < 0 ? in_use(c, cr, e) : zv_cr_fd_fail(c, cr, "cannot connect it again", *acc);
	}
	return 0;
}

static long unix_alone(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	long fd = new_socket(c, r), other = -1, e = 0;
	if (fd < 0)
		return -1;
	if (r->u.sk.flags & ZV_CRSK_PEER_GONE) { /* connected, its peer closed: a pair, the other end closed later */
		int sv[2];
		zv_close((int)fd);
		e = zv_sys4(__NR_socketpair, 1, r->u.sk.type | O_CLOEXEC, 0, sv);
		if (e < 0)
			return zv_cr_fd_fail(c, r, "cannot make a socket pair", e);
		fd = sv[0];
		other = sv[1];
	}
	if (named(r))
		e = bind_again((int)fd, r->u.sk.type, addr_of(r), r->u.sk.addrlen, NULL);
	if (e < 0) {
		zv_close((int)fd);
		if (other >= 0)
			zv_close((int)other);
		return in_use(c, r, e);
	}
	return keep(c, p, r, fd, other);
}

static long unix_socket(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	if (r->u.sk.state != 1 || (r->u.sk.flags & ZV_CRSK_PEER_GONE))
		return unix_alone(c, p, r);
	int q;
	const struct zv_cr_fd *b = socket_rec(c, r->u.sk.peer_ino, &q);
	if (!b)
		return zv_cr_fd_fail(c, r, "its peer is not in the image (damaged image)", 0);
	long fd, other, e;
	if (b->u.sk.peer_ino != r->u.sk.ino) { /* a datagram socket connected to another's name */
		if (zv_cr_make_socket(c, q, b) < 0 || (fd = new_socket(c, r)) < 0)
			return -1;
		e = named(r) ? bind_again((int)fd, r->u.sk.type, addr_of(r), r->u.sk.addrlen, NULL) : 0;
		if (e == 0)
			e = zv_sys3(__NR_connect, fd, addr_of(b), b->u.sk.addrlen);
		if (e < 0) {
			zv_close((int)fd);
			return zv_cr_fd_fail(c, r, "cannot connect it again", e);
		}
		return keep(c, p, r, fd, -1);
	}
	if (r->u.sk.type != 2 /* SOCK_DGRAM */ && (named(r) || named(b))) {
		/* the accepted end: the one at a listening socket's name, else a named one */
		int r_acc = named(r) && (image_listener(c, r, addr_of(r), r->u.sk.addrlen) >= 0 || !named(b));
		const struct zv_cr_fd *acc = r_acc ? r : b, *con = r_acc ? b : r;
		long cfd, afd;
		if (connect_pair(c, con, acc, addr_of(acc), acc->u.sk.addrlen, named(con), &cfd, &afd) < 0)
			return -1;
		fd = r_acc ? afd : cfd;
		other = r_acc ? cfd : afd;
	} else {
		int sv[2];
		e = zv_sys4(__NR_socketpair, 1, r->u.sk.type | O_CLOEXEC, 0, sv);
		if (e < 0)
			return zv_cr_fd_fail(c, r, "cannot make a socket pair", e);
		fd = sv[0];
		other = sv[1];
		e = named(r) ? bind_again((int)fd, r->u.sk.type, addr_of(r), r->u.sk.addrlen, NULL) : 0;
		if (e == 0 && named(b))
			e = bind_again((int)other, b->u.sk.type, addr_of(b), b->u.sk.addrlen, NULL);
		if (e < 0) {
			zv_close((int)fd);
			zv_close((int)other);
			return in_use(c, r, e);
		}
	}
	/* both ends are objects: each refills the other's queue */
	if (keep(c, p, r, fd, -1) < 0 || keep(c, q, b, other, -1) < 0)
		return -1;
	zv_cr_obj_find(c, ZV_CRFD_SOCKET, r->u.sk.ino)->other = zv_cr_obj_find(c, ZV_CRFD_SOCKET, b->u.sk.ino)->fd;
	zv_cr_obj_find(c, ZV_CRFD_SOCKET, b->u.sk.ino)->other = zv_cr_obj_find(c, ZV_CRFD_SOCKET, r->u.sk.ino)->fd;
	return 0;
}

static uint16_t port_of(const uint8_t *sa) { return (uint16_t)(sa[2] << 8 | sa[3]); }

static long tcp_socket(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	long fd, other, e = 0;
	if (r->u.sk.state == 7) { /* not connected: made, bound if it was */
		if ((fd = new_socket(c, r)) < 0)
			return -1;
		if (port_of(addr_of(r)))
			e = bind_again((int)fd, 1, addr_of(r), r->u.sk.addrlen, NULL);
		if (e < 0) {
			zv_close((int)fd);
			return in_use(c, r, e);
		}
		return keep(c, p, r, fd, -1);
	}
	if (r->u.sk.flags & ZV_CRSK_CLOSED) { /* to the outside: a connection of our own, closed once its queue is back */
		uint8_t lo[28] = { 0 };
		uint32_t lolen = r->u.sk.domain == 10 ? 28 : 16;
		*(uint16_t *)lo = (uint16_t)r->u.sk.domain;
		if (r->u.sk.domain == 10)
			lo[23] = 1; /* ::1 */
		else
			lo[4] = 127, lo[7] = 1;
		long l = new_socket(c, r);
		int alen = sizeof lo;
		if (l < 0 || zv_sys3(__NR_bind, l, lo, lolen) < 0 || zv_sys2(__NR_listen, l, 1) < 0 ||
		    zv_sys3(__NR_getsockname, l, lo, &alen) < 0) {
			if (l >= 0)
				zv_close((int)l);
			return zv_cr_fd_fail(c, r, "cannot make a connection to stand for it", 0);
		}
		fd = new_socket(c, r);
		e = fd < 0 ? fd : zv_sys3(__NR_connect, fd, lo, (uint32_t)alen);
		other = e < 0 ? e : zv_sys4(__NR_accept4, l, NULL, NULL, O_CLOEXEC);
		zv_close((int)l);
		if (e < 0 || other < 0) {
			if (fd >= 0)
				zv_close((int)fd);
			return zv_cr_fd_fail(c, r, "cannot make a connection to stand for it", e < 0 ? e : other);
		}
		return keep(c, p, r, fd, other);
	}
	int q;
	const struct zv_cr_fd *b = tcp_peer_rec(c, r, &q);
	if (!b)
		return zv_cr_fd_fail(c, r, "the other end of its connection is not in the image (damaged image)", 0);
	/* the accepting end: the one at a listening socket's address, else
	 * the lower port (a server's, against an ephemeral one) */
	int r_acc = image_listener(c, r, addr_of(r), r->u.sk.addrlen) >= 0 ||
		    (image_listener(c, b, addr_of(b), b->u.sk.addrlen) < 0 && port_of(addr_of(r)) < port_of(addr_of(b)));
	const struct zv_cr_fd *acc = r_acc ? r : b, *con = r_acc ? b : r;
	long cfd, afd;
	if (connect_pair(c, con, acc, addr_of(acc), acc->u.sk.addrlen, 1, &cfd, &afd) < 0)
		return -1;
	fd = r_acc ? afd : cfd;
	other = r_acc ? cfd : afd;
	if (keep(c, p, r, fd, -1) < 0 || keep(c, q, b, other, -1) < 0)
		return -1;
	zv_cr_obj_find(c, ZV_CRFD_SOCKET, r->u.sk.ino)->other = zv_cr_obj_find(c, ZV_CRFD_SOCKET, b->u.sk.ino)->fd;
	zv_cr_obj_find(c, ZV_CRFD_SOCKET, b->u.sk.ino)->other = zv_cr_obj_find(c, ZV_CRFD_SOCKET, r->u.sk.ino)->fd;
	return 0;
}

long zv_cr_make_socket(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	if (zv_cr_obj_find(c, ZV_CRFD_SOCKET, r->u.sk.ino))
		return 0;
	if (r->u.sk.addrlen > 112 || r->u.sk.peerlen > 112 ||
	    zv_cr_pad8(r->u.sk.addrlen) + zv_cr_pad8(r->u.sk.peerlen) > r->len)
		return zv_cr_in_refuse(c->in, "the image's fds section is damaged (fd %d)", r->fd);
	return r->u.sk.domain == 1 ? unix_socket(c, p, r) : tcp_socket(c, p, r);
}
