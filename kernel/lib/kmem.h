/* Kernel memory lives in its own window of the address space, next to the
 * kernel image and away from everything the guest maps, so that the guest's
 * memory calls can be kept out of it (sys/mm.c). */
#ifndef ZV_LIB_KMEM_H
#define ZV_LIB_KMEM_H
#include <stddef.h>
#include <stdint.h>

#define ZV_KWIN_START 0x7c0000000000UL /* the image is linked here (kernel/zvisor.ld) */
#define ZV_KWIN_END 0x7d0000000000UL /* the host's mmap base is randomized over
                                       * the terabyte below 0x7fffffffffff; this
                                       * window stays under it */

/* Maps size bytes (rounded to pages) of zeroed read-write memory in the
 * window, aligned to align (a power of two, >= 4096), or shares fd's pages
 * when fd >= 0. Returns -errno cast to a pointer on failure. */
void *zv_kmap(size_t size, size_t align, int fd);
/* The same, anonymous, with its first guard bytes (pages) a hole: left
 * out of the mapping where this call maps its chunk, else unmapped. */
void *zv_kmap_guarded(size_t size, size_t align, size_t guard);
void zv_kunmap(void *p, size_t size);
#endif
