/* Restoring a process tree (cr/treerestore.c) and the hooks cr/restore.c
 * calls for a process of one. */
#ifndef ZV_CR_TREERESTORE_H
#define ZV_CR_TREERESTORE_H
#include <stdint.h>
#include "cr/cr.h"
#include "cr/fdrestore.h"
#include "cr/resutil.h"

/* `zvisor restore`'s options. */
struct zv_cr_ropts {
	int other_host, eager;
	int inherit[ZV_CR_MAX_INHERIT], ninherit;
};

/* What the tree's restorers share: a MAP_SHARED page at a fixed address
 * of zvisor's window, which every process of the tree keeps until it
 * resumes. */
struct zv_cr_area {
	volatile int32_t registered;   /* processes made (zombies too) */
	volatile int32_t ready;        /* live ones restored, about to resume */
	volatile int32_t failed;
	int32_t nprocs, nlive, pad;
	char why[512];
	struct { int32_t vpid, hpid; } p[];
};
struct zv_cr_treeproc {
	int32_t vpid, vppid, vpgid, vsid, zombie, status;
	int32_t parent;                /* its index; -1: the root */
	int32_t group;                 /* the index of the process that makes its group (-1: its parent's, kept) */
};
/* A MAP_SHARED anonymous object (or deleted file, or SysV segment) the
 * processes share: the restorer's mapping of it, which each maps the part
 * it had of (mremap). cr/shmobj.c. */
struct zv_cr_shanon {
	uint32_t kind;                 /* ZV_CR_SHANON, ZV_CR_SHDEL or ZV_CR_SYSV */
	int32_t id;                    /* SYSV: the segment's id now */
	uint64_t ino;                  /* at the checkpoint (SYSV: the id the program knows) */
	uint64_t addr, len;
	uint64_t size, keymode;        /* SYSV: its size, key << 32 | mode */
	uint32_t parts, nattch;        /* SYSV: the saved mappings of it; its attachments then */
};
/* What a process of a tree needs from the restorer that forked it. */
struct zv_cr_treectx {
	struct zv_cr_area *area;       /* NULL: not a tree's */
	uint64_t area_len;
	int self;                      /* its index in procs */
	const struct zv_cr_treeproc *procs;
	int nprocs;
	const struct zv_cr_made *made; /* its fds' descriptions the restorer made (proc 0: itself) */
	unsigned nmade;
	const struct zv_cr_shanon *shanon;
	unsigned nshanon;
	int32_t ctty_pgrp;             /* a session leader given its terminal: the foreground group (0: none) */
};

__attribute__((noreturn)) void zv_cr_restore_tree(const char *dir, int dfd, const struct zv_cr_ropts *o);
__attribute__((noreturn)) void zv_cr_restore_dir(const char *dir, int dfd, const struct zv_cr_ropts *o,
						  const struct zv_cr_treectx *tree);
/* A restore that cannot go on: one line (a tree's root says it, once,
 * and the tree ends), status 1. */
__attribute__((noreturn)) void zv_cr_restore_die(const struct zv_cr_treectx *t, const char *why);
/* Where zv_cr_restore_die says it: a copy of the restorer's stderr (the
 * image's fd 2 may be another file by then), closed before the program
 * runs; 0: fd 2. Kernel data: set again after the image's replaces it. */
extern int zv_cr_errfd;
uint64_t zv_cr_treectx_size(const struct zv_cr_treectx *t);
/* t's arrays into in's arena, as out. */
void zv_cr_treectx_copy(struct zv_cr_in *in, const struct zv_cr_treectx *t, struct zv_cr_treectx *out);

/* cr/restore.c's hooks. Whether [lo, hi) is the tree's to keep while the
 * process's own mappings go; the saved shared anonymous mapping v mapped
 * from the tree's object (1), or 0 if it is no shared one; the tree's
 * objects let go once the memory is back; the tree's ids and groups once
 * every process exists (after the kernel's data is the image's); the wait
 * for every process before the threads resume. */
int zv_cr_tree_keeps(const struct zv_cr_treectx *t, uint64_t lo, uint64_t hi);
int zv_cr_tree_map_shared(const struct zv_cr_treectx *t, uint64_t start, uint64_t end, uint64_t off, uint32_t kind,
			  uint64_t ino);
void zv_cr_tree_memory_done(const struct zv_cr_treectx *t);
void zv_cr_tree_join(const struct zv_cr_treectx *t);
/* cr/shmobj.c: the shared objects of one process's mm section (only its
 * SysV segments: sysv_only) added to objs; then all made, at their
 * addresses, as t's (-1 with why); the ids of its SysV segments, once the
 * kernel's data is the image's. */
void zv_cr_shared_scan(struct zv_cr_buf *objs, const char *mm, uint64_t len, int sysv_only);
long zv_cr_shared_make(struct zv_cr_buf *objs, struct zv_cr_treectx *t, char *why, size_t n);
void zv_cr_sysv_ids(const struct zv_cr_treectx *t);
/* A process alone: its SysV segments made as t's (none: t untouched). */
long zv_cr_sysv_alone(const char *mm, uint64_t len, struct zv_cr_treectx *t, char *why, size_t n);
void zv_cr_tree_ready(const struct zv_cr_treectx *t);
#endif
