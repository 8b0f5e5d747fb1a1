/* zvisor trace: the call layer, what is shown, and the lines (trace.h).
 *
 * A line is formatted on the kernel stack and written with one write(2) to
 * the output (a hidden fd opened with O_APPEND), so lines from threads and
 * processes never mix and nothing is lost when the guest dies: each line is
 * in the file when the call returns. */
#include "zvisor.h"
#include "trace/trace.h"
#include "trace/count.h"
#include "trace/decode.h"
#include "trace/live.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/layer.h"
#include "sys/execstate.h"
#include <linux/fcntl.h>

#define COLUMN 40 /* strace aligns " = result" here */

/* ---- options ----------------------------------------------------------- */

static const struct { const char *name; int bits; } classes[] = {
	{ "file", ZV_TC_FILE }, { "process", ZV_TC_PROCESS }, { "network", ZV_TC_NETWORK },
	{ "net", ZV_TC_NETWORK }, { "signal", ZV_TC_SIGNAL }, { "ipc", ZV_TC_IPC },
	{ "desc", ZV_TC_DESC }, { "memory", ZV_TC_MEMORY }, { "creds", ZV_TC_CREDS },
	{ "clock", ZV_TC_CLOCK }, { "stat", ZV_TC_STAT }, { "lstat", ZV_TC_STAT },
	{ "fstat", ZV_TC_STAT }, { "statfs", ZV_TC_STAT }, { "fstatfs", ZV_TC_STAT },
	{ "%stat", ZV_TC_STAT }, { "pure", ZV_TC_PURE },
};

/* The vDSO functions -e trace may name (strace cannot show them). */
static const char *const vdso_names[] = { "clock_gettime", "gettimeofday", "time", "clock_getres", "getcpu" };

static int bad(const char *what, const char *arg)
{
	zv_dprintf(2, "zvisor: %s '%s'\n", what, arg);
	return -1;
}

static void set_bit(uint64_t *set, int nr, int on)
{
	if (on)
		set[nr / 64] |= 1UL << (nr % 64);
	else
		set[nr / 64] &= ~(1UL << (nr % 64));
}

static int nr_of(const char *name, size_t len)
{
	for (int nr = 0; nr < 512; nr++) {
		const char *n = zv_sysname(nr);
		if (n && zv_strlen(n) == len && zv_strncmp(n, name, len) == 0)
			return nr;
	}
	return -1;
}

int zv_regex_match(const char *re, const char *s); /* trace/regex.c */
int zv_regex_check(const char *re);

/* [!]ITEM[,ITEM...]: names, %class, /regex, all, none (for -e trace= and
 * the set of -e inject=). */
int zv_trace_parse_set(const char *v, uint64_t *out)
{
	struct zv_trace *tr = &zv_proc.trace;
	int neg = *v == '!';
	if (neg)
		v++;
	uint64_t set[512 / 64] = { 0 };
	while (*v) {
		const char *end = zv_strchr(v, ',');
		size_t len = end ? (size_t)(end - v) : zv_strlen(v);
		char item[256];
		if (len >= sizeof item)
			return bad("trace: item too long", v);
		memcpy(item, v, len);
		item[len] = 0;
		const char *it = item;
		int optional = *it == '?'; /* strace: ignore an unknown name */
		if (optional)
			it++;
		if (!zv_strcmp(it, "all")) {
			for (int nr = 0; nr < 512; nr++)
				set_bit(set, nr, 1);
		} else if (!zv_strcmp(it, "none")) {
			/* nothing */
		} else if (it[0] == '%') {
			size_t k = 0;
			while (k < sizeof classes / sizeof classes[0] && zv_strcmp(it + 1, classes[k].name))
				k++;
			if (k == sizeof classes / sizeof classes[0]) {
				if (!optional)
					return bad("unknown syscall class", it);
			} else {
				for (int nr = 0; nr < 512; nr++)
					if (zv_row(nr)->trace.classes & classes[k].bits)
						set_bit(set, nr, 1);
			}
		} else if (it[0] == '/') {
			if (zv_regex_check(it + 1) < 0)
				return bad("bad regular expression", it + 1);
			for (int nr = 0; nr < 512; nr++)
				if (zv_sysname(nr) && zv_regex_match(it + 1, zv_sysname(nr)))
					set_bit(set, nr, 1);
		} else {
			int nr = nr_of(it, zv_strlen(it));
			if (nr < 0 && !optional)
				return bad("unknown syscall", it);
			if (nr >= 0)
				set_bit(set, nr, 1);
			for (size_t k = 0; k < sizeof vdso_names / sizeof vdso_names[0]; k++)
				if (!zv_strcmp(it, vdso_names[k]) && !neg && out == tr->set)
					tr->vdso_shown = 1;
		}
		v += len;
		if (*v == ',')
			v++;
	}
	for (int i = 0; i < 512 / 64; i++)
		out[i] = neg ? ~set[i] : set[i];
	return 0;
}

static int parse_trace_set(const char *v)
{
	return zv_trace_parse_set(v, zv_proc.trace.set);
}

static int parse_expr(const char *e)
{
	const char *eq = zv_strchr(e, '=');
	char q[32] = "trace";
	const char *v = e;
	if (eq) {
		size_t n = (size_t)(eq - e);
		if (n >= sizeof q)
			return bad("unknown qualifier in", e);
		memcpy(q, e, n);
		q[n] = 0;
		v = eq + 1;
	}
	if (!zv_strcmp(q, "trace") || !zv_strcmp(q, "t"))
		return parse_trace_set(v);
	if (!zv_strcmp(q, "status")) {
		if (!zv_strcmp(v, "failed")) {
			zv_proc.trace.failed_only = 1;
			return 0;
		}
		if (!zv_strcmp(v, "all"))
			return 0;
		return bad("status: only 'failed' and 'all' are supported, not", v);
	}
	if (!zv_strcmp(q, "raw") || !zv_strcmp(q, "x")) {
		zv_proc.trace.raw = !zv_strcmp(v, "all");
		return 0;
	}
	if (!zv_strcmp(q, "abbrev") || !zv_strcmp(q, "verbose") || !zv_strcmp(q, "signal") ||
	    !zv_strcmp(q, "signals") || !zv_strcmp(q, "s"))
		return 0; /* accepted; zvisor prints as strace's defaults do */
	if (!zv_strcmp(q, "inject") || !zv_strcmp(q, "fault"))
		return zv_inject_parse(v) < 0 ? -1 : 0;
	return bad("unknown qualifier in -e", e);
}

static long parse_uint(const char *s)
{
	unsigned long v;
	if (zv_parse_ulong(s, &v) < 0 || v > 1u << 30)
		return -1;
	return (long)v;
}

static int option(int argc, char **argv);

/* Each option taken is also kept as text, for the images the guest execs. */
int zv_trace_option(int argc, char **argv)
{
	int n = option(argc, argv);
	struct zv_trace *tr = &zv_proc.trace;
	for (int i = 0; i < n && !tr->restoring; i++) {
		size_t have = zv_strlen(tr->opts), len = zv_strlen(argv[i]);
		if (have + len + 2 >= sizeof tr->opts) {
			zv_dprintf(2, "zvisor: trace options too long\n");
			return -1;
		}
		memcpy(tr->opts + have, argv[i], len);
		tr->opts[have + len] = '\x1f';
		tr->opts[have + len + 1] = 0;
	}
	return n;
}

static int option(int argc, char **argv)
{
	struct zv_trace *tr = &zv_proc.trace;
	const char *a = argv[0];
	const char *next = argc > 1 ? argv[1] : NULL;
	/* the options that take a value: -o FILE, -oFILE, --output=FILE ... */
	static const struct { const char *opt, *lopt; char key; } valued[] = {
		{ "-o", "--output", 'o' }, { "-e", NULL, 'e' }, { "-s", "--string-limit", 's' },
		{ "-X", NULL, 'X' }, { NULL, "--trace", 't' }, { NULL, "--status", 'S' },
		{ NULL, "--inject", 'i' },
	};
	for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
		const char *v = NULL;
		int used = 0;
		size_t ln = valued[k].lopt ? zv_strlen(valued[k].lopt) : 0;
		if (valued[k].opt && !zv_strcmp(a, valued[k].opt)) {
			if (!next)
				return bad("option needs a value:", a);
			v = next;
			used = 2;
		} else if (valued[k].opt && zv_startswith(a, valued[k].opt) && a[2]) {
			v = a + 2;
			used = 1;
		} else if (valued[k].lopt && zv_startswith(a, valued[k].lopt) && a[ln] == '=') {
			v = a + ln + 1;
			used = 1;
		} else if (valued[k].lopt && !zv_strcmp(a, valued[k].lopt)) {
			if (!next)
				return bad("option needs a value:", a);
			v = next;
			used = 2;
		} else {
			continue;
		}
		tr->on = 1;
		switch (valued[k].key) {
		case 'o':
			if (zv_strlen(v) + 16 >= sizeof tr->path)
				return bad("output file name too long:", v);
			zv_strlcpy(tr->path, v, sizeof tr->path);
			break;
		case 'e':
			if (parse_expr(v) < 0)
				return -1;
			break;
		case 's': {
			long n = parse_uint(v);
			if (n < 0)
				return bad("bad string size for -s:", v);
			zv_tb_strsize = (int)n;
			break;
		}
		case 'X':
			if (!zv_strcmp(v, "raw"))
				tr->raw = 1;
			else if (zv_strcmp(v, "abbrev") && zv_strcmp(v, "verbose"))
				return bad("-X: unknown format (raw, abbrev, verbose):", v);
			break;
		case 't':
			if (parse_trace_set(v) < 0)
				return -1;
			break;
		case 'S':
			if (parse_expr(zv_strcmp(v, "failed") ? "status=all" : "status=failed") < 0 ||
			    (zv_strcmp(v, "failed") && zv_strcmp(v, "all")))
				return bad("--status: only 'failed' and 'all' are supported, not", v);
			break;
		case 'i':
			if (zv_inject_parse(v) < 0)
				return -1;
			break;
		}
		return used;
	}
	/* flags, possibly bundled as strace allows: -fT, -tt, -ff */
	if (!zv_strcmp(a, "--json")) {
		tr->on = tr->json = 1;
		return 1;
	}
	if (!zv_strcmp(a, "--summary-only")) {
		tr->summary = 1;
		return 1;
	}
	if (!zv_strcmp(a, "--summary")) {
		tr->summary = 2;
		tr->on = 1;
		return 1;
	}
	if (!zv_strcmp(a, "--summary-wall-clock"))
		return 1; /* -w */
	if (!zv_strcmp(a, "--follow-forks")) {
		tr->on = 1;
		tr->follow = tr->follow ? tr->follow : 1;
		return 1;
	}
	if (!zv_strcmp(a, "--output-separately")) {
		tr->on = 1;
		tr->follow = 2;
		return 1;
	}
	if (a[0] != '-' || a[1] == '-' || !a[1])
		return 0;
	for (const char *p = a + 1; *p; p++)
		if (!zv_strchr("fTtrcCyZvw", *p))
			return 0; /* not ours: let the caller report it */
	tr->on = 1;
	for (const char *p = a + 1; *p; p++) {
		switch (*p) {
		case 'f': tr->follow = tr->follow ? 2 : 1; break;
		case 'T': tr->show_time = 1; break;
		case 't': tr->tstamp++; break;
		case 'r': tr->relative = 1; break;
		case 'c': tr->summary = 1; break;
		case 'C': tr->summary = 2; break;
		case 'y': tr->decode_fds = 1; break;
		case 'Z': tr->failed_only = 1; break;
		case 'v': break; /* structures are printed in full where decoded */
		case 'w': break; /* -c's times are wall-clock times already */
		}
	}
	if (tr->tstamp > 3)
		tr->tstamp = 3;
	return 1;
}

int zv_trace_setup(void)
{
	struct zv_trace *tr = &zv_proc.trace;
	tr->fd = -1;
	if (tr->summary == 1)
		tr->on = 0; /* -c: the table only */
	int any = 0;
	for (int i = 0; i < 512 / 64; i++)
		any |= tr->set[i] != 0;
	if (!any && !tr->vdso_shown)
		for (int i = 0; i < 512 / 64; i++)
			tr->set[i] = ~0UL; /* no -e trace=: everything */
	if (!tr->path[0])
		return 0; /* stderr: the kept copy */
	if (tr->follow == 2 && tr->on)
		return 0; /* FILE.PID, opened by each process */
	long fd = zv_openat(AT_FDCWD, tr->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0) {
		zv_dprintf(2, "zvisor: cannot open %s: %s\n", tr->path, zv_strerror((int)-fd));
		return -1;
	}
	tr->fd = zv_hide_fd((int)fd);
	return 0;
}

/* ---- the state an exec'd image inherits -------------------------------- */

static int ff_fd(int pid);

/* X=fd:traced: the output (-ff: this process's file, open) and whether the
 * exec'ing thread is traced. Left out, as Y, when no option was given. */
int zv_trace_encode_out(char *buf, size_t n, const struct zv_exec_carry *x)
{
	const struct zv_trace *tr = &zv_proc.trace;
	if (!tr->opts[0])
		return -1;
	int fd = tr->follow == 2 && tr->path[0] && tr->on ? ff_fd(zv_current()->pid) : tr->fd;
	return zv_snprintf(buf, n, "%d:%d", fd, zv_current()->trace.traced);
}

const char *zv_trace_decode_out(const char *s, struct zv_exec_carry *x)
{
	int fd = (int)zv_parse_dec(s, &s);
	if (*s == ':')
		s++;
	zv_proc.trace.fd = fd;
	zv_proc.trace.exec_traced = (int)zv_parse_dec(s, &s);
	if (fd >= 0) { /* -ff: this process's file, already open */
		zv_proc.trace.ff[0].pid = zv_proc.pid;
		zv_proc.trace.ff[0].fd = fd;
	}
	return s;
}

int zv_trace_encode_opts(char *buf, size_t n, const struct zv_exec_carry *x)
{
	const struct zv_trace *tr = &zv_proc.trace;
	return tr->opts[0] ? zv_snprintf(buf, n, "%s", tr->opts) : -1;
}

/* Y=the options' text, to the end of the state */
const char *zv_trace_decode_opts(const char *s, struct zv_exec_carry *x)
{
	struct zv_trace *tr = &zv_proc.trace;
	char words[sizeof tr->opts];
	char *argv[128];
	int argc = 0;
	zv_strlcpy(words, s, sizeof words);
	for (char *p = words; *p && argc < 127;) {
		argv[argc++] = p;
		char *e = zv_strchr(p, '\x1f');
		if (!e)
			break;
		*e = 0;
		p = e + 1;
	}
	argv[argc] = NULL;
	zv_strlcpy(tr->opts, s, sizeof tr->opts);
	tr->restoring = 1;
	int fd = tr->fd;
	for (int i = 0; i < argc;) {
		int k = zv_trace_option(argc - i, argv + i);
		i += k > 0 ? k : 1;
	}
	tr->fd = fd;
	tr->restoring = 0;
	if (tr->summary == 1)
		tr->on = 0;
	int any = 0;
	for (int i = 0; i < 512 / 64; i++)
		any |= tr->set[i] != 0;
	if (!any && !tr->vdso_shown)
		for (int i = 0; i < 512 / 64; i++)
			tr->set[i] = ~0UL;
	return s + zv_strlen(s);
}

/* ---- lines --------------------------------------------------------------- */

static int64_t now_ns(int clk)
{
	struct { int64_t sec; long nsec; } ts = { 0, 0 };
	if (zv_host_vdso_call(0, clk, (long)&ts) == -ENOSYS)
		zv_sys2(__NR_clock_gettime, clk, &ts);
	return ts.sec * 1000000000LL + ts.nsec;
}

/* -ff: this process's FILE.PID, opened at its first line. The table is
 * keyed by pid because a vfork child shares the parent's memory; tr->fd is
 * set to the caller's own (the fd the kernel hides from the guest). */
static int ff_fd(int pid)
{
	struct zv_trace *tr = &zv_proc.trace;
	for (int i = 0; i < 8; i++)
		if (tr->ff[i].pid == pid)
			return tr->fd = tr->ff[i].fd;
	char path[sizeof tr->path + 16];
	zv_snprintf(path, sizeof path, "%s.%d", tr->path, pid);
	long fd = zv_openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0)
		return zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2;
	fd = zv_hide_fd((int)fd);
	int slot = 0;
	for (int i = 0; i < 8; i++)
		if (!tr->ff[i].pid) {
			slot = i;
			break;
		}
	tr->ff[slot].pid = pid;
	tr->ff[slot].fd = (int)fd;
	return tr->fd = (int)fd;
}

static int output_fd(void)
{
	struct zv_trace *tr = &zv_proc.trace;
	if (tr->follow == 2 && tr->path[0] && tr->on)
		return ff_fd(zv_current()->pid);
	if (tr->fd >= 0)
		return tr->fd;
	return zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2;
}

/* whose line: a thread's ids (the thread printing may be another one, see
 * killed_thread) */
struct who {
	int pid, tid, injected;
};

static struct who who_of(const struct zv_thread *t)
{
	struct who w = { t->pid, t->tid, t->trace.injected };
	return w;
}

static void begin_line(struct zv_tb *b, const struct who *t, int64_t when)
{
	const struct zv_trace *tr = &zv_proc.trace;
	b->len = 0;
	b->full = 0;
	if (tr->follow && tr->follow != 2) {
		if (tr->path[0])
			tb_printf(b, "%-5d ", t->tid);
		else if (t->tid != zv_proc.leader_pid)
			tb_printf(b, "[pid %5d] ", t->tid);
	}
	if (tr->tstamp) {
		int64_t s = when / 1000000000LL, us = when % 1000000000LL / 1000;
		if (tr->tstamp == 3) {
			tb_printf(b, "%ld.%06ld ", s, us);
		} else {
			int64_t d = s % 86400;
			tb_printf(b, "%02ld:%02ld:%02ld", d / 3600, d / 60 % 60, d % 60);
			if (tr->tstamp == 2)
				tb_printf(b, ".%06ld", us);
			tb_putc(b, ' ');
		}
	}
	if (tr->relative) {
		static volatile int64_t last;
		int64_t prev = __atomic_exchange_n(&last, when, __ATOMIC_RELAXED), d = prev ? when - prev : 0;
		tb_printf(b, "%6ld.%06ld ", (long)(d / 1000000000LL), (long)(d % 1000000000LL / 1000));
	}
}

static void end_line(struct zv_tb *b)
{
	if (b->full)
		tb_puts(b, "...");
	b->buf[b->len++] = '\n';
	zv_write(output_fd(), b->buf, b->len);
}

static void args_of(struct zv_tb *b, const struct zv_tcall *c);
void zv_dec_arg(struct zv_tb *b, const struct zv_tcall *c, int i, char kind);

static int shown(const struct zv_thread *t, long nr, int vdso)
{
	const struct zv_trace *tr = &zv_proc.trace;
	if (!tr->on || !t->trace.traced || (unsigned long)nr >= 512)
		return 0;
	if (vdso)
		return tr->vdso_shown && (tr->set[nr / 64] >> (nr % 64) & 1);
	return tr->set[nr / 64] >> (nr % 64) & 1;
}

static void print_result(struct zv_tb *b, const struct zv_tcall *c, int injected)
{
	const struct zv_sysdesc *d = &zv_row(c->nr)->trace;
	size_t col = b->len; /* columns: the line so far (one per byte here) */
	if (col < COLUMN)
		while (b->len < COLUMN)
			tb_putc(b, ' ');
	else
		tb_putc(b, ' ');
	tb_puts(b, "= ");
	long r = c->ret;
	if (d->ret == '?' || c->killed) {
		tb_putc(b, '?');
	} else if (r == -EINTR && zv_sys_restart_code(c->nr, c->a)) {
		/* strace sees the kernel's restart code that became EINTR */
		int e = zv_sys_restart_code(c->nr, c->a);
		tb_printf(b, "? %s (%s)", zv_errno_name(e), zv_errno_text(e));
	} else if (r < 0 && r > -4096) {
		const char *name = zv_errno_name((int)-r), *text = zv_errno_text((int)-r);
		if (name)
			tb_printf(b, "-1 %s (%s)", name, text ? text : name);
		else
			tb_printf(b, "-1 E??? (errno %ld)", -r);
	} else if (d->ret == '=' && !zv_proc.trace.raw) {
		d->after(b, c); /* the value and what follows it */
	} else if (d->ret == 'x') {
		tb_printf(b, "0x%lx", r);
	} else if (d->ret == 'o') {
		tb_mode(b, (uint64_t)r);
	} else {
		tb_printf(b, "%ld", r);
	}
	if (d->after && d->ret != '=' && !(r < 0 && r > -4096) && !zv_proc.trace.raw)
		d->after(b, c);
	if (injected)
		tb_puts(b, " (INJECTED)");
	if (c->vdso)
		tb_puts(b, " (vDSO)"); /* made through the vDSO: no system call natively */
}

/* --json: one object per line; text as a JSON string */
static void json_str(struct zv_tb *b, const char *s, size_t n)
{
	tb_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			tb_putc(b, '\\');
			tb_putc(b, (char)ch);
		} else if (ch < 0x20 || ch >= 0x7f) {
			tb_printf(b, "\\u%04x", ch);
		} else {
			tb_putc(b, (char)ch);
		}
	}
	tb_putc(b, '"');
}

static void json_head(struct zv_tb *b, const struct who *t, int64_t when)
{
	b->len = 0;
	b->full = 0;
	tb_printf(b, "{\"pid\":%d,\"tid\":%d,\"time\":%ld.%06ld", t->pid, t->tid, (long)(when / 1000000000LL),
		  (long)(when % 1000000000LL / 1000));
}

static void json_call(const struct who *t, const struct zv_tcall *c, int64_t start, int64_t took)
{
	struct zv_tb args, b;
	args.len = 0;
	args.full = 0;
	args_of(&args, c);
	json_head(&b, t, start);
	const char *name = zv_sysname(c->nr) ? zv_sysname(c->nr) : "syscall";
	tb_printf(&b, ",\"syscall\":\"%s\",\"nr\":%ld,\"vdso\":%s,\"args\":", name, c->nr, c->vdso ? "true" : "false");
	json_str(&b, args.buf, args.len);
	tb_puts(&b, ",\"raw\":[");
	int n = zv_row(c->nr)->trace.nargs;
	for (int i = 0; i < n && i < 6; i++)
		tb_printf(&b, "%s%ld", i ? "," : "", c->a[i]);
	tb_putc(&b, ']');
	long r = c->ret;
	if (zv_row(c->nr)->trace.ret == '?') {
		tb_puts(&b, ",\"return\":null");
	} else if (r < 0 && r > -4096) {
		const char *en = zv_errno_name((int)-r);
		tb_printf(&b, ",\"return\":-1,\"errno\":%ld,\"error\":\"%s\"", -r, en ? en : "E???");
	} else {
		tb_printf(&b, ",\"return\":%ld", r);
	}
	if (t->injected)
		tb_puts(&b, ",\"injected\":true");
	if (c->exiting && zv_row(c->nr)->trace.ret != '?')
		tb_printf(&b, ",\"duration\":%ld.%06ld", (long)(took / 1000000000LL), (long)(took % 1000000000LL / 1000));
	tb_putc(&b, '}');
	b.full = 0; /* a cut object would be invalid: the args string was cut instead */
	end_line(&b);
}

/* For a call that never returned, strace shows only the arguments it
 * prints on entry (the row's entry_args, -1 for all of them): keeps the
 * first n arguments printed since from, then strace's
 * " <unfinished ...>" marker (the separators are the ", " outside
 * strings, brackets and braces). */
static void cut_unfinished(struct zv_tb *b, size_t from, int n)
{
	if (n < 0)
		return;
	int depth = 0, quoted = 0, seen = 0;
	size_t i = from;
	for (; n > 0 && i < b->len; i++) {
		char ch = b->buf[i];
		if (quoted) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				quoted = 0;
		} else if (ch == '"') {
			quoted = 1;
		} else if (ch == '{' || ch == '[' || ch == '(') {
			depth++;
		} else if (ch == '}' || ch == ']' || ch == ')') {
			depth--;
		} else if (ch == ',' && !depth && ++seen == n) {
			break;
		}
	}
	b->len = n > 0 ? i : from;
	tb_puts(b, n > 0 ? ",  <unfinished ...>" : " <unfinished ...>");
}

static void print_call_of(const struct who *t, const struct zv_tcall *c, int64_t start, int64_t took)
{
	struct zv_tb b;
	if (zv_proc.trace.json) {
		json_call(t, c, start, took);
		return;
	}
	begin_line(&b, t, start);
	if (zv_sysname(c->nr)) {
		tb_puts(&b, zv_sysname(c->nr));
		tb_putc(&b, '(');
		size_t from = b.len;
		args_of(&b, c);
		if (c->killed)
			cut_unfinished(&b, from, zv_row(c->nr)->entry_args - 1);
	} else {
		/* a number without a call: strace's syscall_0x1f4 with all six registers */
		tb_printf(&b, "syscall_0x%lx(", c->nr);
		for (int i = 0; i < 6; i++)
			tb_printf(&b, c->a[i] ? "%s0x%lx" : "%s0", i ? ", " : "", c->a[i]);
	}
	tb_putc(&b, ')');
	if (c->exiting) {
		print_result(&b, c, t->injected);
		if (zv_proc.trace.show_time)
			tb_printf(&b, " <%ld.%06ld>", (long)(took / 1000000000LL), (long)(took % 1000000000LL / 1000));
	}
	end_line(&b);
}

static void print_call(struct zv_thread *t, const struct zv_tcall *c, int64_t start, int64_t took)
{
	struct who w = who_of(t);
	print_call_of(&w, c, start, took);
}

static long trace_call(struct zv_call *call)
{
	struct zv_thread *t = call->t;
	struct zv_ucontext *uc = call->uc;
	long nr = call->nr, *a = call->a;
	const struct zv_trace *tr = &zv_proc.trace;
	int vdso = zv_vdso_call(uc->mc.rip);
	int show = shown(t, nr, vdso);
	/* -c's time: TSC cycles when it may be read, else the clock's */
	uint64_t c0 = tr->summary && zv_count_tsc ? zv_rdtsc() : 0;
	int timed = (tr->summary && !c0) || (show && (tr->show_time || tr->tstamp || tr->relative || tr->json));
	int wall = tr->tstamp || tr->json; /* lines stamped with the time of day */
	int64_t start = timed ? now_ns(wall ? 0 : 1) : 0;
	int64_t mono = wall ? (timed ? now_ns(1) : 0) : start;
	struct zv_tcall c = { .nr = nr, .exiting = 1, .vdso = vdso, .sp = uc->mc.rsp, .pre = -1 };
	for (int i = 0; i < 6; i++)
		c.a[i] = a[i];
	int li = show ? zv_arg_index(zv_row(nr)->socklen) : -1; /* a socklen_t the call rewrites */
	int32_t len;
	if (li >= 0 && a[li] && zv_peek(&len, (uint64_t)a[li], 4) == 0)
		c.pre = len; /* strace shows [in => out] when the call changes it */
	if (show && (nr == __NR_select || nr == __NR_pselect6))
		for (int i = 0; i < 3; i++)
			if (!a[1 + i] || zv_peek(&c.sets[i], (uint64_t)a[1 + i], 8) < 0)
				c.sets[i] = 0;
	if (show && zv_row(nr)->trace.ret == '?' && !tr->failed_only) {
		/* exit, exit_group: the line ends "= ?" before the call */
		c.ret = 0;
		print_call(t, &c, start, 0);
	}
	t->trace.fd = -1;
	if (show && tr->decode_fds && nr == __NR_close && a[0] >= 0) {
		/* -y: the path, before close makes it go */
		char path[40];
		zv_snprintf(path, sizeof path, "/proc/self/fd/%d", (int)a[0]);
		long n = zv_sys4(__NR_readlinkat, -100, path, t->trace.fd_path, sizeof t->trace.fd_path - 1);
		t->trace.fd_path[n > 0 ? n : 0] = 0;
		t->trace.fd = (int)a[0];
	}
	if (t->trace.traced && tr->on && tr->follow)
		zv_live_enter(t, nr, a);
	long r = zv_next(call);
	uint64_t c1 = c0 && zv_count_tsc ? zv_rdtsc() : 0; /* prctl may have disabled it */
	zv_live_leave(t);
	int64_t took = timed ? now_ns(1) - mono : 0;
	if (r == ZV_NORESULT)
		c.ret = (long)uc->mc.rax;
	else
		c.ret = r;
	if (c.ret == -EINTR && t->call_cancelled)
		return r; /* never started: restarted after the handler, its line comes then */
	if (tr->summary && t->trace.traced && !zv_sys_in_child(nr, c.ret)) {
		if (!c0)
			zv_count_time(nr, vdso, took);
		else if (c1)
			zv_count_cycles(nr, vdso, c1 - c0);
	}
	/* A fork child returns here too (0): the parent prints the call. */
	if (zv_sys_in_child(nr, c.ret))
		return r;
	if (show && zv_row(nr)->trace.ret != '?' && !(tr->failed_only && !(c.ret < 0 && c.ret > -4096)))
		print_call(t, &c, start, took);
	return r;
}

void zv_trace_exec(struct zv_thread *t, long nr, const long *a, long ret)
{
	zv_live_release(t); /* the new image starts without a slot */
	if (!shown(t, nr, 0) || (zv_proc.trace.failed_only && ret == 0))
		return;
	struct zv_tcall c = { .nr = nr, .ret = ret, .exiting = 1 };
	for (int i = 0; i < 6; i++)
		c.a[i] = a[i];
	print_call(t, &c, zv_proc.trace.tstamp ? now_ns(0) : now_ns(1), 0);
}

/* ---- signals and exits ---------------------------------------------------- */

void zv_trace_signal(struct zv_thread *t, int sig, const void *siginfo)
{
	if (!zv_proc.trace.on || !t->trace.traced || zv_proc.trace.failed_only)
		return;
	struct zv_tb b;
	struct who w = who_of(t);
	if (zv_proc.trace.json) {
		struct zv_tb info = { 0, 0, { 0 } };
		zv_decode_siginfo(&info, siginfo);
		json_head(&b, &w, now_ns(0));
		tb_puts(&b, ",\"signal\":");
		const char *sn = zv_signal_name(sig);
		tb_printf(&b, "\"%s\",\"siginfo\":", sn ? sn : "SIG???");
		json_str(&b, info.buf, info.len);
		tb_putc(&b, '}');
		end_line(&b);
		return;
	}
	begin_line(&b, &w, zv_proc.trace.tstamp ? now_ns(0) : now_ns(1));
	tb_puts(&b, "--- ");
	tb_signame(&b, sig);
	tb_putc(&b, ' ');
	zv_decode_siginfo(&b, siginfo);
	tb_puts(&b, " ---");
	end_line(&b);
}

static void exit_line(const struct who *t, int code, int sig)
{
	struct zv_tb b;
	if (zv_proc.trace.json) {
		json_head(&b, t, now_ns(0));
		if (sig) {
			const char *sn = zv_signal_name(sig & 0x7f);
			tb_printf(&b, ",\"killed\":\"%s\",\"core\":%s}", sn ? sn : "SIG???", sig & 0x80 ? "true" : "false");
		} else {
			tb_printf(&b, ",\"exit\":%d}", code & 0xff);
		}
		end_line(&b);
		return;
	}
	begin_line(&b, t, zv_proc.trace.tstamp ? now_ns(0) : now_ns(1));
	if (sig) {
		tb_puts(&b, "+++ killed by ");
		tb_signame(&b, sig & 0x7f);
		tb_puts(&b, sig & 0x80 ? " (core dumped) +++" : " +++");
	} else {
		tb_printf(&b, "+++ exited with %d +++", code & 0xff);
	}
	end_line(&b);
}

/* How the process ends for the other threads (exit_group or a signal). */
static int end_code, end_sig;

/* Another thread of the process that exit_group or a signal ends: the
 * call it was blocked in, "= ?", and its exit line, as strace shows them. */
static void killed_thread(int pid, int tid, long nr, const long *a)
{
	struct who w = { pid, tid, 0 };
	if (nr >= 0 && nr < 512 && !zv_proc.trace.failed_only && (zv_proc.trace.set[nr / 64] >> (nr % 64) & 1)) {
		struct zv_tcall c = { .nr = nr, .exiting = 1, .killed = 1, .ret = -512, .pre = -1 };
		for (int i = 0; i < 6; i++)
			c.a[i] = a[i];
		print_call_of(&w, &c, zv_proc.trace.tstamp ? now_ns(0) : now_ns(1), 0);
	}
	exit_line(&w, end_code, end_sig);
}

void zv_trace_exit(struct zv_thread *t, int code, int sig)
{
	if (!zv_proc.trace.on || !t->trace.traced)
		return;
	long nr = zv_live_call(t);
	if ((nr == __NR_exit_group || sig) && zv_proc.trace.follow) {
		end_code = code;
		end_sig = sig;
		zv_live_others(t, killed_thread);
	}
	zv_live_release(t);
	struct who w = who_of(t);
	exit_line(&w, code, sig);
}

static void trace_fork_child(struct zv_thread *t)
{
	struct zv_trace *tr = &zv_proc.trace;
	t->trace.traced = t->trace.traced && tr->follow;
	zv_live_forget(t); /* the parent's threads are not this process's */
	if (tr->follow != 2)
		return;
	for (int i = 0; i < 8; i++) /* the parent's files: the child opens its own */
		if (tr->ff[i].pid) {
			zv_close(tr->ff[i].fd);
			tr->ff[i].pid = 0;
		}
	tr->fd = -1;
}

static void trace_exec(struct zv_thread *t, long nr, const long *a) { zv_trace_exec(t, nr, a, 0); }

/* The layer: every call while tracing or summing (-c); with -c alone and
 * the TSC, the fast path's direct host calls time themselves. */
static int trace_sees(long nr) { return zv_proc.trace.on || zv_proc.trace.summary; }
static int trace_inline(void) { return !zv_proc.trace.on && zv_proc.trace.summary && zv_count_tsc; }

const struct zv_layer zv_trace_layer = {
	.name = "trace", .sees = trace_sees, .call = trace_call, .inline_host = trace_inline,
	.fork_child = trace_fork_child, .exec = trace_exec, .exit = zv_trace_exit, .signal = zv_trace_signal,
};

/* ---- arguments ------------------------------------------------------------- */

void zv_dec_arg(struct zv_tb *b, const struct zv_tcall *c, int i, char kind)
{
	long v = c->a[i];
	int ok = c->ret >= 0 || c->ret <= -4096;
	if (zv_proc.trace.raw && kind != 's' && kind != 'S' && kind != 'b' && kind != 'w')
		kind = 'x';
	switch (kind) {
	case 'd': tb_printf(b, "%d", (int)v); break;
	case 'D': tb_printf(b, "%ld", v); break;
	case 'u': tb_printf(b, "%u", (unsigned)v); break;
	case 'U': tb_printf(b, "%lu", (unsigned long)v); break;
	case 'p': tb_ptr(b, (uint64_t)v); break;
	case 'X':
		if (v)
			tb_printf(b, "0x%lx", v);
		else
			tb_putc(b, '0');
		break;
	case 'f': tb_fd(b, v); break;
	case 'a': tb_atfd(b, v); break;
	case 's': tb_path(b, (uint64_t)v); break;
	case 'S': tb_str(b, (uint64_t)v); break;
	case 'm': tb_mode(b, (uint64_t)(unsigned)v); break; /* strace shows the file type bits too */
	case 'b':
		if (ok && c->exiting)
			tb_buf(b, (uint64_t)v, c->ret);
		else
			tb_ptr(b, (uint64_t)v);
		break;
	case 'w': tb_buf(b, (uint64_t)v, i + 1 < 6 ? c->a[i + 1] : 0); break;
	case 'c': tb_enum(b, (uint64_t)(uint32_t)v, &zv_n_clocks, "0x%lx /* CLOCK_??? */"); break;
	case 'P': tb_flags(b, (uint64_t)v, &zv_n_prot, "PROT_NONE"); break;
	case 'F':
		tb_enum(b, (uint64_t)v & 3, &zv_n_map_type, "0x%lx");
		if (v & ~3L) {
			tb_putc(b, '|');
			tb_flags(b, (uint64_t)v & ~3UL, &zv_n_map_flags, "0");
		}
		break;
	case 'A': tb_flags(b, (uint64_t)v, &zv_n_at_flags, "0"); break;
	case 'k': tb_flags(b, (uint64_t)v, &zv_n_access_modes, "F_OK"); break;
	case 'h': tb_enum(b, (uint64_t)v, &zv_n_sigprocmask_how, "0x%lx"); break;
	case 'g': tb_sigset(b, (uint64_t)v, (uint64_t)c->a[3]); break;
	case 't': tb_timespec(b, (uint64_t)v); break;
	case 'T':
		if (ok)
			tb_timespec(b, (uint64_t)v);
		else
			tb_ptr(b, (uint64_t)v);
		break;
	case 'e': tb_signame(b, (int)v); break;
	case 'o': {
		static const char *const acc[] = { "O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE" };
		tb_puts(b, acc[v & 3]);
		if (v & ~3L) {
			tb_putc(b, '|');
			tb_flags(b, (uint64_t)v & ~3UL, &zv_n_open_flags, "0");
		}
		break;
	}
	default: tb_printf(b, "0x%lx", v); break;
	}
}

static void args_of(struct zv_tb *b, const struct zv_tcall *c)
{
	const struct zv_sysdesc *d = &zv_row(c->nr)->trace;
	if (d->decode && !zv_proc.trace.raw) {
		d->decode(b, c);
		return;
	}
	if (d->sig) {
		zv_dec_args(b, c, d->sig);
		if (d->flags) {
			size_t n = zv_strlen(d->sig);
			if (n)
				tb_puts(b, ", ");
			if (zv_proc.trace.raw)
				zv_dec_arg(b, c, (int)n, 'x');
			else
				tb_flags(b, (uint64_t)(uint32_t)c->a[n], d->flags, "0");
		}
		return;
	}
	for (int i = 0; i < d->nargs && i < 6; i++) {
		if (i)
			tb_puts(b, ", ");
		zv_dec_arg(b, c, i, 'x');
	}
}

void zv_dec_args(struct zv_tb *b, const struct zv_tcall *c, const char *sig)
{
	for (int i = 0; sig[i] && i < 6; i++) {
		if (i)
			tb_puts(b, ", ");
		zv_dec_arg(b, c, i, sig[i]);
	}
}
