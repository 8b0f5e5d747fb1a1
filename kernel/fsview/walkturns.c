/* The walk's rarer turns (walk.h): a bind's mountpoint, a directory that
 * only holds mountpoints, a name that is a symlink, /proc's root and exe. */
#include "fsview/walk.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/fcntl.h>


/* The bind whose mountpoint is name c (n bytes) of the current directory, or
 * NULL; for a directory bind, the view path becomes its guest path. */
__attribute__((noinline)) const struct fsv_bind *fsv_walk_bind_named(struct fsv_res *res, const char *c, size_t n)
{
	char v[FSV_PATH_MAX];
	size_t vn;
	if (fsv_walk_need_view(res) < 0 || !(vn = fsv_child_view(res, c, n, v)))
		return NULL;
	const struct fsv_bind *b = fsv_bind_at(v, vn);
	if (b && b->kind == FSV_BIND_DIR)
		fsv_view_set(res, v, vn);
	return b;
}

/* A bind of a symlink gone through: its target. */
__attribute__((noinline)) long fsv_walk_bind_link(struct fsv_res *res, struct walk *w, const struct fsv_bind *b)
{
	char t[FSV_PATH_MAX];
	long k = zv_sys4(__NR_readlinkat, b->fd, fsv_str(b->name), t, sizeof t - 1);
	if (k < 0)
		return k;
	t[k] = 0;
	return fsv_walk_splice(res, w, t, (size_t)k, 1);
}

/* Whether name c is a directory of the view that only holds mountpoints
 * (which the root lacks); with go, the walk goes into it. */
__attribute__((noinline)) int fsv_walk_glue_dir(struct fsv_res *res, const char *c, size_t n, int go)
{
	char v[FSV_PATH_MAX];
	size_t vn;
	if (fsv_walk_need_view(res) < 0 || !(vn = fsv_child_view(res, c, n, v)) || !fsv_bind_below(v, vn))
		return 0;
	if (go) {
		/* its directory in the glue tree (glue.c) */
		long fd = zv_openat(fsv.gluefd, v + 1, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return 0;
		fsv_walk_set_dir(res, (int)fd, 1);
		fsv_view_set(res, v, vn);
		res->ent = none;
	}
	return 1;
}

/* A name (n bytes) of the current directory that is no directory as the
 * next step of a walk: a symlink spliced, a magic link of /proc followed
 * by the host (but root and exe), or ENOTDIR. */
__attribute__((noinline)) long fsv_walk_enter_link(struct fsv_res *res, struct walk *w, const char *name, size_t n,
						  int inproc)
{
	char t[FSV_PATH_MAX];
	long k = zv_sys4(__NR_readlinkat, res->dirfd, name, t, sizeof t - 1);
	if (k == -EINVAL)
		return -ENOTDIR;
	if (k < 0)
		return k;
	t[k] = 0;
	if (inproc != 0 && (t[0] == '/' || zv_strchr(t, ':')) && fsv_walk_in_procfs(res, w)) {
		/* a magic link: the host's, except root and exe (t serves as their buffer) */
		const char *target;
		if (fsv_proc_magic_name(name, n) && fsv_walk_need_view(res) == 0 &&
		    fsv_proc_magic(res->view, res->viewlen, name, n, t, sizeof t, &target))
			return fsv_walk_splice(res, w, target, zv_strlen(target), 1);
		if (w->resolve & (FSV_R_NO_MAGICLINKS | FSV_R_NO_SYMLINKS))
			return -ELOOP;
		if (w->resolve & (FSV_R_BENEATH | FSV_R_IN_ROOT))
			return -EXDEV;
		long fd = zv_openat(res->dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		fsv_walk_set_dir(res, (int)fd, 1);
		res->viewlen = (size_t)-1;
		res->ent = none;
		w->inproc = -1;
		return 0;
	}
	fsv_dc_add_link(res->ent, name, n, t, (size_t)k);
	return fsv_walk_splice(res, w, t, (size_t)k, 1);
}

/* The last component names root or exe in a pid's directory of /proc:
 * the view's. 2 when it does not, 0 (not followed), 1 (followed: the walk
 * goes on at its target), or -errno. */
__attribute__((noinline)) long fsv_walk_last_magic(struct fsv_res *res, struct walk *w, const char *c, size_t n)
{
	char buf[FSV_PATH_MAX];
	const char *target;
	if (fsv_walk_need_view(res) < 0 || !fsv_proc_magic(res->view, res->viewlen, c, n, buf, sizeof buf, &target))
		return 2;
	if (w->mode == FSV_NOFOLLOW)
		return 0;
	if (w->resolve & (FSV_R_NO_MAGICLINKS | FSV_R_NO_SYMLINKS))
		return -ELOOP;
	if (w->resolve & (FSV_R_BENEATH | FSV_R_IN_ROOT))
		return -EXDEV;
	long r = fsv_walk_splice(res, w, target, zv_strlen(target), 0);
	return r < 0 ? r : 1;
}
