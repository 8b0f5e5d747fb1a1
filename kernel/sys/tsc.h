/* The TSC as the kernel uses it (sys/tsc.c): whether it may be read, and
 * the per-call cycle sums the fast path keeps for trace -c, which the
 * count feature converts to time and flushes (trace/count.c). Reading it
 * costs a third of a clock_gettime, which matters at two reads per call. */
#ifndef ZV_SYS_TSC_H
#define ZV_SYS_TSC_H
#include <stdint.h>
#define ZV_NSYSCALLS 512

static inline uint64_t zv_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}
/* Whether the kernel may read the TSC (cr/waits.c, -c): invariant, and
 * not disabled by the guest. */
int zv_tsc_usable(void);
/* Set while calls are timed with the TSC (trace -c: zv_count_tsc_init). */
extern int zv_count_tsc;
/* This process's cycles per call not yet flushed: rows 0..511 the calls,
 * the next 512 the same calls through the vDSO. */
extern uint64_t zv_count_cycle_sums[2 * ZV_NSYSCALLS];
void zv_count_cycles(long nr, int vdso, uint64_t cycles);
/* The guest disables the TSC (PR_SET_TSC, seccomp's strict mode): the
 * features flush what they timed (the tsc_off event), then time with
 * clocks. */
void zv_count_tsc_off(void);
#endif
