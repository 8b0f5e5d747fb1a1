/* The guest's vDSO (loader/vdso.c) and the host's, which the kernel
 * reads its own clocks through. */
#ifndef ZV_LOADER_VDSO_H
#define ZV_LOADER_VDSO_H
#include <stdint.h>

/* enum zv_vdso_mode and ZV_VDSO_STUB_AREA: sys/proc.h */

int zv_vdso_wanted(void);
struct zv_thread;
void zv_vdso_setup(struct zv_thread *t, uint64_t *auxv); /* t: the first thread (not yet running on its block) */
void zv_vdso_cover(struct zv_thread *t); /* after the loader: its host code, for the platform */
/* zv_host_vdso_call, zv_host_vdso_touched: sys/vtime.h */
struct zv_thread;
void zv_vdso_relocated(struct zv_thread *t, uint8_t *base, uint8_t *host);
#endif
