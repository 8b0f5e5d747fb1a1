/* Decoders for descriptor calls: ioctl, epoll, eventfd, ppoll and pselect6
 * (decode.h). */
#include "zvisor.h"
#include "trace/decode.h"

/* An ioctl number strace has no name for: _IOC(dir, type, nr, size) */
static void ioc_raw(struct zv_tb *b, uint32_t cmd)
{
	static const char *const dir[] = { "_IOC_NONE", "_IOC_WRITE", "_IOC_READ", "_IOC_READ|_IOC_WRITE" };
	tb_printf(b, "_IOC(%s, 0x%x, 0x%x, 0x%x)", dir[cmd >> 30], (cmd >> 8) & 0xff, cmd & 0xff, (cmd >> 16) & 0x3fff);
}

static void int_at(struct zv_tb *b, uint64_t p)
{
	int32_t v;
	if (zv_peek(&v, p, 4) == 0)
		tb_printf(b, "[%d]", v);
	else
		tb_ptr(b, p);
}

void zv_dec_ioctl(struct zv_tb *b, const struct zv_tcall *c)
{
	uint32_t cmd = (uint32_t)c->a[1];
	uint64_t arg = (uint64_t)c->a[2];
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	const char *name = 0;
	for (size_t i = 0; i < zv_n_ioctl_cmds.n; i++)
		if (zv_n_ioctl_cmds.v[i].value == cmd)
			name = zv_n_ioctl_cmds.v[i].name;
	if (cmd == 0x40049409) /* strace names both requests with this number */
		tb_puts(b, "BTRFS_IOC_CLONE or FICLONE");
	else if (name)
		tb_puts(b, name);
	else
		ioc_raw(b, cmd);
	switch (cmd) {
	case 0x5450: case 0x5451: case 0x540c: case 0x540d: case 0x5422: /* FIONCLEX FIOCLEX TIOCEXCL TIOCNXCL TIOCNOTTY */
		return;
	case 0x5401: /* TCGETS: filled */
		SEP(b);
		if (OK(c))
			zv_dec_termios(b, arg);
		else
			tb_ptr(b, arg);
		return;
	case 0x5402: case 0x5403: case 0x5404: /* TCSETS* */
		SEP(b);
		zv_dec_termios(b, arg);
		return;
	case 0x5413: case 0x5414: { /* TIOCGWINSZ (filled), TIOCSWINSZ */
		uint16_t w[4];
		SEP(b);
		if ((cmd == 0x5414 || OK(c)) && zv_peek(w, arg, sizeof w) == 0)
			tb_printf(b, "{ws_row=%u, ws_col=%u, ws_xpixel=%u, ws_ypixel=%u}", w[0], w[1], w[2], w[3]);
		else
			tb_ptr(b, arg);
		return;
	}
	case 0x540b: { /* TCFLSH */
		static const char *const q[] = { "TCIFLUSH", "TCOFLUSH", "TCIOFLUSH" };
		SEP(b);
		if (arg < 3)
			tb_puts(b, q[arg]);
		else
			tb_printf(b, "0x%lx /* TC???FLUSH */", arg);
		return;
	}
	case 0x5421: case 0x5452: case 0x5410: /* FIONBIO FIOASYNC TIOCSPGRP: an int read */
		SEP(b);
		int_at(b, arg);
		return;
	case 0x541b: case 0x540f: case 0x5429: case 0x5411: /* FIONREAD TIOCGPGRP TIOCGSID TIOCOUTQ: written */
		SEP(b);
		if (OK(c))
			int_at(b, arg);
		else
			tb_ptr(b, arg);
		return;
	case 0x40049409: /* FICLONE: the source fd */
		SEP(b);
		tb_fd(b, (int)arg);
		return;
	}
	SEP(b);
	if (arg)
		tb_printf(b, "0x%lx", arg);
	else
		tb_putc(b, '0');
}

/* struct epoll_event {events, data} (packed on x86-64) */
static void epoll_event(struct zv_tb *b, uint64_t p)
{
	struct __attribute__((packed)) { uint32_t events; uint64_t data; } e;
	if (zv_peek(&e, p, sizeof e) < 0) {
		tb_ptr(b, p);
		return;
	}
	tb_puts(b, "{events=");
	tb_flags(b, e.events, &zv_n_epoll_events, "0");
	tb_printf(b, ", data={u32=%u, u64=%lu}}", (uint32_t)e.data, e.data);
}

void zv_dec_epoll_ctl(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	tb_enum(b, (uint64_t)c->a[1], &zv_n_epoll_ctl_ops, "0x%lx /* EPOLL_CTL_??? */");
	SEP(b);
	zv_dec_arg(b, c, 2, 'f');
	SEP(b);
	if (c->a[1] == 2 /* DEL */ && !c->a[3])
		tb_puts(b, "NULL");
	else
		epoll_event(b, (uint64_t)c->a[3]);
}

/* epoll_wait(epfd, events, max, timeout) and epoll_pwait(..., sigmask, size) */
void zv_dec_epoll_wait(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	if (!OK(c)) {
		tb_ptr(b, (uint64_t)c->a[1]);
	} else {
		tb_putc(b, '[');
		for (long i = 0; i < c->ret && i < 32; i++) {
			if (i)
				SEP(b);
			epoll_event(b, (uint64_t)c->a[1] + 12 * i);
		}
		tb_putc(b, ']');
	}
	tb_printf(b, ", %d, %d", (int)c->a[2], (int)c->a[3]);
	if (c->nr == 281 /* epoll_pwait */) {
		SEP(b);
		tb_sigset(b, (uint64_t)c->a[4], (uint64_t)c->a[5]);
		tb_printf(b, ", %lu", (unsigned long)c->a[5]);
	}
}

/* ppoll(fds, n, timeout, sigmask, size) */
void zv_dec_ppoll(struct zv_tb *b, const struct zv_tcall *c)
{
	struct zv_tcall as_poll = *c;
	as_poll.a[2] = 0;
	zv_dec_poll(b, &as_poll);
	b->len -= 3; /* the ", 0" of poll's timeout */
	SEP(b);
	tb_timespec(b, (uint64_t)c->a[2]);
	SEP(b);
	tb_sigset(b, (uint64_t)c->a[3], (uint64_t)c->a[4]);
	tb_printf(b, ", %lu", (unsigned long)c->a[4]);
}

/* an fd_set of n descriptors as [0 3]: the first 64 from bits (the set as
 * it was on entry, or after the call), the rest read from p */
static void fd_set(struct zv_tb *b, uint64_t p, int n, uint64_t bits)
{
	uint64_t w = bits;
	int first = 1;
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	tb_putc(b, '[');
	for (int base = 0; base < n && base < 1024; base += 64) {
		if (base && zv_peek(&w, p + base / 8, 8) < 0)
			break;
		for (int i = 0; i < 64 && base + i < n; i++)
			if (w >> i & 1) {
				tb_printf(b, first ? "%d" : " %d", base + i);
				first = 0;
			}
	}
	tb_putc(b, ']');
}

/* select(n, in, out, ex, timeval), pselect6(n, in, out, ex, timespec, {sigmask, size}) */
void zv_dec_select(struct zv_tb *b, const struct zv_tcall *c)
{
	int n = (int)c->a[0];
	tb_printf(b, "%d", n);
	for (int i = 1; i <= 3; i++) {
		SEP(b);
		fd_set(b, (uint64_t)c->a[i], n, c->sets[i - 1]);
	}
	SEP(b);
	if (c->nr == 23 /* select */) {
		int64_t tv[2];
		if (c->a[4] && zv_peek(tv, (uint64_t)c->a[4], sizeof tv) == 0)
			tb_printf(b, "{tv_sec=%ld, tv_usec=%ld}", tv[0], tv[1]);
		else
			tb_ptr(b, (uint64_t)c->a[4]);
		return;
	}
	tb_timespec(b, (uint64_t)c->a[4]);
	SEP(b);
	uint64_t sm[2];
	if (!c->a[5] || zv_peek(sm, (uint64_t)c->a[5], sizeof sm) < 0) {
		tb_ptr(b, (uint64_t)c->a[5]);
	} else {
		tb_puts(b, "{sigmask=");
		tb_sigset(b, sm[0], sm[1]);
		tb_printf(b, ", sigsetsize=%lu}", sm[1]);
	}
}

/* select's result: " (in [3], out [4], left {...})", or " (Timeout)" */
void zv_dec_select_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const names[] = { "in", "out", "except" };
	int n = (int)c->a[0], any = 0;
	uint64_t w;
	tb_printf(b, "%ld", c->ret);
	if (c->ret == 0) {
		tb_puts(b, " (Timeout)");
		return;
	}
	tb_puts(b, " (");
	for (int i = 0; i < 3; i++) {
		if (!c->a[1 + i] || zv_peek(&w, (uint64_t)c->a[1 + i], 8) < 0 || (!w && n <= 64))
			continue;
		tb_printf(b, "%s%s ", any++ ? ", " : "", names[i]);
		fd_set(b, (uint64_t)c->a[1 + i], n, w);
	}
	if (c->a[4]) {
		tb_puts(b, any ? ", left " : "left ");
		if (c->nr == 23) {
			int64_t tv[2];
			if (zv_peek(tv, (uint64_t)c->a[4], sizeof tv) == 0)
				tb_printf(b, "{tv_sec=%ld, tv_usec=%ld}", tv[0], tv[1]);
		} else {
			tb_timespec(b, (uint64_t)c->a[4]);
		}
	}
	tb_putc(b, ')');
}

/* preadv/pwritev(fd, iov, cnt, pos_l, pos_h), preadv2/pwritev2(..., flags) */
void zv_dec_preadv(struct zv_tb *b, const struct zv_tcall *c)
{
	int rd = c->nr == 295 || c->nr == 327; /* preadv, preadv2 */
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	zv_dec_iovec(b, (uint64_t)c->a[1], c->a[2], !rd ? -1 : OK(c) ? c->ret : -2);
	tb_printf(b, ", %ld, %ld", c->a[2], c->a[3]);
	if (c->nr == 327 || c->nr == 328)
		tb_printf(b, ", %d", (int)c->a[5]);
}

/* splice(in, off_in, out, off_out, len, flags) */

void zv_dec_splice(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_fd_offsets(b, c);
	tb_printf(b, ", %lu, ", (unsigned long)c->a[4]);
	tb_flags(b, (uint64_t)(uint32_t)c->a[5], &zv_n_splice_flags, "0");
}

/* signalfd4(fd, mask, size, flags), signalfd(fd, mask, size) */
void zv_dec_signalfd4(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	tb_sigset(b, (uint64_t)c->a[1], (uint64_t)c->a[2]);
	tb_printf(b, ", %lu", (unsigned long)c->a[2]);
	if (c->nr == 289 /* signalfd4; signalfd has no flags */) {
		SEP(b);
		tb_flags(b, (uint64_t)(uint32_t)c->a[3], &zv_n_signalfd_flags, "0");
	}
}
