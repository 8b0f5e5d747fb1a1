/* The restoring side of the fd sections (cr/fds_restore.c makes each fd,
 * cr/fdlocks.c takes the locks again). */
#ifndef ZV_CR_FDRESTORE_H
#define ZV_CR_FDRESTORE_H
#include <stdint.h>
#include "cr/fdimage.h"
#include "cr/image.h"

struct zv_cr_pipe_ends {
	uint64_t id;
	int r, w;              /* both ends, made once per pipe, at spare numbers */
};

struct zv_cr_rctx {
	struct zv_cr_in *in;
	const struct zv_cr_fd **rec; /* the records, ascending fd */
	unsigned n;
	int top;                     /* the image's highest fd */
	int next_spare;              /* where the search for a spare number goes on */
	int stdio[3];                /* the restorer's fds 0-2, copied to spare numbers; -1 if closed */
	struct zv_cr_pipe_ends *pipes;
	unsigned npipes;
};

/* The bytes after a record. */
static inline const void *zv_cr_rec_extra(const struct zv_cr_fd *r) { return r + 1; }

/* A copy of fd (close-on-exec) at a free number the image does not use,
 * so that no fd put at its number replaces it: the number, or -1. */
int zv_cr_spare(struct zv_cr_rctx *c, int fd);

/* Makes the file of record r (not a DUP): its fd, or -1 with the why set.
 * *own: the fd is the caller's to close once it is at its number. */
long zv_cr_make_fd(struct zv_cr_rctx *c, const struct zv_cr_fd *r, int *own);
/* Takes the "fdlocks" section's locks through the restored fds. */
long zv_cr_restore_locks(struct zv_cr_in *in, const uint8_t *p, uint64_t len);
#endif
