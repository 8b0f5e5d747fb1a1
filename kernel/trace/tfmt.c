/* strace's way of printing values (see tfmt.h). */
#include "zvisor.h"
#include "trace/tfmt.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <stdarg.h>

int zv_tb_strsize = 32;

void tb_putn(struct zv_tb *b, const char *s, size_t n)
{
	size_t fit = b->len < sizeof b->buf - 5 ? sizeof b->buf - 5 - b->len : 0;
	if (n > fit) {
		n = fit;
		b->full = 1;
	}
	char *d = b->buf + b->len;
	b->len += n;
	if (n > 16) {
		memcpy(d, s, n);
		return;
	}
	while (n--) /* a line's words are short: rep movsb's start costs more than they do */
		*d++ = *s++;
}

void tb_num(struct zv_tb *b, unsigned long v, int hex, int neg, int width)
{
	char tmp[48];
	char *e = tmp + sizeof tmp, *p = e;
	int left = width < 0;
	if (left)
		width = -width;
	if (width > 24)
		width = 24;
	if (hex) {
		do {
			*--p = "0123456789abcdef"[v & 15];
			v >>= 4;
		} while (v);
	} else {
		static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
					    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
					    "8081828384858687888990919293949596979899";
		while (v >= 100) { /* two digits per (constant) division: half the chain of multiplies */
			unsigned d = (unsigned)(v % 100);
			v /= 100;
			*--p = pairs[2 * d + 1];
			*--p = pairs[2 * d];
		}
		if (v >= 10) {
			*--p = pairs[2 * v + 1];
			*--p = pairs[2 * v];
		} else {
			*--p = (char)('0' + v);
		}
	}
	if (neg)
		*--p = '-';
	if (left) {
		tb_putn(b, p, (size_t)(e - p));
		for (int i = (int)(e - p); i < width; i++)
			tb_putc(b, ' ');
		return;
	}
	while (e - p < width)
		*--p = ' ';
	tb_putn(b, p, (size_t)(e - p));
}

/* Formats in place; as through a 256-byte string put with tb_puts: at
 * most 255 bytes, and full when they do not all fit. */
void tb_printf(struct zv_tb *b, const char *fmt, ...)
{
	size_t fit = b->len < sizeof b->buf - 5 ? sizeof b->buf - 5 - b->len : 0;
	size_t cap = fit < 255 ? fit : 255;
	va_list ap;
	va_start(ap, fmt);
	int n = zv_vsnprintf(b->buf + b->len, cap + 1, fmt, ap);
	va_end(ap);
	size_t shown = n < 0 ? 0 : (size_t)n < 255 ? (size_t)n : 255;
	if (shown <= fit) {
		b->len += shown;
	} else {
		b->len += fit;
		b->full = 1;
	}
}

void tb_ptr(struct zv_tb *b, uint64_t p)
{
	if (p)
		tb_hex(b, p);
	else
		tb_puts(b, "NULL");
}

/* strace's quoting: printable ASCII as is, \t \n \v \f \r \" \\ escaped,
 * other bytes in octal, 3 digits when an octal digit follows. */
static void quote_byte(struct zv_tb *b, unsigned char c, int next)
{
	switch (c) {
	case '"': tb_puts(b, "\\\""); return;
	case '\\': tb_puts(b, "\\\\"); return;
	case '\t': tb_puts(b, "\\t"); return;
	case '\n': tb_puts(b, "\\n"); return;
	case '\v': tb_puts(b, "\\v"); return;
	case '\f': tb_puts(b, "\\f"); return;
	case '\r': tb_puts(b, "\\r"); return;
	}
	if (c >= ' ' && c < 0x7f) {
		tb_putc(b, (char)c);
		return;
	}
	tb_putc(b, '\\');
	if (next >= '0' && next <= '7') {
		tb_putc(b, (char)('0' + (c >> 6)));
		tb_putc(b, (char)('0' + ((c >> 3) & 7)));
	} else if (c >> 3) {
		if (c >> 6)
			tb_putc(b, (char)('0' + (c >> 6)));
		tb_putc(b, (char)('0' + ((c >> 3) & 7)));
	}
	tb_putc(b, (char)('0' + (c & 7)));
}

void tb_quote(struct zv_tb *b, const char *s, size_t n, int cut)
{
	tb_putc(b, '"');
	for (size_t i = 0; i < n;) {
		size_t run = i; /* bytes printed as they are (a path's all), copied at once */
		while (run < n && (unsigned char)s[run] >= ' ' && (unsigned char)s[run] < 0x7f && s[run] != '"' &&
		       s[run] != '\\')
			run++;
		if (run > i) {
			tb_putn(b, s + i, run - i);
			i = run;
			continue;
		}
		quote_byte(b, (unsigned char)s[i], i + 1 < n ? (unsigned char)s[i + 1] : -1);
		i++;
	}
	tb_putc(b, '"');
	if (cut)
		tb_puts(b, "...");
}

/* A NUL-terminated guest string of at most max bytes, read a page at a
 * time (the string may end just before an unmapped page). */
static void guest_string(struct zv_tb *b, uint64_t p, size_t max)
{
	char chunk[4096 + 1], text[4097];
	size_t have = 0;
	int ended = 0;
	while (have < max + 1 && !ended) {
		/* small reads first: a path is short, the page's rest is not */
		size_t room = 4096 - ((p + have) & 4095);
		if (room > 256 << (have ? 4 : 0))
			room = 256 << (have ? 4 : 0);
		if (room > max + 1 - have)
			room = max + 1 - have;
		if (zv_peek(chunk, p + have, room) < 0)
			break;
		size_t k = 0;
		while (k < room && chunk[k])
			k++;
		ended = k < room;
		if (ended && !have) { /* the usual case: all of it in the first read */
			tb_quote(b, chunk, k > max ? max : k, k > max);
			return;
		}
		if (k > sizeof text - have)
			k = sizeof text - have;
		memcpy(text + have, chunk, k);
		have += k;
	}
	if (!ended && !have) {
		tb_printf(b, "%p", (void *)p);
		return;
	}
	int cut = !ended || have > max;
	tb_quote(b, text, have > max ? max : have, cut);
}

void tb_path(struct zv_tb *b, uint64_t p)
{
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	guest_string(b, p, 4096);
}

void tb_str(struct zv_tb *b, uint64_t p)
{
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	guest_string(b, p, (size_t)zv_tb_strsize);
}

void tb_buf(struct zv_tb *b, uint64_t p, long n)
{
	char data[4096];
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	if (n < 0)
		n = 0;
	size_t show = (size_t)n < (size_t)zv_tb_strsize ? (size_t)n : (size_t)zv_tb_strsize;
	if (show > sizeof data)
		show = sizeof data;
	if (zv_peek(data, p, show) < 0) {
		tb_printf(b, "%p", (void *)p);
		return;
	}
	tb_quote(b, data, show, show < (size_t)n);
}

/* -y: the file behind the fd, 3</etc/passwd>, as strace -y prints it */
void tb_fd(struct zv_tb *b, long fd)
{
	tb_dec(b, (int)fd);
	if (!zv_proc.trace.decode_fds || (int)fd < 0 || zv_is_kernel_fd((int)fd))
		return;
	char path[40], target[4096];
	struct zv_thread *t = zv_current();
	long n;
	if (t->trace.fd == (int)fd && t->trace.fd_path[0]) { /* gone by now (close) */
		n = (long)zv_strlen(t->trace.fd_path);
		memcpy(target, t->trace.fd_path, (size_t)n);
	} else {
		zv_snprintf(path, sizeof path, "/proc/self/fd/%d", (int)fd);
		n = zv_sys4(__NR_readlinkat, -100 /* AT_FDCWD */, path, target, sizeof target - 1);
	}
	if (n <= 0)
		return;
	tb_putc(b, '<');
	for (long i = 0; i < n; i++) {
		unsigned char c = (unsigned char)target[i];
		if (c < ' ' || c >= 0x7f || c == '<' || c == '>' || c == '\\')
			tb_printf(b, "\\x%02x", c); /* strace escapes these in -y paths */
		else
			tb_putc(b, (char)c);
	}
	tb_putc(b, '>');
}

void tb_atfd(struct zv_tb *b, long fd)
{
	if ((int)fd == -100)
		tb_puts(b, "AT_FDCWD");
	else
		tb_fd(b, fd);
}

void tb_flags(struct zv_tb *b, uint64_t v, const struct zv_names *t, const char *zero)
{
	if (!v) {
		tb_puts(b, zero ? zero : "0");
		return;
	}
	int any = 0;
	for (size_t i = 0; i < t->n && v; i++) {
		uint64_t f = t->v[i].value;
		if (f && (v & f) == f) {
			if (any++)
				tb_putc(b, '|');
			tb_puts(b, t->v[i].name);
			v &= ~f;
		}
	}
	if (v) {
		if (any)
			tb_putc(b, '|');
		tb_printf(b, "0x%lx", v);
	}
}

void tb_enum(struct zv_tb *b, uint64_t v, const struct zv_names *t, const char *unknown)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].value == v) {
			tb_puts(b, t->v[i].name);
			return;
		}
	tb_printf(b, unknown ? unknown : "0x%lx", v);
}

/* printf's %#03o: a leading 0, at least 3 digits */
void tb_mode(struct zv_tb *b, uint64_t mode)
{
	char d[24];
	int n = 0;
	do {
		d[n++] = (char)('0' + (mode & 7));
		mode >>= 3;
	} while (mode);
	if (d[n - 1] != '0')
		d[n++] = '0';
	while (n < 3)
		d[n++] = '0';
	while (n)
		tb_putc(b, d[--n]);
}

void tb_signame(struct zv_tb *b, int sig)
{
	const char *n = zv_signal_name(sig);
	if (n)
		tb_puts(b, n);
	else
		tb_printf(b, "%d", sig);
}

/* strace prints a set by the names without "SIG", in brackets; a set with
 * more than half of the signals as ~[the missing ones]. */
void tb_sigset(struct zv_tb *b, uint64_t p, uint64_t size)
{
	uint64_t set;
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	if (size != 8 || zv_peek(&set, p, 8) < 0) {
		tb_printf(b, "%p", (void *)p);
		return;
	}
	int n = 0;
	for (int i = 0; i < 64; i++)
		n += (set >> i) & 1;
	int inverted = n > 32;
	if (inverted) {
		tb_putc(b, '~');
		set = ~set;
	}
	tb_putc(b, '[');
	int first = 1;
	for (int s = 1; s <= 64; s++) {
		if (!(set & (1UL << (s - 1))))
			continue;
		if (!first)
			tb_putc(b, ' ');
		first = 0;
		const char *name = zv_signal_name(s);
		if (name && name[0] == 'S' && name[1] == 'I' && name[2] == 'G')
			tb_puts(b, name + 3);
		else
			tb_printf(b, "%d", s);
	}
	tb_putc(b, ']');
}

void tb_timespec(struct zv_tb *b, uint64_t p)
{
	struct { int64_t sec; long nsec; } ts;
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	if (zv_peek(&ts, p, sizeof ts) < 0) {
		tb_printf(b, "%p", (void *)p);
		return;
	}
	tb_printf(b, "{tv_sec=%ld, tv_nsec=%ld}", ts.sec, ts.nsec);
}
