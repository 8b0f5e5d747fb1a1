/* The guest's vDSO (loader/vdso.c) and the host's, which the kernel
 * reads its own clocks through. */
#ifndef ZV_LOADER_VDSO_H
#define ZV_LOADER_VDSO_H
#include <stdint.h>

/* What the guest is shown as its vDSO (--vdso). */
enum zv_vdso_mode { ZV_VDSO_AUTO, ZV_VDSO_KERNEL, ZV_VDSO_NONE };
#define ZV_VDSO_STUB_AREA 64

int zv_vdso_wanted(void);
struct zv_thread;
void zv_vdso_setup(struct zv_thread *t, uint64_t *auxv); /* t: the first thread (not yet running on its block) */
void zv_vdso_cover(struct zv_thread *t); /* after the loader: its host code, for the platform */
long zv_host_vdso_call(int which, long a, long b); /* 0 clock_gettime, 1 gettimeofday, 2 time */
void zv_host_vdso_touched(uint64_t addr, uint64_t len);
struct zv_thread;
void zv_vdso_relocated(struct zv_thread *t, uint8_t *base, uint8_t *host);
#endif
