/* zvisor trace's lines (output.c) and argument lists (args.c), as the
 * layer (layer.c) asks for them. */
#ifndef ZV_TRACE_OUTPUT_H
#define ZV_TRACE_OUTPUT_H
#include <stdint.h>
#include "trace/trace.h"

/* Whose line: a thread's ids (the thread printing may be another one: a
 * thread that exit_group ends is shown by the one that called it). */
struct zv_trace_who {
	int pid, tid, injected;
};

int64_t zv_trace_clock(int clk); /* CLOCK_REALTIME (0) or CLOCK_MONOTONIC (1), in ns */
int64_t zv_trace_stamp(void);    /* the time a line is stamped with (-t: of day) */

/* One call's line (or --json object); start and took for -t and -T. */
void zv_trace_call_line(const struct zv_trace_who *w, const struct zv_tcall *c, int64_t start, int64_t took);
void zv_trace_signal_line(const struct zv_trace_who *w, int sig, const void *siginfo); /* --- SIGX {...} --- */
void zv_trace_exit_line(const struct zv_trace_who *w, int code, int sig); /* +++ exited with 0 +++ */
/* In a fork child: -ff's files are the parent's, the child opens its own. */
void zv_trace_out_fork_child(void);

/* outbuf.c: lines of quiet calls wait in a per-process buffer. */
void zv_trace_out(int fd, const char *line, size_t n, int keep);
int zv_trace_before(long nr, const long *a); /* a call that is not quiet writes the buffer first; returns quiet */
void zv_trace_flush(void);
void zv_trace_out_forget(void); /* a fork child: the parent's lines are not its own */

/* args.c: the call's arguments, without the parentheses. */
void zv_trace_args(struct zv_tb *b, const struct zv_tcall *c);
#endif
