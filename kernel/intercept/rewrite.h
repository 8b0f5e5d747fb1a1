/* Deciding whether a syscall site may be rewritten (intercept/redzone.c). */
#ifndef ZV_INTERCEPT_REWRITE_H
#define ZV_INTERCEPT_REWRITE_H
#include <stdint.h>
int zv_site_safe(uint64_t site, void *uc);
#endif
