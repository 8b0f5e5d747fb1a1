/* zvisor trace's output: the lines of calls, signals and exits, as text
 * or --json, and where they go (stderr's kept copy, -o FILE, -ff's
 * FILE.PID).
 *
 * A line is formatted on the kernel stack and handed whole to outbuf.c,
 * which writes it to the output (a hidden fd opened with O_APPEND) at once
 * or, for a quiet call, with the next lines, so lines from threads and
 * processes never mix. */
#include "zvisor.h"
#include "trace/trace.h"
#include "trace/output.h"
#include "trace/decode.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/execstate.h"
#include <linux/fcntl.h>

#define COLUMN 40 /* strace aligns " = result" here */

int64_t zv_trace_clock(int clk)
{
	struct { int64_t sec; long nsec; } ts = { 0, 0 };
	if (zv_host_vdso_call(0, clk, (long)&ts) == -ENOSYS)
		zv_sys2(__NR_clock_gettime, clk, &ts);
	return ts.sec * 1000000000LL + ts.nsec;
}

int64_t zv_trace_stamp(void)
{
	return zv_trace_clock(zv_proc.trace.tstamp ? 0 : 1);
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

/* Where a line of process pid goes. The pid is the line's, not the
 * current thread's: the first image's execve line is printed before the
 * kernel runs on a thread block (zv_current() is not a thread there). */
static int output_fd(int pid)
{
	struct zv_trace *tr = &zv_proc.trace;
	if (tr->follow == 2 && tr->path[0] && tr->on)
		return ff_fd(pid);
	if (tr->fd >= 0)
		return tr->fd;
	return zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2;
}

/* A fork child: the parent's files are not its own, it opens its own. */
void zv_trace_out_fork_child(void)
{
	struct zv_trace *tr = &zv_proc.trace;
	if (tr->follow != 2)
		return;
	for (int i = 0; i < 8; i++)
		if (tr->ff[i].pid) {
			zv_close(tr->ff[i].fd);
			tr->ff[i].pid = 0;
		}
	tr->fd = -1;
}

static void begin_line(struct zv_tb *b, const struct zv_trace_who *t, int64_t when)
{
	const struct zv_trace *tr = &zv_proc.trace;
	b->len = 0;
	b->full = 0;
	if (tr->follow && tr->follow != 2) {
		if (tr->path[0]) {
			tb_num(b, t->tid < 0 ? -(unsigned)t->tid : (unsigned)t->tid, 0, t->tid < 0, -5); /* "%-5d " */
			tb_putc(b, ' ');
		} else if (t->tid != zv_proc.leader_pid) {
			tb_putn(b, "[pid ", 5); /* "[pid %5d] " */
			tb_num(b, t->tid < 0 ? -(unsigned)t->tid : (unsigned)t->tid, 0, t->tid < 0, 5);
			tb_putn(b, "] ", 2);
		}
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

/* keep: a quiet call's line, which may wait in the buffer (outbuf.c) */
static void end_line(struct zv_tb *b, const struct zv_trace_who *w, int keep)
{
	if (b->full)
		tb_puts(b, "...");
	b->buf[b->len++] = '\n';
	zv_trace_out(output_fd(w->pid), b->buf, b->len, keep);
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
		zv_decoders[d->after](b, c); /* the value and what follows it */
	} else if (d->ret == 'x') {
		tb_hex(b, (unsigned long)r);
	} else if (d->ret == 'o') {
		tb_mode(b, (uint64_t)r);
	} else {
		tb_dec(b, r);
	}
	if (d->after && d->ret != '=' && !(r < 0 && r > -4096) && !zv_proc.trace.raw)
		zv_decoders[d->after](b, c);
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

static void json_head(struct zv_tb *b, const struct zv_trace_who *t, int64_t when)
{
	b->len = 0;
	b->full = 0;
	tb_printf(b, "{\"pid\":%d,\"tid\":%d,\"time\":%ld.%06ld", t->pid, t->tid, (long)(when / 1000000000LL),
		  (long)(when % 1000000000LL / 1000));
}

static void json_call(const struct zv_trace_who *t, const struct zv_tcall *c, int64_t start, int64_t took)
{
	struct zv_tb args, b;
	args.len = 0;
	args.full = 0;
	zv_trace_args(&args, c);
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
	end_line(&b, t, 0);
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

void zv_trace_call_line(const struct zv_trace_who *t, const struct zv_tcall *c, int64_t start, int64_t took)
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
		zv_trace_args(&b, c);
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
	end_line(&b, t, c->exiting && !c->killed && c->quiet);
}

void zv_trace_exit_line(const struct zv_trace_who *t, int code, int sig)
{
	struct zv_tb b;
	if (zv_proc.trace.json) {
		json_head(&b, t, zv_trace_clock(0));
		if (sig) {
			const char *sn = zv_signal_name(sig & 0x7f);
			tb_printf(&b, ",\"killed\":\"%s\",\"core\":%s}", sn ? sn : "SIG???", sig & 0x80 ? "true" : "false");
		} else {
			tb_printf(&b, ",\"exit\":%d}", code & 0xff);
		}
		end_line(&b, t, 0);
		return;
	}
	begin_line(&b, t, zv_trace_stamp());
	if (sig) {
		tb_puts(&b, "+++ killed by ");
		tb_signame(&b, sig & 0x7f);
		tb_puts(&b, sig & 0x80 ? " (core dumped) +++" : " +++");
	} else {
		tb_printf(&b, "+++ exited with %d +++", code & 0xff);
	}
	end_line(&b, t, 0);
}

void zv_trace_signal_line(const struct zv_trace_who *w, int sig, const void *siginfo)
{
	struct zv_tb b;
	if (zv_proc.trace.json) {
		struct zv_tb info = { 0, 0, { 0 } };
		zv_decode_siginfo(&info, siginfo);
		json_head(&b, w, zv_trace_clock(0));
		tb_puts(&b, ",\"signal\":");
		const char *sn = zv_signal_name(sig);
		tb_printf(&b, "\"%s\",\"siginfo\":", sn ? sn : "SIG???");
		json_str(&b, info.buf, info.len);
		tb_putc(&b, '}');
		end_line(&b, w, 0);
		return;
	}
	begin_line(&b, w, zv_trace_stamp());
	tb_puts(&b, "--- ");
	tb_signame(&b, sig);
	tb_putc(&b, ' ');
	zv_decode_siginfo(&b, siginfo);
	tb_puts(&b, " ---");
	end_line(&b, w, 0);
}

/* ---- across execve ------------------------------------------------------ */

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

ZV_EXEC_FIELD(trace_out, 800, 'X', zv_trace_encode_out, zv_trace_decode_out);
