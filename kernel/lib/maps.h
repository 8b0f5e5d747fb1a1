/* /proc/self/maps, one line at a time, without allocating. */
#ifndef ZV_LIB_MAPS_H
#define ZV_LIB_MAPS_H
#include <stdint.h>

struct zv_map {
	uint64_t lo, hi;
	char perms[5];    /* "r-xp" */
	const char *name; /* the path or [vdso] etc., "" for anonymous; valid during the callback */
};

/* Calls fn for each mapping until it returns nonzero; returns that value,
 * 0 at the end, or -errno if the file cannot be read. */
int zv_maps_each(int (*fn)(const struct zv_map *m, void *arg), void *arg);
#endif
