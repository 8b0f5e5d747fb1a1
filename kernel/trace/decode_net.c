/* Decoders for sockets (decode.h): addresses, messages, options. */
#include "zvisor.h"
#include "trace/decode.h"
#include "lib/string.h"

void zv_dec_socket(struct zv_tb *b, const struct zv_tcall *c)
{
	long fam = c->a[0], proto = c->a[2];
	tb_enum(b, (uint64_t)fam, &zv_n_socket_families, "%ld /* AF_??? */");
	SEP(b);
	tb_enum(b, (uint64_t)c->a[1] & 0xf, &zv_n_socket_types, "%ld /* SOCK_??? */");
	if (c->a[1] & ~0xfL) {
		tb_putc(b, '|');
		tb_flags(b, (uint64_t)c->a[1] & ~0xfUL, &zv_n_socket_type_flags, "0");
	}
	SEP(b);
	if (fam == 2 || fam == 10) { /* AF_INET, AF_INET6: the IP protocols by name */
		static const char *const ip[] = { [0] = "IPPROTO_IP", [1] = "IPPROTO_ICMP", [6] = "IPPROTO_TCP",
						  [17] = "IPPROTO_UDP", [58] = "IPPROTO_ICMPV6" };
		if ((unsigned long)proto < sizeof ip / sizeof ip[0] && ip[proto])
			tb_puts(b, ip[proto]);
		else
			tb_printf(b, "%d", (int)proto);
	} else if (fam == 16 && proto == 0) {
		tb_puts(b, "NETLINK_ROUTE");
	} else {
		tb_printf(b, "%d", (int)proto);
	}
}

/* An IPv6 address as inet_ntop writes it: the first longest run of two or
 * more zero groups as "::", and ::a.b.c.d / ::ffff:a.b.c.d for IPv4. */
static void ipv6(struct zv_tb *b, const uint8_t *a)
{
	uint16_t w[8];
	int best = -1, blen = 0;
	for (int i = 0; i < 8; i++)
		w[i] = (uint16_t)(a[2 * i] << 8 | a[2 * i + 1]);
	for (int i = 0; i < 8;) {
		int j = i;
		while (j < 8 && !w[j])
			j++;
		if (j - i > blen && j - i >= 2) {
			best = i;
			blen = j - i;
		}
		i = j > i ? j : i + 1;
	}
	for (int i = 0; i < 8; i++) {
		if (i == best) {
			tb_puts(b, "::");
			i += blen - 1;
			continue;
		}
		if (i == 6 && best == 0 && (blen == 6 || (blen == 5 && w[5] == 0xffff))) {
			tb_printf(b, "%d.%d.%d.%d", a[12], a[13], a[14], a[15]);
			return;
		}
		if (i && i != best + blen)
			tb_putc(b, ':');
		tb_printf(b, "%x", w[i]);
	}
}

/* a socket address of len bytes */
static void sockaddr(struct zv_tb *b, uint64_t p, long len)
{
	uint8_t sa[128];
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	if (len < 2 || len > (long)sizeof sa || zv_peek(sa, p, (size_t)len) < 0) {
		tb_ptr(b, p);
		return;
	}
	int fam = sa[0] | sa[1] << 8;
	tb_puts(b, "{sa_family=");
	tb_enum(b, (uint64_t)fam, &zv_n_socket_families, "%ld");
	if (fam == 1) { /* AF_UNIX: a path, or an abstract name after a NUL */
		size_t n = 0;
		if (len > 2) {
			tb_puts(b, ", sun_path=");
			if (!sa[2]) {
				tb_putc(b, '@');
				tb_quote(b, (const char *)sa + 3, (size_t)len - 3, 0);
			} else {
				while (2 + n < (size_t)len && sa[2 + n])
					n++;
				tb_quote(b, (const char *)sa + 2, n, 0);
			}
		}
	} else if (fam == 2 && len >= 8) { /* AF_INET */
		tb_printf(b, ", sin_port=htons(%d), sin_addr=inet_addr(\"%d.%d.%d.%d\")", sa[2] << 8 | sa[3], sa[4], sa[5],
			  sa[6], sa[7]);
	} else if (fam == 10 && len >= 24) { /* AF_INET6 */
		uint32_t flow, scope = 0;
		memcpy(&flow, sa + 4, 4);
		if (len >= 28)
			memcpy(&scope, sa + 24, 4);
		tb_printf(b, ", sin6_port=htons(%d), sin6_flowinfo=htonl(%u), inet_pton(AF_INET6, \"", sa[2] << 8 | sa[3],
			  (flow >> 24) | (flow >> 8 & 0xff00) | (flow << 8 & 0xff0000) | (flow << 24));
		ipv6(b, sa + 8);
		tb_puts(b, "\", &sin6_addr)");
		if (len >= 28)
			tb_printf(b, ", sin6_scope_id=%u", scope);
	} else if (fam == 16 && len >= 12) { /* AF_NETLINK */
		uint32_t pid, groups;
		memcpy(&pid, sa + 4, 4);
		memcpy(&groups, sa + 8, 4);
		tb_printf(b, ", nl_pid=%u, nl_groups=%08x", pid, groups);
	}
	tb_putc(b, '}');
}

/* bind, connect: (fd, addr, len) */
void zv_dec_connect(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	sockaddr(b, (uint64_t)c->a[1], c->a[2]);
	tb_printf(b, ", %d", (int)c->a[2]);
}

/* ", [len]", or ", [in => out]" when the call changed the length */
static void value_result(struct zv_tb *b, const struct zv_tcall *c, int32_t len)
{
	if (c->pre >= 0 && c->pre != len)
		tb_printf(b, ", [%ld => %d]", c->pre, len);
	else
		tb_printf(b, ", [%d]", len);
}

/* an address the call wrote, with its length pointer: addr, [len] */
static void sockaddr_out(struct zv_tb *b, const struct zv_tcall *c, uint64_t p, uint64_t lenp)
{
	int32_t len;
	if (!p || !OK(c) || zv_peek(&len, lenp, 4) < 0) {
		tb_ptr(b, p);
		SEP(b);
		if (c->pre >= 0) /* the length as it went in */
			tb_printf(b, "[%ld]", c->pre);
		else
			tb_ptr(b, lenp);
		return;
	}
	sockaddr(b, p, len);
	value_result(b, c, len);
}

/* getsockname, getpeername, accept, accept4 */
void zv_dec_getsockname(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	sockaddr_out(b, c, (uint64_t)c->a[1], (uint64_t)c->a[2]);
	if (c->nr == 288) { /* accept4 */
		SEP(b);
		tb_flags(b, (uint64_t)c->a[3], &zv_n_socket_type_flags, "0");
	}
}

void zv_dec_socketpair(struct zv_tb *b, const struct zv_tcall *c)
{
	int fds[2];
	zv_dec_socket(b, c);
	SEP(b);
	if (OK(c) && zv_peek(fds, (uint64_t)c->a[3], sizeof fds) == 0)
		tb_printf(b, "[%d, %d]", fds[0], fds[1]);
	else
		tb_ptr(b, (uint64_t)c->a[3]);
}

/* sendto(fd, buf, len, flags, addr, alen), recvfrom(fd, buf, len, flags, addr, &alen) */
void zv_dec_sendto(struct zv_tb *b, const struct zv_tcall *c)
{
	int rx = c->nr == 45;
	zv_dec_args(b, c, rx ? "fbU" : "fwU");
	SEP(b);
	tb_flags(b, (uint64_t)(uint32_t)c->a[3], &zv_n_msg_flags, "0");
	SEP(b);
	if (rx) {
		sockaddr_out(b, c, (uint64_t)c->a[4], (uint64_t)c->a[5]);
	} else {
		sockaddr(b, (uint64_t)c->a[4], c->a[5]);
		tb_printf(b, ", %d", (int)c->a[5]);
	}
}

/* struct msghdr; for a received message the data is what the call returned */
static void msghdr(struct zv_tb *b, const struct zv_tcall *c, int rx)
{
	struct { uint64_t name; uint32_t namelen, pad; uint64_t iov, iovlen, control, controllen; int32_t flags; } m;
	if (zv_peek(&m, (uint64_t)c->a[1], sizeof m) < 0 || (rx && !OK(c))) {
		tb_ptr(b, (uint64_t)c->a[1]);
		return;
	}
	tb_puts(b, "{msg_name=");
	sockaddr(b, m.name, m.namelen);
	tb_printf(b, ", msg_namelen=%u, msg_iov=", m.namelen);
	zv_dec_iovec(b, m.iov, (long)m.iovlen, rx ? c->ret : -1);
	tb_printf(b, ", msg_iovlen=%lu", m.iovlen);
	if (m.controllen) {
		tb_puts(b, ", msg_control=");
		tb_ptr(b, m.control);
	}
	tb_printf(b, ", msg_controllen=%lu, msg_flags=", m.controllen);
	tb_flags(b, (uint32_t)m.flags, &zv_n_msg_flags, "0");
	tb_putc(b, '}');
}

void zv_dec_sendmsg(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	msghdr(b, c, c->nr == 47 /* recvmsg */);
	SEP(b);
	tb_flags(b, (uint64_t)(uint32_t)c->a[2], &zv_n_msg_flags, "0");
}

/* setsockopt(fd, level, name, value, len), getsockopt(fd, level, name, value, &len) */
void zv_dec_setsockopt(struct zv_tb *b, const struct zv_tcall *c)
{
	int get = c->nr == 55;
	int32_t v, len = (int32_t)c->a[4];
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	tb_enum(b, (uint64_t)c->a[1], &zv_n_sol_levels, "0x%lx /* SOL_??? */");
	SEP(b);
	if (c->a[1] == 1)
		tb_enum(b, (uint64_t)c->a[2], &zv_n_so_options, "0x%lx /* SO_??? */");
	else
		tb_printf(b, "%d", (int)c->a[2]);
	SEP(b);
	if (get && (!OK(c) || zv_peek(&len, (uint64_t)c->a[4], 4) < 0)) {
		tb_ptr(b, (uint64_t)c->a[3]);
		SEP(b);
		tb_ptr(b, (uint64_t)c->a[4]);
		return;
	}
	if (len == 4 && zv_peek(&v, (uint64_t)c->a[3], 4) == 0)
		tb_printf(b, "[%d]", v);
	else
		tb_ptr(b, (uint64_t)c->a[3]);
	if (get)
		value_result(b, c, len);
	else
		tb_printf(b, ", %d", len);
}

void zv_dec_shutdown(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const how[] = { "SHUT_RD", "SHUT_WR", "SHUT_RDWR" };
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	if ((unsigned long)c->a[1] < 3)
		tb_puts(b, how[c->a[1]]);
	else
		tb_printf(b, "%d /* SHUT_??? */", (int)c->a[1]);
}
