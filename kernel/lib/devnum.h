/* A device number's major and minor, as the host encodes dev_t (glibc's
 * gnu_dev_major/minor): the low 20 bits of each are split around the
 * other's, and the high bits sit above bit 32. */
#ifndef ZV_LIB_DEVNUM_H
#define ZV_LIB_DEVNUM_H
#include <stdint.h>

static inline uint32_t zv_dev_major(uint64_t dev)
{
	return (uint32_t)(((dev >> 32) & 0xfffff000) | ((dev >> 8) & 0xfff));
}

static inline uint32_t zv_dev_minor(uint64_t dev)
{
	return (uint32_t)(((dev >> 12) & 0xffffff00) | (dev & 0xff));
}

#endif
