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
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>
#include <linux/magic.h>
#include <linux/limits.h>

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
	const char *magic;    /* last: the view path a magic link of /proc leads to */
	const char *memo;     /* the path, whose first memo_len bytes memo.c keeps where they led */
	size_t memo_len;
	struct fsv_dref memo_from;
	char rootbuf[FSV_PATH_MAX]; /* IN_ROOT: the dirfd's view path */
	char magicbuf[FSV_PATH_MAX]; /* another process's exe */
};

static void set_dir(struct fsv_res *res, int fd, int owned)
{
	if (res->owned && res->dirfd >= 0 && res->dirfd != fd)
		zv_close(res->dirfd);
	res->dirfd = fd;
	res->owned = owned;
}

void fsv_res_done(struct fsv_res *res)
{
	set_dir(res, -1, 0);
	if (res->begun)
		fsv_dc_end();
	res->begun = 0;
}

static const struct fsv_dref none = { FSV_DC_NONE, 0 };

/* The view path of the current directory, learned now if it was not known:
 * 0, or -1 where the view does not reach it (a dirfd from outside). */
static int need_view(struct fsv_res *res)
{
	if (res->viewlen != (size_t)-1)
		return res->viewlen ? 0 : -1;
	long n = fsv_dirfd_view(res->dirfd, res->view, sizeof res->view);
	res->viewlen = n > 0 ? (size_t)n : 0;
	return n > 0 ? 0 : -1;
}

static int in_procfs(struct fsv_res *res, struct walk *w)
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
static long splice_as(struct fsv_res *res, struct walk *w, const char *target, size_t tn, int as_dir)
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
		set_dir(res, w->rootfd, 0);
		fsv_view_set(res, w->rootview, w->rootlen);
		res->ent = res->dc && w->rootfd == fsv.rootfd ? fsv_dc_root() : none;
		w->inproc = -1;
		w->depth = 0;
	}
	return 0;
}

static long splice(struct fsv_res *res, struct walk *w, const char *target, size_t tn)
{
	return splice_as(res, w, target, tn, 0);
}

/* `..` from the current directory. */
static long go_up(struct fsv_res *res, struct walk *w)
{
	if (w->resolve & FSV_R_BENEATH) {
		if (w->depth == 0)
			return -EXDEV;
		w->depth--;
	}
	if (need_view(res) < 0) {
		/* outside the view: the host's `..`, as a dirfd from outside a chroot */
		long fd = zv_openat(res->dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		set_dir(res, (int)fd, 1);
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
	if (b || res->dirfd == fsv.emptyfd || res->dirfd == fsv.vrootfd) {
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
		set_dir(res, pfd, 0);
	} else {
		long fd = zv_openat(res->dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		set_dir(res, (int)fd, 1);
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
	char v[FSV_PATH_MAX];
	size_t vn;
	if (fsv_bind_basename(c, n) && need_view(res) == 0 && (vn = fsv_child_view(res, c, n, v))) {
		const struct fsv_bind *b = fsv_bind_at(v, vn);
		if (b) {
			if (w->resolve & FSV_R_NO_XDEV)
				return -EXDEV;
			if (b->kind == FSV_BIND_FILE)
				return -ENOTDIR;
			if (b->kind == FSV_BIND_LINK) {
				char t[FSV_PATH_MAX];
				long k = zv_sys4(__NR_readlinkat, b->fd, fsv_str(b->name), t, sizeof t - 1);
				if (k < 0)
					return k;
				t[k] = 0;
				return splice_as(res, w, t, (size_t)k, 1);
			}
			set_dir(res, b->fd, 0);
			fsv_view_set(res, v, vn);
			res->ent = none;
			w->inproc = b->procfs;
			return 0;
		}
	}
	int inproc = w->inproc;
	if (res->ent.slot != FSV_DC_NONE) {
		/* a directory or symlink seen before */
		struct fsv_dref child;
		int cfd;
		char t[FSV_PATH_MAX];
		size_t tn;
		if (fsv_dc_find(res->ent, c, n, &child, &cfd, t, &tn)) {
			if (cfd < 0)
				return splice_as(res, w, t, tn, 1);
			set_dir(res, cfd, 0);
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
		if (fd == -ENOTDIR) {
			char t[FSV_PATH_MAX];
			long k = zv_sys4(__NR_readlinkat, res->dirfd, name, t, sizeof t - 1);
			if (k == -EINVAL)
				return -ENOTDIR;
			if (k < 0)
				return k;
			t[k] = 0;
			if (inproc != 0 && (t[0] == '/' || zv_strchr(t, ':')) && in_procfs(res, w)) {
				/* a magic link: the host's, except root and exe */
				const char *target;
				if (fsv_proc_magic_name(c, n) && need_view(res) == 0 &&
				    fsv_proc_magic(res->view, res->viewlen, c, n, w->magicbuf, sizeof w->magicbuf, &target))
					return splice_as(res, w, target, zv_strlen(target), 1);
				if (w->resolve & (FSV_R_NO_MAGICLINKS | FSV_R_NO_SYMLINKS))
					return -ELOOP;
				if (w->resolve & (FSV_R_BENEATH | FSV_R_IN_ROOT))
					return -EXDEV;
				fd = zv_openat(res->dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
				if (fd < 0)
					return fd;
				set_dir(res, (int)fd, 1);
				res->viewlen = (size_t)-1;
				res->ent = none;
				w->inproc = -1;
				return 0;
			}
			fsv_dc_add_link(res->ent, c, n, t, (size_t)k);
			return splice_as(res, w, t, (size_t)k, 1);
		}
		if (fd == -ENOENT && fsv.emptyfd >= 0 && fsv_glue_name(c, n) && need_view(res) == 0 &&
		    (vn = fsv_child_view(res, c, n, v)) && fsv_bind_below(v, vn)) {
			/* a directory of the view that only holds mountpoints */
			set_dir(res, fsv.emptyfd, 0);
			fsv_view_set(res, v, vn);
			res->ent = none;
			return 0;
		}
		if (fd < 0)
			return fd;
		int cfd = (int)fd;
		struct fsv_dref child;
		int kept = fsv_dc_add_dir(res->ent, c, n, &cfd, &child);
		set_dir(res, cfd, !kept);
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
		char v[FSV_PATH_MAX];
		size_t vn, cn = n - !!trailing;
		if (fsv_bind_basename(c, cn) && need_view(res) == 0 && (vn = fsv_child_view(res, c, cn, v))) {
			const struct fsv_bind *b = fsv_bind_at(v, vn);
			if (b) {
				res->bind = (int)(b - fsv.binds);
				if (b->kind == FSV_BIND_DIR) {
					set_dir(res, b->fd, 0);
					zv_strlcpy(res->name, ".", sizeof res->name);
					res->namelen = 1;
				} else {
					set_dir(res, b->fd, 0);
					res->namelen = zv_strlcpy(res->name, fsv_str(b->name), sizeof res->name);
				}
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
	char v[FSV_PATH_MAX];
	size_t vn;
	if (fsv_bind_basename(c, n) && need_view(res) == 0 && (vn = fsv_child_view(res, c, n, v))) {
		const struct fsv_bind *b = fsv_bind_at(v, vn);
		if (b && b->kind == FSV_BIND_DIR) {
			res->bind = (int)(b - fsv.binds);
			set_dir(res, b->fd, 0);
			fsv_view_set(res, v, vn);
			res->ent = none;
			goto self;
		}
		if (b) {
			res->bind = (int)(b - fsv.binds);
			set_dir(res, b->fd, 0);
			res->ent = none;
			res->namelen = zv_strlcpy(res->name, fsv_str(b->name), sizeof res->name);
			res->last = b->kind == FSV_BIND_FILE ? FSV_LAST_NOLINK : FSV_LAST_UNKNOWN;
			return 0;
		}
	}
	memcpy(res->name, c, n);
	res->name[n] = 0;
	res->namelen = n;
	/* a directory of the view that only holds mountpoints, which the root lacks */
	if (fsv.emptyfd >= 0 && fsv_glue_name(c, n) && need_view(res) == 0 && (vn = fsv_child_view(res, c, n, v)) &&
	    fsv_bind_below(v, vn)) {
		long fd = zv_openat(res->dirfd, res->name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
		if (fd == -ENOENT) {
			set_dir(res, fsv.emptyfd, 0);
			fsv_view_set(res, v, vn);
			res->ent = none;
			goto self;
		}
		if (fd >= 0)
			zv_close((int)fd);
	}
	/* root and exe in a pid's directory of /proc are the view's */
	if (w->inproc != 0 && fsv_proc_magic_name(c, n) && need_view(res) == 0 &&
	    fsv_proc_magic(res->view, res->viewlen, c, n, w->magicbuf, sizeof w->magicbuf, &w->magic)) {
		if (w->mode == FSV_NOFOLLOW)
			return 0;
		if (w->resolve & (FSV_R_NO_MAGICLINKS | FSV_R_NO_SYMLINKS))
			return -ELOOP;
		if (w->resolve & (FSV_R_BENEATH | FSV_R_IN_ROOT))
			return -EXDEV;
		return 1; /* followed: the walk goes on at w->magic */
	}
	if (res->ent.slot != FSV_DC_NONE && w->mode != FSV_NOFOLLOW) {
		/* a directory seen before is no symlink (for a call that follows it) */
		struct fsv_dref child;
		int cfd;
		char t[FSV_PATH_MAX];
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
		/* a magic link of /proc followed to the view's */
		r = splice(res, w, w->magic, zv_strlen(w->magic));
		if (r < 0)
			return r;
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
	set_dir(res, fsv.rootfd, 0);
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
	w->magic = NULL;
	w->memo_len = 0;
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
		if (need_view(res) < 0)
			return -EXDEV;
		memcpy(w->rootbuf, res->view, res->viewlen + 1);
		res->inroot = dirfd;
		w->rootfd = dirfd;
		w->rootview = w->rootbuf;
		w->rootlen = res->viewlen;
		return walk(res, w);
	}
	if (path[0] == '/') {
		if (resolve & FSV_R_BENEATH)
			return -EXDEV;
		set_dir(res, w->rootfd, 0);
		fsv_view_set(res, w->rootview, w->rootlen);
		if (res->dc)
			res->ent = fsv_dc_root();
	} else {
		set_dir(res, dirfd, 0);
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
	if (resolve & FSV_R_IN_ROOT) {
		long n = fsv_dirfd_view(inroot, w->rootbuf, sizeof w->rootbuf);
		if (n <= 0)
			return -EXDEV;
		w->rootfd = inroot;
		w->rootview = w->rootbuf;
		w->rootlen = (size_t)n;
		res->inroot = inroot;
	}
	res->dirfd = dirfd;
	res->owned = owned;
	res->viewlen = viewlen;
	res->links = links;
	w->len = w->at = 0;
	w->rest[0] = 0;
	long r = splice(res, w, target, zv_strlen(target));
	if (r < 0)
		return r;
	return walk(res, w);
}

