/* The resolver's state between walk.c and walkturns.c (the walk's rarer
 * turns: binds, glue directories, symlinks read, /proc's magic links). */
#ifndef ZV_FSVIEW_WALK_H
#define ZV_FSVIEW_WALK_H
#include "fsview/fsview.h"

/* What a walk has left to do: the rest of the path (symlink targets are
 * put in front of it), and where it may go. */
struct walk {
	char rest[2 * FSV_PATH_MAX + 2];
	size_t at, len;
	int mode;
	unsigned resolve;
	int rootfd;           /* the root absolute paths start at: the process's, or IN_ROOT's dirfd */
	const char *rootview; /* its view path */
	size_t rootlen;
	int depth;            /* BENEATH: directories below the start */
	int inproc;           /* the current directory is in /proc (-1: not known) */
	const char *memo;     /* the path, whose first memo_len bytes memo.c keeps where they led */
	size_t memo_len;
	struct fsv_dref memo_from;
};

static const struct fsv_dref none = { FSV_DC_NONE, 0 };

/* res's directory becomes fd (closing the one it owned). */
void fsv_walk_set_dir(struct fsv_res *res, int fd, int owned);
/* The view path of the current directory, learned now if it was not known:
 * 0, or -1 where the view does not reach it (a dirfd from outside). */
int fsv_walk_need_view(struct fsv_res *res);
int fsv_walk_in_procfs(struct fsv_res *res, struct walk *w);
/* Puts a symlink's target in front of what is left of the walk. */
long fsv_walk_splice(struct fsv_res *res, struct walk *w, const char *target, size_t tn, int as_dir);

/* walkturns.c: each with its own path buffers, so that the common walk
 * (names of the root) keeps a shallow stack: every page of it that a fresh
 * image or a vfork child touches first costs a page fault. */
const struct fsv_bind *fsv_walk_bind_named(struct fsv_res *res, const char *c, size_t n);
long fsv_walk_bind_link(struct fsv_res *res, struct walk *w, const struct fsv_bind *b);
int fsv_walk_glue_dir(struct fsv_res *res, const char *c, size_t n, int go);
long fsv_walk_enter_link(struct fsv_res *res, struct walk *w, const char *name, size_t n, int inproc);
long fsv_walk_last_magic(struct fsv_res *res, struct walk *w, const char *c, size_t n);
#endif
