/* /proc/self/maps, one line at a time, without allocating. */
#ifndef ZV_LIB_MAPS_H
#define ZV_LIB_MAPS_H
#include <stdint.h>

struct zv_map {
	uint64_t lo, hi;
	char perms[5];    /* "r-xp" */
	const char *name; /* the path or [vdso] etc., "" for anonymous; valid during the callback */
};

/* Reads the maps file open at fd from its start (pread: the file offset
 * stays), calling fn for each mapping until it returns nonzero; returns
 * that value, 0 at the end, or -errno if the file cannot be read. The
 * kernel reads its own maps through sys/procself.h's zv_maps_each. */
int zv_maps_read(int fd, int (*fn)(const struct zv_map *m, void *arg), void *arg);
#endif
