/* The cache directory's bound (intercept/cachecap.c). */
#ifndef ZV_INTERCEPT_CACHECAP_H
#define ZV_INTERCEPT_CACHECAP_H
#include <stdint.h>
#include <stddef.h>

/* Makes room in dir for a new file of need bytes within cap: removes the
 * least recently used entries (by access time) until the entries' allocated
 * bytes and need add up to at most cap. scratch (len bytes) holds the
 * listing. 1 if the new file fits. */
int zv_cachecap_fit(const char *dir, uint64_t need, uint64_t cap, void *scratch, size_t len);
#endif
