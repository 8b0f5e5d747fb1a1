/* The view's directory cache (dcache.h). */
#include "fsview/fsview.h"
#include "fsview/dcache.h"

struct fsv_dent *fsv_dcache_get(struct fsv_res *res, const char *c, size_t n) { return NULL; }
size_t fsv_dcache_target(const struct fsv_dent *d, char *out, size_t n) { return 0; }
int fsv_dcache_put_dir(struct fsv_res *res, const char *c, size_t n, int fd) { return -1; }
void fsv_dcache_put_link(struct fsv_res *res, const char *c, size_t n, const char *t, size_t tn) {}
void fsv_dcache_init(void) {}
void fsv_dcache_flush(void) {}
