/* Random bytes for a new image's start (lib/random.c). */
#ifndef ZV_LIB_RANDOM_H
#define ZV_LIB_RANDOM_H
#include <stddef.h>

/* Fills out with n (<= 64) random bytes. For the draws of one image's
 * start only (its layout's offsets, AT_RANDOM): they share one getrandom,
 * and a fork child would share what is left of it. */
void zv_start_random(void *out, size_t n);
/* Forgets what is left: the next draw is a new getrandom (an image that
 * starts in a fork child's memory). */
void zv_random_reset(void);
#endif
