/* zvisor trace's layer: which calls, signals and exits are shown (-e
 * trace=, status=failed, the traced threads), the call's timing for -c and
 * -T, and the events of fork, exec and exit; output.c writes the lines. */
#include "zvisor.h"
#include "trace/trace.h"
#include "trace/count.h"
#include "trace/live.h"
#include "trace/output.h"
#include "lib/syscall.h"
#include "lib/fmt.h"
#include "sys/layer.h"

static struct zv_trace_who who_of(const struct zv_thread *t)
{
	struct zv_trace_who w = { t->pid, t->tid, t->trace.injected };
	return w;
}

static int shown(const struct zv_thread *t, long nr, int vdso)
{
	const struct zv_trace *tr = &zv_proc.trace;
	if (!tr->on || !t->trace.traced || (unsigned long)nr >= 512)
		return 0;
	if (vdso)
		return tr->vdso_shown && (tr->set[nr / 64] >> (nr % 64) & 1);
	return tr->set[nr / 64] >> (nr % 64) & 1;
}

static void print_call(struct zv_thread *t, const struct zv_tcall *c, int64_t start, int64_t took)
{
	struct zv_trace_who w = who_of(t);
	zv_trace_call_line(&w, c, start, took);
}

static long trace_call(struct zv_call *call)
{
	struct zv_thread *t = call->t;
	struct zv_ucontext *uc = call->uc;
	long nr = call->nr, *a = call->a;
	const struct zv_trace *tr = &zv_proc.trace;
	int vdso = zv_vdso_call(uc->mc.rip);
	int show = shown(t, nr, vdso);
	int quiet = tr->on ? zv_trace_before(nr, a) : 0;
	/* -c's time: TSC cycles when it may be read, else the clock's */
	uint64_t c0 = tr->summary && zv_count_tsc ? zv_rdtsc() : 0;
	int timed = (tr->summary && !c0) || (show && (tr->show_time || tr->tstamp || tr->relative || tr->json));
	int wall = tr->tstamp || tr->json; /* lines stamped with the time of day */
	int64_t start = timed ? zv_trace_clock(wall ? 0 : 1) : 0;
	int64_t mono = wall ? (timed ? zv_trace_clock(1) : 0) : start;
	struct zv_tcall c; /* field by field: an initializer clears it with rep stosq first, every call */
	c.nr = nr;
	for (int i = 0; i < 6; i++)
		c.a[i] = a[i];
	c.ret = 0;
	c.exiting = 1;
	c.vdso = vdso;
	c.sp = uc->mc.rsp;
	c.pre = -1;
	c.sets[0] = c.sets[1] = c.sets[2] = 0;
	c.killed = 0;
	c.quiet = quiet;
	int li = show ? zv_arg_index(zv_row(nr)->socklen) : -1; /* a socklen_t the call rewrites */
	int32_t len;
	if (li >= 0 && a[li] && zv_peek(&len, (uint64_t)a[li], 4) == 0)
		c.pre = len; /* strace shows [in => out] when the call changes it */
	int k = 0; /* the fd_sets the call rewrites, as they were */
	for (unsigned m = show ? zv_row(nr)->fdsets : 0; m && k < 3; m &= m - 1, k++) {
		int i = __builtin_ctz(m);
		if (!a[i] || zv_peek(&c.sets[k], (uint64_t)a[i], 8) < 0)
			c.sets[k] = 0;
	}
	if (show && zv_row(nr)->trace.ret == '?' && !tr->failed_only) {
		/* exit, exit_group: the line ends "= ?" before the call */
		c.ret = 0;
		print_call(t, &c, start, 0);
	}
	t->trace.fd = -1;
	if (show && tr->decode_fds && zv_row(nr)->fdop == ZV_FDOP_CLOSE && a[0] >= 0) {
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
	int64_t took = timed ? zv_trace_clock(1) - mono : 0;
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
	print_call(t, &c, zv_trace_stamp(), 0);
}

void zv_trace_signal(struct zv_thread *t, int sig, const void *siginfo)
{
	if (!zv_proc.trace.on || !t->trace.traced || zv_proc.trace.failed_only)
		return;
	struct zv_trace_who w = who_of(t);
	zv_trace_signal_line(&w, sig, siginfo);
}

/* How the process ends for the other threads (exit_group or a signal). */
static int end_code, end_sig;

/* Another thread of the process that exit_group or a signal ends: the
 * call it was blocked in, "= ?", and its exit line, as strace shows them. */
static void killed_thread(int pid, int tid, long nr, const long *a)
{
	struct zv_trace_who w = { pid, tid, 0 };
	if (nr >= 0 && nr < 512 && !zv_proc.trace.failed_only && (zv_proc.trace.set[nr / 64] >> (nr % 64) & 1)) {
		struct zv_tcall c = { .nr = nr, .exiting = 1, .killed = 1, .ret = -512, .pre = -1 };
		for (int i = 0; i < 6; i++)
			c.a[i] = a[i];
		zv_trace_call_line(&w, &c, zv_trace_stamp(), 0);
	}
	zv_trace_exit_line(&w, end_code, end_sig);
}

void zv_trace_exit(struct zv_thread *t, int code, int sig)
{
	zv_trace_flush(); /* an untraced thread may end the process */
	if (!zv_proc.trace.on || !t->trace.traced)
		return;
	long nr = zv_live_call(t);
	if ((nr == __NR_exit_group || sig) && zv_proc.trace.follow) {
		end_code = code;
		end_sig = sig;
		zv_live_others(t, killed_thread);
	}
	zv_live_release(t);
	struct zv_trace_who w = who_of(t);
	zv_trace_exit_line(&w, code, sig);
}

static void trace_fork_child(struct zv_thread *t)
{
	struct zv_trace *tr = &zv_proc.trace;
	if (t->trace.traced && !tr->follow) /* a write copies the page: every fork would */
		t->trace.traced = 0;
	zv_live_forget(t); /* the parent's threads are not this process's */
	zv_trace_out_fork_child();
	zv_trace_out_forget();
}

static void trace_exec(struct zv_thread *t, long nr, const long *a) { zv_trace_exec(t, nr, a, 0); }

/* An exec made in this process: the other threads are gone, as from a
 * new image's table. */
static void trace_exec_here(struct zv_thread *t) { zv_live_forget(t); }

/* The layer: every call while tracing or summing (-c); with -c alone and
 * the TSC, the fast path's direct host calls time themselves. */
static int trace_on(void) { return zv_proc.trace.on || zv_proc.trace.summary; }
static int trace_sees(long nr) { return trace_on(); }
static int trace_inline(void) { return !zv_proc.trace.on && zv_proc.trace.summary && zv_count_tsc; }

/* strace -f: a new task is traced if its parent is. */
static void trace_new_task(struct zv_thread *t, struct zv_thread *c)
{
	c->trace.traced = t->trace.traced && zv_proc.trace.follow;
}

ZV_LAYER(trace, 100) = {
	.name = "trace", .sees = trace_sees, .active = trace_on, .call = trace_call, .inline_host = trace_inline,
	.fork_child = trace_fork_child, .new_task = trace_new_task, .exec = trace_exec, .exec_here = trace_exec_here,
	.exit = zv_trace_exit, .signal = zv_trace_signal,
};

