/* The syscall sites of this process and their rewriting (intercept/sites.c). */
#ifndef ZV_INTERCEPT_SITES_H
#define ZV_INTERCEPT_SITES_H
#include <stdint.h>

#define ZV_SITE_BUSY 1u      /* a thread is deciding or rewriting it */
#define ZV_SITE_REWRITTEN 2u /* it holds `call *%rax` */
#define ZV_SITE_NEVER 4u     /* it stays on the SIGSYS path */
#define ZV_SITE_HIT 16u      /* arrivals are counted above the flags */

int zv_site_ours(uint64_t ret, uint64_t code8);
void zv_site_seen(uint64_t site, unsigned after, int (*safe)(uint64_t site, void *arg), void *arg);
void zv_site_add_rewritten(uint64_t site);
struct zv_thread;
int zv_site_safe_static(uint64_t site);
struct zv_stub_batch;
void zv_sites_load(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot,
		   struct zv_stub_batch *stubs);
void zv_sites_load_batch(struct zv_thread *t, const uint64_t *sites, int n, uint64_t lo, uint64_t hi, int prot);
void zv_sites_after_fork(void);
void zv_sites_lock(void);
void zv_sites_unlock(void);
unsigned long zv_sites_rewritten(void);
void zv_sites_exec(uint64_t lo, uint64_t hi); /* an exec made in this process */
#endif
