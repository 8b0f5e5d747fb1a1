/* A PATH row of sysent's fsview column: each path argument resolved in the
 * view (walk.c) as the row says its last component is treated, then the
 * call made in its *at form on what the view found (atcalls.c). */
#include "fsview/fsview.h"
#include "fsview/atcalls.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>

#define FAN_MARK_DONT_FOLLOW_ 0x4
#define IN_DONT_FOLLOW_ 0x02000000
#define O_TMPFILE_ (020000000 | O_DIRECTORY)

/* The guest's RESOLVE_* flags as the walk's. */
static unsigned walk_resolve(uint64_t r)
{
	return (r & RESOLVE_NO_XDEV ? FSV_R_NO_XDEV : 0) | (r & RESOLVE_NO_MAGICLINKS ? FSV_R_NO_MAGICLINKS : 0) |
	       (r & RESOLVE_NO_SYMLINKS ? FSV_R_NO_SYMLINKS : 0) | (r & RESOLVE_BENEATH ? FSV_R_BENEATH : 0) |
	       (r & RESOLVE_IN_ROOT ? FSV_R_IN_ROOT : 0);
}

/* How the path of column entry p is resolved for this call: a walk mode,
 * or -1 when the call acts on its dirfd itself (AT_EMPTY_PATH with ""). */
static int mode_of(const struct zv_fsv_arg *p, const long *a, const char *path, const struct open_how *how)
{
	long fl = p->flags ? a[p->flags - 1] : 0;
	switch (p->how) {
	case ZV_FH_FOLLOW: return FSV_FOLLOW;
	case ZV_FH_NOFOLLOW: return FSV_NOFOLLOW;
	case ZV_FH_CREATE: return FSV_CREATE;
	case ZV_FH_DIR: return FSV_DIR;
	case ZV_FH_AT:
		if (!path[0] && (fl & AT_EMPTY_PATH))
			return -1;
		return fl & AT_SYMLINK_NOFOLLOW ? FSV_NOFOLLOW : FSV_FOLLOW;
	case ZV_FH_ATFOLLOW:
		if (!path[0] && (fl & AT_EMPTY_PATH))
			return -1;
		return fl & AT_SYMLINK_FOLLOW ? FSV_FOLLOW : FSV_NOFOLLOW;
	case ZV_FH_INOTIFY: return fl & IN_DONT_FOLLOW_ ? FSV_NOFOLLOW : FSV_FOLLOW;
	case ZV_FH_FANOTIFY: return fl & FAN_MARK_DONT_FOLLOW_ ? FSV_NOFOLLOW : FSV_FOLLOW;
	case ZV_FH_HOW:
		fl = (long)how->flags;
		/* fallthrough */
	case ZV_FH_OPEN:
		if ((fl & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
			return FSV_NOFOLLOW; /* symlinks are not followed: EEXIST */
		if ((fl & O_CREAT) && path[0] && path[zv_strlen(path) - 1] == '/')
			return FSV_CREATE; /* EISDIR once the parent is found */
		return fl & O_NOFOLLOW ? FSV_NOFOLLOW : FSV_FOLLOW;
	}
	return FSV_FOLLOW;
}

/* openat2's struct open_how, read as the host reads it; 0, or the error
 * the host gives before any lookup (EINVAL, E2BIG, EFAULT). */
static long read_how(const long *a, struct open_how *how)
{
	size_t size = (size_t)a[3];
	long r = zv_sys4(__NR_openat2, -1, "", a[2], size);
	if (r == -EINVAL || r == -E2BIG || r == -EFAULT)
		return r;
	return zv_guest_copy(how, (const void *)a[2], sizeof *how, (uint64_t)a[2]) < 0 ? -EFAULT : 0;
}

/* n path arguments (path and res have room for n), each resolved, then the call. */
static long path_call(struct zv_call *c, int n, char (*path)[FSV_PATH_MAX], struct fsv_res *res)
{
	const struct zv_sysent *row = zv_row(c->nr);
	long *a = c->a;
	struct open_how how = { 0 };
	unsigned resolve = 0;
	if (c->nr == __NR_openat2) {
		long r = read_how(a, &how);
		if (r < 0)
			return r;
		resolve = walk_resolve(how.resolve);
	}
	/* both strings first: a fault (EFAULT) leaves nothing half done */
	for (int i = 0; i < n; i++) {
		const struct zv_fsv_arg *p = &row->fsv.p[i];
		const char *g = (const char *)a[p->path - 1];
		if (!g) {
			if (n == 1)
				return zv_next(c); /* the call's own NULL (utimensat's fd form) */
			return -EFAULT;
		}
		long r = fsv_copy_path(g, path[i], sizeof path[i]);
		if (r < 0)
			return r;
	}
	int modes[2];
	long r = 0;
	int done = 0;
	/* an open where a directory has more than one view path: the walk
	 * learns which (alias.c) */
	int alias = fsv.aliased && (c->nr == __NR_open || c->nr == __NR_openat || c->nr == __NR_openat2);
	for (int i = 0; i < n; i++) {
		const struct zv_fsv_arg *p = &row->fsv.p[i];
		int dirfd = p->dirfd ? (int)a[p->dirfd - 1] : AT_FDCWD;
		modes[i] = mode_of(p, a, path[i], &how);
		/* readlinkat takes "" as the host does (LOOKUP_EMPTY, no flag
		 * asks for it): the link an O_PATH|O_NOFOLLOW fd holds */
		if (!path[i][0] && c->nr == __NR_readlinkat)
			modes[i] = -1;
		if (modes[i] < 0) {
			/* the dirfd itself: the guest's own fd */
			fsv_res_direct(&res[i], dirfd, "");
			res[i].last = FSV_LAST_SELF;
			done = i + 1;
			continue;
		}
		if (!path[i][0]) {
			r = -ENOENT;
			break;
		}
		if (!resolve && !alias && fsv_simple_name(path[i])) {
			/* one name in a directory of the view: the host's lookup */
			fsv_res_direct(&res[i], dirfd, path[i]);
			done = i + 1;
			continue;
		}
		if (n == 1 && !resolve && !alias && (r = fsv_open_oneshot(c, dirfd, path[0], &how)) != -ELOOP && r != -EXDEV)
			return r;
		r = fsv_resolve(dirfd, path[i], modes[i], resolve, &res[i]);
		done = i + 1;
		if (r < 0)
			break;
	}
	if (r == 0) {
		r = fsv_at_call(c, res, modes, path, &how, resolve);
		if (alias && r >= 0 && modes[0] >= 0)
			fsv_alias_opened((int)r, &res[0]);
	} else {
		/* the host refuses bad flags before it looks anything up */
		long v = fsv_at_validate(c);
		if (v < 0)
			r = v;
	}
	for (int i = 0; i < done; i++)
		if (modes[i] >= 0)
			fsv_res_done(&res[i]);
	return r;
}

/* The two-path calls (link, rename...) apart: a one-path call's stack holds
 * one path and one result (its pages are each a fault in a fresh image). */
static __attribute__((noinline)) long path_call2(struct zv_call *c)
{
	char path[2][FSV_PATH_MAX];
	struct fsv_res res[2];
	return path_call(c, 2, path, res);
}

long fsv_path_call(struct zv_call *c)
{
	if (zv_row(c->nr)->fsv.p[1].path)
		return path_call2(c);
	char path[1][FSV_PATH_MAX];
	struct fsv_res res[1];
	return path_call(c, 1, path, res);
}
