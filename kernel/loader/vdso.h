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
/* The size in memory of the vDSO image at ehdr (0 if not understood). */
uint64_t zv_vdso_image_size(const void *ehdr);
/* Before an image of size bytes is mapped anywhere in the mmap area: if the
 * vDSO is still at the area's top, where the host put it, it moves down by
 * size, so the image takes the top and the vDSO is right below it, as the
 * host's execve leaves an interpreter and the vDSO (AT_SYSINFO_EHDR follows). */
void zv_vdso_make_room(uint64_t size);
void zv_vdso_relocated(struct zv_thread *t, uint8_t *base, uint8_t *host);
#endif
