/* The platforms' side of the platform interface (sys/platform.h): one
 * implementation per file (intercept/plat_*.c), and what they share. */
#ifndef ZV_INTERCEPT_PLATFORM_H
#define ZV_INTERCEPT_PLATFORM_H
#include <stdint.h>
#include "sys/platform.h"

struct zv_thread;
struct zv_ucontext;

/* What every platform shares, in each one's ops (sys/platform.h). */
#define ZV_PLATFORM_COMMON \
	.fork_child = zv_platform_fork_child, .shared_vm = zv_platform_shared_vm, \
	.need_catchall = zv_sudoff_need, .stats = zv_platform_stats, .kernel_ip = zv_catchall_kernel_ip
void zv_platform_fork_child(struct zv_thread *t);
void zv_platform_shared_vm(void);
void zv_sudoff_need(struct zv_thread *t);
void zv_platform_stats(unsigned long *rewritten, unsigned long *uncovered, int *taint);
uint64_t zv_catchall_kernel_ip(uint64_t ip);

/* What the platforms with a fast entry (intercept/fastentry.S) and
 * rewritten code share: stubs and zpoline. */
#define ZV_PLATFORM_FAST \
	.mm_lock = zv_sites_lock, .mm_unlock = zv_sites_unlock, \
	.owns_gs = 1, .patches_code = 1, .host_vdso = 1

/* intercept/plat_catchall.c: what every platform shares: the SIGSYS
 * handler, SUD for a thread, the seccomp filter. */
long zv_catchall_install(void);
long zv_catchall_arm_thread(struct zv_thread *t);
long zv_fast_arm_thread(struct zv_thread *t, uint64_t bounce_site); /* %gs for a fast entry */
/* By name: the platform whose name is s, or -1. */
int zv_platform_by_name(const char *s);
#endif
