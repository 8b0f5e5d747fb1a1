/* The stubs platform's windows of a file, cached across execs
 * (intercept/sitecache.c). */
#ifndef ZV_INTERCEPT_SITECACHE_H
#define ZV_INTERCEPT_SITECACHE_H
#include <stdint.h>

struct zv_stub_batch;
/* Finds the cache directory in the guest's environment (once per image). */
void zv_sitecache_init(char **envp);
/* Fills b with the cached windows of fd's bytes [off, off + len), mapped at
 * addr with protection prot; 1 if there was a valid entry. */
int zv_sitecache_lookup(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, struct zv_stub_batch *b);
/* Keeps b's windows (found in that mapping) for the next time. */
void zv_sitecache_store(int fd, uint64_t addr, uint64_t len, uint64_t off, const struct zv_stub_batch *b);
#endif
