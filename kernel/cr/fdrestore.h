/* The restoring side of the fd sections: cr/objects.c makes the
 * descriptions that records share or that stand for one object (pipes,
 * FIFOs, sockets, files in flight) and refills their queues, for every
 * process to be restored, before any is placed; cr/fds_restore.c places
 * one process's fds (cr/fdmake.c makes the others); cr/fdlocks.c takes the
 * locks again. */
#ifndef ZV_CR_FDRESTORE_H
#define ZV_CR_FDRESTORE_H
#include <stdint.h>
#include "cr/fdimage.h"
#include "cr/image.h"

/* One process's records of section "fds", ascending (those in flight last). */
struct zv_cr_precs {
	const struct zv_cr_fd **rec;
	unsigned n;
	int top;                     /* its highest fd (not in flight) */
};

/* An object made for the records: a pipe or FIFO (its two ends), a
 * socket (and the other end that refills its queue, or -1). */
struct zv_cr_obj {
	int kind;
	uint64_t id;                 /* the pipe's or socket's inode */
	int fd, other;
	int proc;                    /* the record it was made from */
	const struct zv_cr_fd *rec;
};

/* A description made for a record (process proc, record number recno). */
struct zv_cr_made {
	int proc, recno, fd;
};

struct zv_cr_rctx {
	struct zv_cr_in *in;
	struct zv_cr_precs *procs;   /* every process's records (a process alone: one) */
	int nprocs, self;            /* self: the one being placed */
	int next_spare;              /* where the search for a spare number goes on */
	int stdio[3];                /* the restorer's fds 0-2, copied to spare numbers; -1 if closed */
	int inherit[16][2];          /* --inherit-fd N: N and its copy at a spare number */
	int ninherit;
	struct zv_cr_obj *objs;
	unsigned nobjs, maxobjs;
	struct zv_cr_made *made;
	unsigned nmade, maxmade;
};

/* Section "fds" parsed into pr (the records point into p); 0 or -1 (why). */
long zv_cr_fds_parse(struct zv_cr_in *in, struct zv_cr_precs *pr, const uint8_t *p, uint64_t len);
/* Before anything is made: the restorer's fds that records stand for
 * (0-2, --inherit-fd's) and the image's directory go to spare numbers. */
long zv_cr_fds_prepare(struct zv_cr_rctx *c, const int *inherit, int ninherit);

/* The bytes after a record. */
static inline const void *zv_cr_rec_extra(const struct zv_cr_fd *r) { return r + 1; }

/* A copy of fd (close-on-exec) at a free number no process's image uses,
 * so that no fd put at its number replaces it: the number, or -1. */
int zv_cr_spare(struct zv_cr_rctx *c, int fd);
/* The record of process p numbered recno, or NULL. */
const struct zv_cr_fd *zv_cr_record(const struct zv_cr_rctx *c, int p, int recno);
/* The description made for it, or -1. */
int zv_cr_made_fd(const struct zv_cr_rctx *c, int p, int recno);
long zv_cr_add_made(struct zv_cr_rctx *c, int p, int recno, int fd);

/* The object of a kind (SOCKET and LISTEN are one kind) and id, or NULL;
 * a new one, made from record r of process p (fds -1), or NULL. */
struct zv_cr_obj *zv_cr_obj_find(struct zv_cr_rctx *c, int kind, uint64_t id);
struct zv_cr_obj *zv_cr_obj_new(struct zv_cr_rctx *c, int kind, uint64_t id, int p, const struct zv_cr_fd *r);
/* cr/objects.c: makes the objects of every process's records, sends
 * their queues again and replays their shutdowns. 0, or -1 with why. */
long zv_cr_objects_make(struct zv_cr_rctx *c);

/* cr/fdmake.c: makes the file of record r (not a DUP, not an object's):
 * its fd, or -1 with the why set. *own: the fd is the caller's to close
 * once it is at its number. */
long zv_cr_make_fd(struct zv_cr_rctx *c, const struct zv_cr_fd *r, int *own);
/* cr/sockmake.c */
long zv_cr_make_listen(struct zv_cr_rctx *c, const struct zv_cr_fd *r);
long zv_cr_make_udp(struct zv_cr_rctx *c, const struct zv_cr_fd *r);
long zv_cr_make_socket(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r);
long zv_cr_fd_fail(struct zv_cr_rctx *c, const struct zv_cr_fd *r, const char *what, long err);
/* cr/fdinotify.c: an inotify instance with its watches at their numbers. */
long zv_cr_make_inotify(struct zv_cr_rctx *c, const struct zv_cr_fd *r);
/* cr/fdpty.c: the new pty of master record r (once per pty); the
 * description of a master's or terminal's record; the lock put back once
 * all are open. */
long zv_cr_make_pty(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r);
long zv_cr_pty_end(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r);
void zv_cr_pty_finish(struct zv_cr_rctx *c, const struct zv_cr_fd *r);
/* Takes the "fdlocks" section's locks through the restored fds. */
long zv_cr_restore_locks(struct zv_cr_in *in, const uint8_t *p, uint64_t len);
#endif
