/* Credentials over Unix sockets. A sender's SCM_CREDENTIALS is judged by
 * the host against its real ids, so it is judged here against the
 * virtual ones (scm_check_creds) and rewritten to the host's before it is
 * sent; the credentials a receiver gets (SCM_CREDENTIALS, SO_PEERCRED,
 * SO_PEERGROUPS) are the host's, shown through the id map. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/syscall.h"

#define SOL_SOCKET 1
#define SCM_CREDENTIALS 2
#define SO_PEERCRED 17
#define SO_PEERGROUPS 59
#define MAX_CONTROL 4096

struct kmsghdr {
	uint64_t name;
	uint32_t namelen, pad;
	uint64_t iov, iovlen, control, controllen;
	uint32_t flags, pad2;
};

struct kcmsghdr {
	uint64_t len;
	int32_t level, type;
};

struct kucred {
	int32_t pid;
	uint32_t uid, gid;
};

#define ALIGN8(x) (((x) + 7) & ~7UL)

/* Calls fn on each SCM_CREDENTIALS of the control data at buf (len bytes,
 * in kernel memory), as the host walks it. */
static int each_cred(char *buf, uint64_t len, int (*fn)(struct kucred *u))
{
	int n = 0;
	for (uint64_t at = 0; at + sizeof(struct kcmsghdr) <= len;) {
		struct kcmsghdr *h = (struct kcmsghdr *)(buf + at);
		if (h->len < sizeof *h || h->len > len - at)
			break;
		if (h->level == SOL_SOCKET && h->type == SCM_CREDENTIALS &&
		    h->len >= sizeof *h + sizeof(struct kucred)) {
			int r = fn((struct kucred *)(h + 1));
			if (r < 0)
				return r;
			n++;
		}
		at += ALIGN8(h->len);
	}
	return n;
}

static int to_host(struct kucred *u)
{
	const struct zv_creds *c = &zv_current()->cred;
	if (!(u->uid == c->uid || u->uid == c->euid || u->uid == c->suid || zv_fid_capable(c, CAP_SETUID)) ||
	    !(u->gid == c->gid || u->gid == c->egid || u->gid == c->sgid || zv_fid_capable(c, CAP_SETGID)))
		return -EPERM;
	u->uid = zv_fid.host_uid;
	u->gid = zv_fid.host_gid;
	return 0;
}

static int to_guest(struct kucred *u)
{
	u->uid = zv_fid_guest_uid(u->uid);
	u->gid = zv_fid_guest_gid(u->gid);
	return 0;
}

static long send(struct zv_call *call)
{
	long *a = call->a;
	struct kmsghdr m;
	char buf[MAX_CONTROL];
	if (zv_fid_arg_copy(&m, (uint64_t)a[1], sizeof m) < 0 || !m.controllen || m.controllen > MAX_CONTROL ||
	    zv_fid_arg_copy(buf, m.control, m.controllen) < 0)
		return zv_next(call); /* nothing to judge, or the host's EFAULT */
	int n = each_cred(buf, m.controllen, to_host);
	if (n <= 0)
		return n < 0 ? n : zv_next(call);
	m.control = (uint64_t)buf;
	long b[6] = { a[0], (long)&m, a[2], a[3], a[4], a[5] };
	return zv_next_with(call, b);
}

/* The credentials in a received message's control data, in place. */
static void received(uint64_t msg)
{
	struct kmsghdr m;
	char buf[MAX_CONTROL];
	if (zv_guest_copy(&m, (const void *)msg, sizeof m, msg) < 0 || !m.controllen || m.controllen > MAX_CONTROL ||
	    zv_guest_copy(buf, (const void *)m.control, m.controllen, m.control) < 0)
		return;
	if (each_cred(buf, m.controllen, to_guest) > 0)
		zv_guest_copy((void *)m.control, buf, m.controllen, m.control);
}

static void peer(const long *a)
{
	uint32_t len;
	if (a[1] != SOL_SOCKET || (a[2] != SO_PEERCRED && a[2] != SO_PEERGROUPS) ||
	    zv_guest_copy(&len, (const void *)a[4], 4, (uint64_t)a[4]) < 0)
		return;
	uint32_t v[64];
	uint64_t p = (uint64_t)a[3];
	if (a[2] == SO_PEERCRED) {
		struct kucred u;
		if (len < sizeof u || zv_guest_copy(&u, (const void *)p, sizeof u, p) < 0)
			return;
		to_guest(&u);
		zv_guest_copy((void *)p, &u, sizeof u, p);
		return;
	}
	for (uint32_t at = 0; at + 4 <= len; at += sizeof v) {
		uint32_t n = len - at < sizeof v ? (len - at) / 4 : 64;
		if (zv_guest_copy(v, (const void *)(p + at), n * 4, p + at) < 0)
			return;
		for (uint32_t i = 0; i < n; i++)
			v[i] = zv_fid_guest_gid(v[i]);
		zv_guest_copy((void *)(p + at), v, n * 4, p + at);
	}
}

/* The audit netlink socket answers a request with an ack (NLMSG_ERROR).
 * The host says EPERM (no CAP_AUDIT_WRITE); a root in a user namespace,
 * which a fake root stands for, is told ECONNREFUSED (audit_netlink_ok),
 * which sudo, login and shadow's tools take as "no audit" without a word.
 * buf: the guest's first n bytes received on fd. */
static void audit_ack(long fd, uint64_t buf, long n)
{
	struct { uint32_t len; uint16_t type, flags; uint32_t seq, pid; int32_t error; } h;
	if (n < (long)sizeof h || zv_guest_copy(&h, (const void *)buf, sizeof h, buf) < 0 || h.type != 2 /* NLMSG_ERROR */ ||
	    h.error != -EPERM)
		return;
	int v = 0;
	uint32_t vl = sizeof v;
	if (zv_sys5(__NR_getsockopt, fd, SOL_SOCKET, 39 /* SO_DOMAIN */, &v, &vl) < 0 || v != 16 /* AF_NETLINK */)
		return;
	vl = sizeof v;
	if (zv_sys5(__NR_getsockopt, fd, SOL_SOCKET, 38 /* SO_PROTOCOL */, &v, &vl) < 0 || v != 9 /* NETLINK_AUDIT */)
		return;
	h.error = -ECONNREFUSED;
	zv_guest_copy((void *)buf, &h, sizeof h, buf);
}

long zv_fid_sock_call(struct zv_call *call)
{
	const long *a = call->a;
	if (call->nr == __NR_sendmsg)
		return send(call);
	long r = zv_next(call);
	if (r < 0)
		return r;
	if (call->nr == __NR_recvfrom) {
		audit_ack(a[0], (uint64_t)a[1], r < a[2] ? r : a[2]);
		return r;
	}
	if (call->nr == __NR_recvmsg) {
		struct kmsghdr m;
		uint64_t iov[2];
		if (zv_guest_copy(&m, (const void *)a[1], sizeof m, (uint64_t)a[1]) == 0 && m.iovlen &&
		    zv_guest_copy(iov, (const void *)m.iov, sizeof iov, m.iov) == 0)
			audit_ack(a[0], iov[0], r < (long)iov[1] ? r : (long)iov[1]);
	}
	if (call->nr == __NR_recvmsg)
		received((uint64_t)a[1]);
	else if (call->nr == __NR_recvmmsg)
		for (long i = 0; i < r; i++)
			received((uint64_t)a[1] + (uint64_t)i * 64);
	else if (call->nr == __NR_getsockopt)
		peer(a);
	return r;
}
