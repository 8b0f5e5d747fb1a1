/* The resolver: a guest path, as the process names it, to what the host's
 * *at calls act on (a host directory fd and a last component), walked one
 * component at a time as the host's lookup would walk it in a chroot:
 *   - absolute paths and absolute symlinks start at the process's root;
 *     `..` stops there, and at a bind's mountpoint goes to the directory
 *     that holds it;
 *   - a guest path that is a bind's mountpoint continues in its source;
 *   - symlinks are read by the walk (never followed by the host), 40 at
 *     most (ELOOP), their targets resolved in the view; /proc's magic links
 *     (procfs.c) are the host's except root and the process's own exe;
 *   - "." and ".." and trailing slashes as the host treats them, errors
 *     (ENOENT, ENOTDIR, EACCES, ENAMETOOLONG, ELOOP) as the host's lookup
 *     gives them, since each step is the host's own lookup of one name.
 * Each step is one host call: openat(O_PATH|O_DIRECTORY|O_NOFOLLOW) of the
 * next directory, or readlinkat when that says ENOTDIR; dcache.c spares
 * both for directories and symlinks seen before. The view path of the
 * current directory is kept as the walk goes (as far as it is known: a
 * walk from a dirfd learns it only when a bind, `..` or a symlink needs it). */
#include "fsview/fsview.h"
#include "fsview/walk.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>
#include <linux/magic.h>
#include <linux/limits.h>

void fsv_walk_set_dir(struct fsv_res *res, int fd, int owned)
{
	if (res->owned && res->dirfd >= 0 && res->dirfd != fd)
		zv_close(res->dirfd);
	res->dirfd = fd;
	res->owned = owned;
}

void fsv_res_done(struct fsv_res *res)
{
	fsv_walk_set_dir(res, -1, 0);
	if (res->begun)
		fsv_dc_end();
	res->begun = 0;
}

int fsv_walk_need_view(struct fsv_res *res)
{
	if (res->viewlen != (size_t)-1)
		return res->viewlen ? 0 : -1;
	long n = fsv_dirfd_view(res->dirfd, res->view, sizeof res->view);
	res->viewlen = n > 0 ? (size_t)n : 0;
	return n > 0 ? 0 : -1;
}

int fsv_walk_in_procfs(struct fsv_res *res, struct walk *w)
{
	if (w->inproc < 0) {
		struct { long type; long rest[15]; } sfs;
		w->inproc = zv_sys2(__NR_fstatfs, res->dirfd, &sfs) == 0 && sfs.type == PROC_SUPER_MAGIC;
	}
	return w->inproc;
}

/* Starts over at an absolute view path (a bind's parent after `..`, an
 * absolute symlink's target goes through splice instead). */
static long goto_view(struct fsv_res *res, const char *v, size_t n);

/* Puts target in front of what is left of the walk (a symlink read at
 * the current directory). A symlink gone through as a directory with nothing
 * left after it (its name had a trailing slash) must still be one: its
 * target gets a trailing slash. */
long fsv_walk_splice(struct fsv_res *res, struct walk *w, const char *target, size_t tn, int as_dir)
{
	if (++res->links > FSV_MAXSYMLINKS)
		return -ELOOP;
	if (w->resolve & FSV_R_NO_SYMLINKS)
		return -ELOOP;
	if (!tn)
		return -ENOENT;
	size_t left = w->len - w->at;
	if (tn + 1 + left + 1 > sizeof w->rest)
		return -ENAMETOOLONG;
	memmove(w->rest + tn + 1, w->rest + w->at, left + 1);
	memcpy(w->rest, target, tn);
	w->rest[tn] = left || (as_dir && w->mode != FSV_DIR) ? '/' : 0;
	w->len = tn + (left ? 1 + left : w->rest[tn] == '/');
	w->rest[w->len] = 0;
	w->at = 0;
	if (target[0] == '/') {
		if (w->resolve & FSV_R_BENEATH)
			return -EXDEV;
		fsv_walk_set_dir(res, w->rootfd, 0);
		fsv_view_set(res, w->rootview, w->rootlen);
		res->ent = res->dc && w->rootfd == fsv.rootfd ? fsv_dc_root() : none;
		w->inproc = -1;
		w->depth = 0;
	}
	return 0;
}

static long splice(struct fsv_res *res, struct walk *w, const char *target, size_t tn)
{
	return fsv_walk_splice(res, w, target, tn, 0);
}

/* `..` from the current directory. */
static long go_up(struct fsv_res *res, struct walk *w)
{
	if (w->resolve & FSV_R_BENEATH) {
		if (w->depth == 0)
			return -EXDEV;
		w->depth--;
	}
	if (fsv_walk_need_view(res) < 0) {
		/* outside the view: the host's `..`, as a dirfd from outside a chroot */
		long fd = zv_openat(res->dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		fsv_walk_set_dir(res, (int)fd, 1);
		res->ent = none;
		w->inproc = -1;
		return 0;
	}
	if (res->viewlen == w->rootlen && !memcmp(res->view, w->rootview, w->rootlen))
		return 0; /* `..` of the root is the root */
	/* the parent's view path */
	size_t n = res->viewlen;
	while (n > 1 && res->view[n - 1] != '/')
		n--;
	if (n > 1)
		n--;
	const struct fsv_bind *b = fsv_bind_at(res->view, res->viewlen);
	if (b || res->dirfd == fsv.vrootfd || (fsv.gluefd >= 0 && fsv_bind_below(res->view, res->viewlen))) {
		/* a mountpoint (or a directory that only holds them): its host
		 * parent is not the view's */
		char up[FSV_PATH_MAX];
		memcpy(up, res->view, n);
		up[n] = 0;
		w->inproc = -1;
		return goto_view(res, up, n);
	}
	int pfd;
	struct fsv_dref p = fsv_dc_parent(res->ent, &pfd);
	if (p.slot != FSV_DC_NONE) {
		fsv_walk_set_dir(res, pfd, 0);
	} else {
		long fd = zv_openat(res->dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		fsv_walk_set_dir(res, (int)fd, 1);
	}
	res->ent = p;
	res->viewlen = n;
	res->view[n] = 0;
	return 0;
}

/* The next directory is c (n bytes, a middle component or one that must be
 * a directory): the current directory becomes it, or a symlink is spliced. */
static long enter(struct fsv_res *res, struct walk *w, const char *c, size_t n)
{
	if (w->resolve & FSV_R_BENEATH)
		w->depth++;
	/* a bind's mountpoint: only a name some bind ends with can be one */
	const struct fsv_bind *b = fsv_bind_basename(c, n) ? fsv_walk_bind_named(res, c, n) : NULL;
	if (b) {
		if (w->resolve & FSV_R_NO_XDEV)
			return -EXDEV;
		if (b->kind == FSV_BIND_FILE)
			return -ENOTDIR;
		if (b->kind == FSV_BIND_LINK)
			return fsv_walk_bind_link(res, w, b);
		fsv_walk_set_dir(res, b->fd, 0);
		res->ent = none;
		w->inproc = b->procfs;
		return 0;
	}
	int inproc = w->inproc;
	if (res->ent.slot != FSV_DC_NONE) {
		/* a directory or symlink seen before */
		struct fsv_dref child;
		int cfd;
		char t[FSV_DC_TARGET_MAX + 1];
		size_t tn;
		if (fsv_dc_find(res->ent, c, n, &child, &cfd, t, &tn)) {
			if (cfd < 0)
				return fsv_walk_splice(res, w, t, tn, 1);
			fsv_walk_set_dir(res, cfd, 0);
			res->ent = child;
			fsv_view_push(res, c, n);
			return 0;
		}
	}
	{
		char name[NAME_MAX + 2];
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, c, n);
		name[n] = 0;
		long fd;
		if (w->resolve & FSV_R_NO_XDEV) {
			struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
						.resolve = RESOLVE_NO_XDEV };
			fd = zv_sys4(__NR_openat2, res->dirfd, name, &how, sizeof how);
		} else {
			fd = zv_openat(res->dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		}
		if (fd == -ENOTDIR)
			return fsv_walk_enter_link(res, w, name, n, inproc);
		if (fd == -ENOENT && fsv.gluefd >= 0 && fsv_glue_name(c, n) && fsv_walk_glue_dir(res, c, n, 1))
			return 0; /* a directory of the view that only holds mountpoints */
		if (fd < 0)
			return fd;
		int cfd = (int)fd;
		struct fsv_dref child;
		int kept = fsv_dc_add_dir(res->ent, c, n, &cfd, &child);
		fsv_walk_set_dir(res, cfd, !kept);
		res->ent = kept ? child : none;
		fsv_view_push(res, c, n);
		return 0;
	}
}

/* The last component c (n bytes): where the call acts. */
static long last(struct fsv_res *res, struct walk *w, const char *c, size_t n, int trailing)
{
	res->bind = -1;
	res->last = FSV_LAST_UNKNOWN;
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	if (w->mode == FSV_CREATE) {
		/* the host refuses "." and ".." by their names, without a lookup;
		 * a trailing slash stays for it to judge */
		memcpy(res->name, c, n);
		res->name[n] = 0;
		if (trailing) {
			res->name[n++] = '/';
			res->name[n] = 0;
		}
		res->namelen = n;
		size_t cn = n - !!trailing;
		const struct fsv_bind *b = fsv_bind_basename(c, cn) ? fsv_walk_bind_named(res, c, cn) : NULL;
		if (b) {
			res->bind = (int)(b - fsv.binds);
			fsv_walk_set_dir(res, b->fd, 0);
			if (b->kind == FSV_BIND_DIR) {
				zv_strlcpy(res->name, ".", sizeof res->name);
				res->namelen = 1;
			} else {
				res->namelen = zv_strlcpy(res->name, fsv_str(b->name), sizeof res->name);
			}
		}
		return 0;
	}
	if (n == 1 && c[0] == '.')
		goto self;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		long r = go_up(res, w);
		if (r < 0)
			return r;
		goto self;
	}
	const struct fsv_bind *b = fsv_bind_basename(c, n) ? fsv_walk_bind_named(res, c, n) : NULL;
	if (b) {
		res->bind = (int)(b - fsv.binds);
		fsv_walk_set_dir(res, b->fd, 0);
		res->ent = none;
		if (b->kind == FSV_BIND_DIR)
			goto self;
		res->namelen = zv_strlcpy(res->name, fsv_str(b->name), sizeof res->name);
		res->last = b->kind == FSV_BIND_FILE ? FSV_LAST_NOLINK : FSV_LAST_UNKNOWN;
		return 0;
	}
	memcpy(res->name, c, n);
	res->name[n] = 0;
	res->namelen = n;
	/* a directory of the view that only holds mountpoints, which the root lacks */
	if (fsv.gluefd >= 0 && fsv_glue_name(c, n) && fsv_walk_glue_dir(res, c, n, 0)) {
		long fd = zv_openat(res->dirfd, res->name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd == -ENOENT && fsv_walk_glue_dir(res, c, n, 1))
			goto self;
		if (fd >= 0)
			zv_close((int)fd);
	}
	/* root and exe in a pid's directory of /proc are the view's */
	if (w->inproc != 0 && fsv_proc_magic_name(c, n)) {
		long r = fsv_walk_last_magic(res, w, c, n);
		if (r != 2)
			return r;
	}
	if (res->ent.slot != FSV_DC_NONE && w->mode != FSV_NOFOLLOW) {
		/* a directory seen before is no symlink (for a call that follows it) */
		struct fsv_dref child;
		int cfd;
		char t[FSV_DC_TARGET_MAX + 1];
		size_t tn;
		if (fsv_dc_find(res->ent, c, n, &child, &cfd, t, &tn) && cfd >= 0)
			res->last = FSV_LAST_NOLINK;
	}
	return 0;
self:
	zv_strlcpy(res->name, ".", sizeof res->name);
	res->namelen = 1;
	res->last = FSV_LAST_SELF;
	return 0;
}

/* Walks w from res's directory to the end. */
static long walk(struct fsv_res *res, struct walk *w)
{
	for (;;) {
		while (w->at < w->len && w->rest[w->at] == '/')
			w->at++;
		if (w->at >= w->len) {
			/* nothing (left) but slashes: the directory itself */
			if (w->mode == FSV_CREATE && w->len && w->rest[0] == '/' && res->dirfd == w->rootfd) {
				/* "/" made or removed: the host's answers for its own
				 * root are the same (EEXIST, EBUSY, EISDIR) */
				zv_strlcpy(res->name, "/", sizeof res->name);
				res->namelen = 1;
				res->last = FSV_LAST_SELF;
				res->bind = -1;
				return 0;
			}
			zv_strlcpy(res->name, ".", sizeof res->name);
			res->namelen = 1;
			res->last = FSV_LAST_SELF;
			res->bind = -1;
			return 0;
		}
		const char *c = w->rest + w->at;
		size_t n = 0;
		while (w->at + n < w->len && c[n] != '/')
			n++;
		size_t after = w->at + n;
		int trailing = after < w->len;
		size_t k = after;
		while (k < w->len && w->rest[k] == '/')
			k++;
		int is_last = k >= w->len;
		long r;
		if (!is_last || (trailing && w->mode != FSV_CREATE) || w->mode == FSV_DIR) {
			/* a directory to go through */
			w->at = k;
			if (n == 1 && c[0] == '.')
				continue;
			if (n == 2 && c[0] == '.' && c[1] == '.')
				r = go_up(res, w);
			else
				r = enter(res, w, c, n);
			if (r < 0)
				return r;
			continue;
		}
		/* the last component */
		char comp[NAME_MAX + 1];
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(comp, c, n);
		comp[n] = 0;
		w->at = w->len;
		if (w->memo_len)
			fsv_memo_set(w->memo_from, w->memo, w->memo_len, res);
		w->memo_len = 0;
		r = last(res, w, comp, n, trailing);
		if (r <= 0)
			return r;
		/* 1: a magic link of /proc followed to the view's: on from there */
	}
}

static long goto_view(struct fsv_res *res, const char *v, size_t n)
{
	struct walk w2 = { .mode = FSV_DIR, .rootfd = fsv.rootfd, .rootview = "/", .rootlen = 1, .inproc = -1 };
	if (n >= sizeof w2.rest)
		return -ENAMETOOLONG;
	memcpy(w2.rest, v, n);
	w2.rest[n] = 0;
	w2.len = n;
	fsv_walk_set_dir(res, fsv.rootfd, 0);
	fsv_view_set(res, "/", 1);
	res->ent = res->dc ? fsv_dc_root() : none;
	int links = res->links;
	long r = walk(res, &w2);
	res->links = links;
	return r;
}

static void start(struct fsv_res *res, struct walk *w, int mode, unsigned resolve)
{
	res->dirfd = -1;
	res->owned = 0;
	res->bind = -1;
	res->links = 0;
	res->last = FSV_LAST_UNKNOWN;
	w->mode = mode;
	w->resolve = resolve;
	w->rootfd = fsv.vrootfd;
	w->rootview = fsv.vroot;
	w->rootlen = fsv.vroot_len;
	w->depth = 0;
	w->inproc = -1;
	w->memo_len = 0;
}

/* RESOLVE_IN_ROOT: the walk's root is rootfd, with view path view (NULL:
 * asked of the host), kept in this frame for the walk; target: a symlink's
 * to start from (fsv_follow_last), or NULL. */
static __attribute__((noinline)) long walk_in_root(struct fsv_res *res, struct walk *w, int rootfd, const char *view,
						    const char *target)
{
	char root[FSV_PATH_MAX];
	long n = view ? (long)zv_strlcpy(root, view, sizeof root) : fsv_dirfd_view(rootfd, root, sizeof root);
	if (n <= 0)
		return -EXDEV;
	w->rootfd = rootfd;
	w->rootview = root;
	w->rootlen = (size_t)n;
	res->inroot = rootfd;
	if (target) {
		long r = splice(res, w, target, zv_strlen(target));
		if (r < 0)
			return r;
	}
	return walk(res, w);
}

long fsv_resolve(int dirfd, const char *path, int mode, unsigned resolve, struct fsv_res *res)
{
	struct walk w_on_stack, *w = &w_on_stack;
	start(res, w, mode, resolve);
	res->begun = 1; /* fsv_res_done ends it, whatever this returns */
	res->dc = fsv_dc_begin();
	res->ent = none;
	size_t len = zv_strlen(path);
	if (!len)
		return -ENOENT;
	memcpy(w->rest, path, len + 1);
	w->len = len;
	w->at = 0;
	if (resolve & FSV_R_IN_ROOT) {
		/* the dirfd is the root of this lookup */
		res->dirfd = dirfd;
		if (fsv_walk_need_view(res) < 0)
			return -EXDEV;
		return walk_in_root(res, w, dirfd, res->view, NULL);
	}
	if (path[0] == '/') {
		if (resolve & FSV_R_BENEATH)
			return -EXDEV;
		fsv_walk_set_dir(res, w->rootfd, 0);
		fsv_view_set(res, w->rootview, w->rootlen);
		if (res->dc)
			res->ent = fsv_dc_root();
	} else {
		fsv_walk_set_dir(res, dirfd, 0);
		res->viewlen = (size_t)-1;
		if (dirfd == AT_FDCWD && res->dc)
			fsv_cwd_start(res); /* from the working directory's entry, when it has one */
	}
	size_t p = resolve || res->ent.slot == FSV_DC_NONE ? 0 : fsv_memo_prefix(path, len, mode);
	if (p && fsv_memo_get(res->ent, path, p, res))
		w->at = p + 1; /* the same directory as the walk before: its last component */
	else if (p)
		w->memo = path, w->memo_len = p, w->memo_from = res->ent;
	return walk(res, w);
}

long fsv_follow_last(struct fsv_res *res, const char *target, int mode, unsigned resolve)
{
	struct walk w_on_stack, *w = &w_on_stack;
	int links = res->links, dirfd = res->dirfd, owned = res->owned, inroot = res->inroot;
	size_t viewlen = res->viewlen;
	start(res, w, mode, resolve);
	res->dirfd = dirfd;
	res->owned = owned;
	res->viewlen = viewlen;
	res->links = links;
	w->len = w->at = 0;
	w->rest[0] = 0;
	if (resolve & FSV_R_IN_ROOT)
		return walk_in_root(res, w, inroot, NULL, target);
	long r = splice(res, w, target, zv_strlen(target));
	if (r < 0)
		return r;
	return walk(res, w);
}

