/* What the rest of the kernel calls in intercept/:
 * the platform's set-up, the SIGSYS handler, the fast entry's C side. */
#ifndef ZV_INTERCEPT_INTERCEPT_H
#define ZV_INTERCEPT_INTERCEPT_H
#include <stdint.h>
#include "arch/context.h"

struct zv_thread;

/* intercept/plat_catchall.c */
long zv_platform_install(void);          /* once per process image */
long zv_platform_arm_thread(struct zv_thread *t); /* SUD (and %gs) for the calling thread */
long zv_platform_arm_fork_child(struct zv_thread *t); /* the same in a fork child, which inherits %gs */
void zv_sigsys_handler(int sig, zv_siginfo *si, void *uc);
void zv_sigsys_late(struct zv_ucontext *uc);
/* intercept/sigsysret.S: the SIGSYS handler's restorer, and its syscall */
extern char zv_sigsys_restorer[], zv_sigsys_restorer_end[];

/* intercept/trampoline.c, intercept/fastpath.c, intercept/redzone.c */
long zv_trampoline_map(void);
/* intercept/page0args.c: what the host would read in zpoline's page 0 as
 * data (a NULL path, a write's buffer), answered as natively: EFAULT. */
int zv_page0_before(long nr, long *a);
long zv_page0_result(long nr, const long *a, long r);
long zv_fast_syscall(struct zv_thread *t);
void zv_fast_bounced(struct zv_thread *t, struct zv_ucontext *uc);
int zv_fast_fault(struct zv_thread *t, struct zv_ucontext *uc);
uint64_t zv_fast_kernel_ip(uint64_t ip);
int zv_site_safe(uint64_t site, void *uc);

/* intercept/inexec.c: an exec made in this process. The platform's memory
 * that stays (up to max [start, end) pairs), and the old images' sites,
 * regions and copies forgotten, the site cache's place found in envp. */
int zv_intercept_exec_keep(uint64_t (*r)[2], int max);
void zv_intercept_exec(char **envp);
#endif
