/* The view's directories and symlinks that earlier walks found
 * (dcache.c): a walk through them costs no host call. An entry is a name
 * under a parent entry (a slot and the parent's generation, so that an
 * entry dropped or reused leaves its children unreachable): a directory,
 * with a hidden O_PATH fd of it, or a symlink, with its target. Only walks
 * in the root itself use it (not in binds, whose sources other processes
 * change); CLONE_VM children that are not threads never do (their fd
 * table is not this memory's). */
#ifndef ZV_FSVIEW_DCACHE_H
#define ZV_FSVIEW_DCACHE_H
#include <stddef.h>
#include <stdint.h>

#define FSV_DC_NONE (-1) /* a directory the cache does not know */
#define FSV_DC_ROOT (-2) /* the view's root */
#define FSV_DC_GUEST (-3) /* a directory the guest holds open (memo.c): no entries under it */
#define FSV_DC_TARGET_MAX 95 /* the longest symlink target it keeps */

struct fsv_dref {
	int slot;     /* FSV_DC_NONE, FSV_DC_ROOT or an entry */
	uint32_t gen; /* the entry's generation when the walk got there */
};

/* A walk begins (1: it may use the cache) and ends: fds the cache drops
 * while walks are under way are closed when the last ends. */
int fsv_dc_begin(void);
void fsv_dc_end(void);
/* The entry of name c (n bytes) under d: 1 with *child and *fd (a
 * directory's, -1 for a symlink) and the target (t, *tn), or 0. */
int fsv_dc_find(struct fsv_dref d, const char *c, size_t n, struct fsv_dref *child, int *fd, char *t, size_t *tn);
/* The view's root. */
struct fsv_dref fsv_dc_root(void);
/* The parent of d (FSV_DC_NONE if unknown). */
struct fsv_dref fsv_dc_parent(struct fsv_dref d, int *fd);
/* Keeps directory c, opened as *fd, under d: 1 with *child (*fd, perhaps
 * another number now, is the cache's), or 0 (*fd stays the caller's). */
int fsv_dc_add_dir(struct fsv_dref d, const char *c, size_t n, int *fd, struct fsv_dref *child);
void fsv_dc_add_link(struct fsv_dref d, const char *c, size_t n, const char *t, size_t tn);
/* After the process removed or renamed name c under d: its entry goes;
 * other processes are told (shared.c) when it was a directory or a symlink
 * (kind: 'd', 'l', or 0 when not known: the names of cached symlinks). */
void fsv_dc_gone(struct fsv_dref d, const char *c, size_t n, int kind);
void fsv_dc_flush(void);
/* After the process changed the mode or owner of name c under d: a
 * directory the cache holds (or d itself, for ".") may no longer be
 * searched as before, so every process starts afresh. */
void fsv_dc_mode_changed(struct fsv_dref d, const char *c, size_t n);
/* Whether d is still an entry (or the root): 1 with its fd. */
int fsv_dc_valid(struct fsv_dref d, int *fd);
/* A stat found name c under d no symlink; whether one did (this thread, just now). */
void fsv_dc_hint(struct fsv_dref d, const char *c, size_t n);
int fsv_dc_hinted(struct fsv_dref d, const char *c, size_t n);
void fsv_dc_fork_child(void);
/* Handed on across exec: the exec'ing image writes the live entries to a
 * memfd (its fd, or -1), the new image takes them from it (and closes it). */
int fsv_dc_save(void);
void fsv_dc_load(int fd);
#endif
