/* A path call made in its *at form on what the view resolved (atcalls.c). */
#ifndef ZV_FSVIEW_ATCALLS_H
#define ZV_FSVIEW_ATCALLS_H
#include "fsview/fsview.h"

struct open_how;

/* c's paths resolved into res[i] with modes[i] (-1: the call's dirfd
 * itself); path holds the guest's strings. Makes the call and returns its
 * result, following a last component found to be a symlink. */
long fsv_at_call(struct zv_call *c, struct fsv_res *res, const int *modes, char (*path)[FSV_PATH_MAX],
		 const struct open_how *how, unsigned resolve);
/* What the host says of c before any lookup (EINVAL for bad flags), or 0. */
long fsv_at_validate(struct zv_call *c);
/* The host has the *xattrat calls (Linux 6.13). */
extern int fsv_have_xattrat;
#endif
