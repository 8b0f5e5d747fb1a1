/* --count: the number of guest system calls (and failures) by name, summed
 * over every process and thread of the guest (like strace -f -c without
 * times). The table lives in a shared memfd so that forked children and
 * exec'd images add to the same counters; the first guest process prints it. */
#ifndef ZV_TRACE_COUNT_H
#define ZV_TRACE_COUNT_H
#include <stdint.h>
#include "sys/tsc.h"

/* Creates the shared table; returns its fd (the caller hides it) or -errno. */
int zv_count_create(void);
/* Maps the table from fd (after execve). Returns 0 or -errno. */
int zv_count_attach(int fd);
/* Records one guest call nr that returned ret (ret in -4095..-1 is an error),
 * made through the vDSO if vdso is set (counted on a row of its own).
 * Lock-free; safe from any thread or process. No-op when not attached. */
void zv_count_record(long nr, long ret, int vdso);
/* Takes back one call recorded for nr (an execve recorded before it ran,
 * whose failure is then recorded). */
void zv_count_unrecord(long nr);
/* Prints the table to fd in strace -c's layout without the time columns,
 * sorted by calls (descending), then by name. */
void zv_count_report(int fd);
/* Adds ns of time spent in call nr (zvisor trace -c); with zv_count_timed
 * set the report is strace -c's full table, sorted by time. */
void zv_count_time(long nr, int vdso, int64_t ns);
extern int zv_count_timed;

/* Timing with the TSC (zvisor trace -c; sys/tsc.h): cycles are summed
 * per process and converted to ns with the process's own measure of the
 * TSC's rate (cycles and ns since zv_count_tsc_init) when it flushes them:
 * at its exit, before execve and when the guest disables the TSC.
 * zv_count_tsc is set while the TSC may be read: an invariant TSC that the
 * guest has not disabled (PR_SET_TSC). */
void zv_count_tsc_init(void);
void zv_count_flush(void);
/* In a fork child: the parent flushes what it summed. */
void zv_count_after_fork(void);
#endif
