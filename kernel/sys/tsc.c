/* The TSC: whether the kernel may read it, and the fast path's cycle sums
 * (sys/tsc.h). */
#include "zvisor.h"
#include "sys/tsc.h"
#include "sys/layer.h"
#include "lib/syscall.h"

int zv_count_tsc;
uint64_t zv_count_cycle_sums[2 * ZV_NSYSCALLS] ZV_COLD_BSS;

/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every
 * state. */
static int invariant_tsc(void)
{
	uint32_t a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
	if (a < 0x80000007u)
		return 0;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
	return (d >> 8) & 1;
}

/* -1 until asked (CPUID costs a trip to the hypervisor); 0 once the guest
 * disables the TSC (zv_count_tsc_off). */
static int tsc_usable = -1;

int zv_tsc_usable(void)
{
	int mode = 0;
	if (tsc_usable < 0)
		tsc_usable = invariant_tsc() && zv_sys2(__NR_prctl, 25 /* PR_GET_TSC */, &mode) == 0 &&
			     mode == 1 /* PR_TSC_ENABLE */;
	return tsc_usable;
}

void zv_count_cycles(long nr, int vdso, uint64_t c)
{
	if ((unsigned long)nr < ZV_NSYSCALLS)
		__atomic_fetch_add(&zv_count_cycle_sums[nr + (vdso ? ZV_NSYSCALLS : 0)], c, __ATOMIC_RELAXED);
}

void zv_count_tsc_off(void)
{
	zv_event_tsc_off(); /* --count flushes its sums */
	tsc_usable = 0;
	if (zv_count_tsc) {
		zv_count_tsc = 0;
		zv_layers_fold(); /* summed calls go through the trace layer again */
	}
}
