/* `zvisor trace -p PID` (trace/remote.c). */
#ifndef ZV_TRACE_REMOTE_H
#define ZV_TRACE_REMOTE_H
#include <stddef.h>

struct zv_thread;

/* The pids -p named, in order. */
extern int zv_trace_pids[16];
extern int zv_trace_npids;
/* The command: attach to each, wait for Ctrl-C or their end, detach. */
__attribute__((noreturn)) void zv_trace_attach_main(void);
#endif
