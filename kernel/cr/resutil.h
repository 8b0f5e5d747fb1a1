/* Helpers of the checkpoint's resource savers (cr/fds.c, cr/timers.c): a
 * growing byte buffer in kernel memory for building a section, kernel
 * arrays, and the restore side's refusal. */
#ifndef ZV_CR_RESUTIL_H
#define ZV_CR_RESUTIL_H
#include "cr/image.h"
#include <stddef.h>
#include <stdint.h>

struct zv_cr_buf {
	uint8_t *p;
	size_t len, cap;
	int failed;        /* out of memory: the section is not written */
};

/* Room for n more bytes at the end (zeroed), or NULL. len grows by n. */
void *zv_cr_buf_add(struct zv_cr_buf *b, size_t n);
/* Appends n bytes, then zeros up to the next multiple of 8. */
void zv_cr_buf_put(struct zv_cr_buf *b, const void *p, size_t n);
void zv_cr_buf_free(struct zv_cr_buf *b);
/* A zeroed kernel array of n bytes and its release (NULL when out of memory). */
void *zv_cr_kalloc(size_t n);
void zv_cr_kfree(void *p, size_t n);
/* Whether to try again a call that failed because the original, killed
 * at the checkpoint, may still be dying and holding what it held (an
 * address, a lock): sleeps 10 ms and says yes for up to two seconds. */
int zv_cr_retry(int *tries);
/* Refuses a restore: sets in->why from fmt and returns -1. */
long zv_cr_in_refuse(struct zv_cr_in *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* sendmsg and recvmsg's header, as the host's (no libc here). */
struct iov_ { void *base; size_t len; };
struct msghdr_ {
	void *name;
	int namelen;
	struct iov_ *iov;
	size_t iovlen;
	void *control;
	size_t controllen;
	int flags;
};
#endif
