/* What the host tells of a Unix socket by its inode (NETLINK_SOCK_DIAG,
 * which any user may ask about the sockets of its network namespace): its
 * state, its peer's inode and its shutdown, which no socket call gives. */
#include "cr/sockdiag.h"
#include "lib/string.h"
#include "lib/syscall.h"

#define AF_NETLINK_ 16
#define NETLINK_SOCK_DIAG_ 4
#define SOCK_DIAG_BY_FAMILY_ 20
#define NLMSG_ERROR_ 2
#define NLM_F_REQUEST_ 1
#define UDIAG_SHOW_PEER 4
#define UDIAG_SHOW_ICONS 8
#define UNIX_DIAG_PEER 2
#define UNIX_DIAG_ICONS 3
#define UNIX_DIAG_SHUTDOWN 6

struct nlmsghdr_ {
	uint32_t len;
	uint16_t type, flags;
	uint32_t seq, pid;
};
struct unix_diag_req_ {
	uint8_t family, protocol;
	uint16_t pad;
	uint32_t states, ino, show, cookie[2];
};
struct unix_diag_msg_ {
	uint8_t family, type, state, pad;
	uint32_t ino, cookie[2];
};

long zv_cr_unix_diag(uint64_t ino, struct zv_cr_unix_diag *d)
{
	*d = (struct zv_cr_unix_diag){ 0 };
	long fd = zv_sys3(__NR_socket, AF_NETLINK_, 2 /* SOCK_DGRAM */ | 02000000 /* CLOEXEC */, NETLINK_SOCK_DIAG_);
	if (fd < 0)
		return fd;
	struct {
		struct nlmsghdr_ h;
		struct unix_diag_req_ r;
	} q = { { sizeof q, SOCK_DIAG_BY_FAMILY_, NLM_F_REQUEST_, 1, 0 },
		{ 1 /* AF_UNIX */, 0, 0, ~0u, (uint32_t)ino, UDIAG_SHOW_PEER | UDIAG_SHOW_ICONS | 64 /* SHUTDOWN */, { ~0u, ~0u } } };
	uint8_t buf[8192];
	long n = zv_sys4(__NR_sendto, fd, &q, sizeof q, 0);
	if (n >= 0)
		n = zv_sys6(__NR_recvfrom, fd, (long)buf, sizeof buf, 0, 0, 0);
	zv_close((int)fd);
	if (n < 0)
		return n;
	const struct nlmsghdr_ *h = (const void *)buf;
	if ((size_t)n < sizeof *h + sizeof(struct unix_diag_msg_) || h->len > (uint64_t)n)
		return h->type == NLMSG_ERROR_ && (size_t)n >= sizeof *h + 4 ? *(const int32_t *)(h + 1) : -EIO;
	const struct unix_diag_msg_ *m = (const void *)(h + 1);
	d->type = m->type;
	d->state = m->state;
	for (uint32_t off = sizeof *h + sizeof *m; off + 4 <= h->len;) {
		uint16_t alen = *(const uint16_t *)(buf + off), atype = *(const uint16_t *)(buf + off + 2);
		if (alen < 4 || off + alen > h->len)
			break;
		const uint8_t *v = buf + off + 4;
		if (atype == UNIX_DIAG_PEER && alen >= 8)
			d->peer_ino = *(const uint32_t *)v;
		else if (atype == UNIX_DIAG_SHUTDOWN && alen >= 5)
			d->shutdown = *v;
		else if (atype == UNIX_DIAG_ICONS)
			d->pending = (alen - 4) / 4;
		off += (alen + 3u) & ~3u;
	}
	return 0;
}
