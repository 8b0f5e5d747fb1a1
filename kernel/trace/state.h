/* zvisor trace's state in the core's blocks: struct zv_proc's trace and
 * struct zv_thread's trace (docs/DESIGN.md, "Source layout": a feature's
 * state.h holds plain types only). */
#ifndef ZV_TRACE_STATE_H
#define ZV_TRACE_STATE_H
#include <stdint.h>

struct zv_trace {
	int on;                 /* tracing calls (not only -c) */
	int summary;            /* -c (1) or -C (2) */
	int follow;             /* -f; -ff is follow 2 */
	int failed_only;        /* -e status=failed, -Z */
	int tstamp;             /* -t 1, -tt 2, -ttt 3 */
	int show_time;          /* -T */
	int relative;           /* -r */
	int json;               /* --json */
	int decode_fds;         /* -y */
	int raw;                /* -X raw: numbers instead of names */
	int fd;                 /* where lines go (hidden), -1 before -ff opens it */
	int inject;             /* -e inject= rules exist (trace/inject.c) */
	int restoring;          /* re-reading the options after execve */
	char opts[2048];        /* the options as given, words separated by 0x1f */
	struct { int pid, fd; } ff[8]; /* -ff: each process's FILE.PID (a vfork child shares this memory) */
	uint64_t set[512 / 64]; /* -e trace=: which calls are shown */
	int vdso_shown;         /* -e trace names a vDSO function: show those calls */
	char path[512];         /* -o FILE (for -ff: FILE.PID) */
	int exec_traced;        /* the thread that exec'd this image was traced */
};

/* The trace's state of one thread (a member of struct zv_thread). */
struct zv_trace_thread {
	int traced;             /* zvisor trace shows this thread's calls */
	int injected;           /* the current call's result was injected (trace/inject.c) */
	int fd;                 /* -y: the fd whose path was read before the call (close) */
	int slot;               /* trace/live.c: this thread's slot + 1, or 0 */
	char fd_path[256];      /* that path */
};
#endif
