/* The directories and symlinks of the view that earlier lookups found
 * (dcache.c), by view path, so that a walk through them costs no host
 * call. */
#ifndef ZV_FSVIEW_DCACHE_H
#define ZV_FSVIEW_DCACHE_H
#include <stddef.h>
#include <stdint.h>

struct fsv_res;

struct fsv_dent {
	int fd;          /* a directory: its O_PATH fd (hidden), or -1 */
	uint16_t target; /* a symlink: its target's length (0: a directory) */
};

/* The entry of the name c (n bytes) in the current directory of res, or NULL. */
struct fsv_dent *fsv_dcache_get(struct fsv_res *res, const char *c, size_t n);
/* A symlink entry's target into out (n bytes); its length. */
size_t fsv_dcache_target(const struct fsv_dent *d, char *out, size_t n);
/* The directory c, opened as fd, is kept: returns the fd the walk may use
 * (the cache's), or -1 when it is not kept (the walk keeps fd). */
int fsv_dcache_put_dir(struct fsv_res *res, const char *c, size_t n, int fd);
void fsv_dcache_put_link(struct fsv_res *res, const char *c, size_t n, const char *t, size_t tn);
#endif
