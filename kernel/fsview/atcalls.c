/* Each PATH row's call in its *at form on the resolved (dirfd, name): the
 * layers after fsview (fakeid) and the host see newfstatat, statx,
 * faccessat2, openat, openat2, readlinkat, mkdirat, mknodat, unlinkat,
 * renameat2, linkat, symlinkat, fchmodat, fchmodat2, fchownat, utimensat,
 * the *xattrat calls (or l*xattr of "/proc/self/fd/D/NAME" on hosts
 * without them), and for the calls without an *at form (truncate, statfs,
 * inotify_add_watch, quotactl) "/proc/self/fd/N" strings or the fd form.
 * The last component is never followed by the host (AT_SYMLINK_NOFOLLOW,
 * O_NOFOLLOW) unless it is a magic link of /proc; a call that follows it
 * learns that it is a symlink from its own result (stat's mode, open's
 * ELOOP) or asks first (fsv_settle_last) when its result cannot say or it
 * would act on the link. */
#include "fsview/atcalls.h"
#include "fsview/walk.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>
#include <asm/stat.h>
#include <linux/magic.h>

#define __NR_fchmodat2_ 452
#define __NR_setxattrat_ 463
#define __NR_getxattrat_ 464
#define __NR_listxattrat_ 465
#define __NR_removexattrat_ 466
#define __NR_open_tree_attr_ 467
#define __NR_file_getattr_ 468
#define __NR_file_setattr_ 469
#define OPEN_TREE_CLONE_ 1
#define IN_DONT_FOLLOW_ 0x02000000
#define FAN_MARK_DONT_FOLLOW_ 0x4
#define VALID_OPEN_FLAGS_ 077777777 /* what openat takes (it drops the rest) */

int fsv_have_xattrat;

struct kts {
	long sec, nsec;
};

struct xattr_args_ {
	uint64_t value;
	uint32_t size;
	uint32_t flags;
};

/* The host follows the last component only when it is a magic link. */
static int host_follows(const struct fsv_res *r, int mode)
{
	return mode == FSV_FOLLOW && r->last == FSV_LAST_MAGIC;
}

static long at_flags(const struct fsv_res *r, int mode, long fl)
{
	fl &= ~(long)AT_SYMLINK_NOFOLLOW;
	return host_follows(r, mode) ? fl : fl | AT_SYMLINK_NOFOLLOW;
}

static long next(struct zv_call *c, long nr, long a0, long a1, long a2, long a3, long a4, long a5)
{
	long a[6] = { a0, a1, a2, a3, a4, a5 };
	return zv_next_as(c, nr, a);
}

/* res's last component is a symlink (the call's result said so, or
 * readlinkat does now): resolve on past it. 1 to make the call again, 0 if
 * it is no symlink after all, or -errno. */
static long past_link(struct fsv_res *r, int mode, unsigned resolve)
{
	char t[FSV_PATH_MAX];
	long k = zv_sys4(__NR_readlinkat, r->dirfd, r->name, t, sizeof t - 1);
	if (k < 0)
		return 0;
	t[k] = 0;
	long e = fsv_past_link(r, t, mode, resolve);
	return e < 0 ? e : 1;
}

/* A host path for (dirfd, name), for the calls without an *at form: the
 * host walks /proc/self/fd/DIRFD (a magic link to the directory itself)
 * and looks name up in it. */
static void fd_path(char *out, size_t n, const struct fsv_res *r)
{
	if (r->dirfd == AT_FDCWD)
		zv_snprintf(out, n, "%s", r->name);
	else
		zv_snprintf(out, n, "/proc/self/fd/%d/%s", r->dirfd, r->name);
}

/* 'd' for a directory, 'l' for a symlink, 0 for anything else at res. */
static int kind_at(const struct fsv_res *r)
{
	struct stat st;
	if (zv_sys4(__NR_newfstatat, r->dirfd, r->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 'd'; /* not known: as if it were */
	unsigned m = st.st_mode & FSV_S_IFMT;
	return m == FSV_S_IFDIR ? 'd' : m == FSV_S_IFLNK ? 'l' : 0;
}

static int mode_of_stat(uint64_t buf, int statx)
{
	uint16_t m = 0;
	uint64_t at = buf + (statx ? 0x1c : 24);
	zv_guest_copy(&m, (const void *)at, sizeof m, at);
	return m;
}

/* Whether the directory res names is in /proc (a link there may be magic). */
static int in_proc(struct fsv_res *r)
{
	struct { long type; long rest[15]; } sfs;
	return zv_sys2(__NR_fstatfs, r->dirfd, &sfs) == 0 && sfs.type == PROC_SUPER_MAGIC;
}

static long do_readlink(struct zv_call *c, struct fsv_res *r, int mode, long buf, long size)
{
	const char *target;
	char tbuf[FSV_PATH_MAX];
	if (fsv_proc_magic_name(r->name, r->namelen) && r->viewlen != (size_t)-1 && r->viewlen &&
	    fsv_proc_magic(r->view, r->viewlen, r->name, r->namelen, tbuf, sizeof tbuf, &target)) {
		size_t n = zv_strlen(target);
		if ((long)n > size)
			n = (size_t)size;
		return zv_guest_copy((void *)buf, target, n, (uint64_t)buf) < 0 ? -EFAULT : (long)n;
	}
	if (size <= 0)
		return next(c, __NR_readlinkat, r->dirfd, (long)r->name, buf, size, 0, 0); /* EINVAL */
	if (!r->namelen && r->dirfd >= 0 && in_proc(r)) {
		/* readlinkat(fd, ""): fd may be an O_PATH|O_NOFOLLOW fd of a
		 * magic link itself ("/proc/PID/exe"): its view path says which */
		char v[FSV_PATH_MAX];
		long vn = fsv_dirfd_view(r->dirfd, v, sizeof v);
		const char *slash = vn > 0 && vn < (long)sizeof v ? (v[vn] = 0, zv_strrchr(v, '/')) : NULL;
		if (slash && fsv_proc_magic(v, (size_t)(slash - v), slash + 1, (size_t)(v + vn - slash - 1), tbuf,
					    sizeof tbuf, &target)) {
			size_t n = zv_strlen(target);
			if ((long)n > size)
				n = (size_t)size;
			return zv_guest_copy((void *)buf, target, n, (uint64_t)buf) < 0 ? -EFAULT : (long)n;
		}
	}
	/* into a buffer of the kernel's: a magic link's host path must never
	 * reach the guest's, not even past the length returned */
	char t[FSV_PATH_MAX];
	long k = next(c, __NR_readlinkat, r->dirfd, (long)r->name, (long)t, sizeof t - 1, 0, 0);
	if (k > 0 && t[0] == '/' && in_proc(r))
		k = fsv_proc_readlink(t, k, sizeof t - 1);
	if (k <= 0)
		return k;
	if (k > size)
		k = size;
	return zv_guest_copy((void *)buf, t, (size_t)k, (uint64_t)buf) < 0 ? -EFAULT : k;
}

static long do_open(struct zv_call *c, struct fsv_res *r, int mode, long flags, long fmode,
		    const struct open_how *how, unsigned resolve)
{
	if (mode == FSV_CREATE)
		return -EISDIR; /* O_CREAT with a trailing slash */
	for (;;) {
		fsv_res_high(r); /* the new fd takes the number it has natively */
		long ret;
		int unknown = mode == FSV_FOLLOW && r->last == FSV_LAST_UNKNOWN;
		if (how || ((flags & O_PATH) && unknown)) {
			struct open_how h = { .flags = (uint64_t)flags, .mode = (uint64_t)fmode };
			if (how)
				h = *how;
			else
				h.flags &= VALID_OPEN_FLAGS_, h.mode = flags & (O_CREAT | 020000000) ? fmode & 07777 : 0;
			/* the walk made the guest's restrictions; the host keeps
			 * those of one component */
			h.resolve &= RESOLVE_CACHED | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS;
			if (unknown)
				h.resolve |= RESOLVE_NO_SYMLINKS;
			else if (!host_follows(r, mode) && !(h.flags & O_PATH))
				h.flags |= O_NOFOLLOW;
			ret = next(c, __NR_openat2, r->dirfd, (long)r->name, (long)&h, sizeof h, 0, 0);
		} else {
			long fl = host_follows(r, mode) || mode == FSV_NOFOLLOW ? flags : flags | O_NOFOLLOW;
			ret = next(c, __NR_openat, r->dirfd, (long)r->name, fl, fmode, 0, 0);
		}
		/* a symlink opened with O_NOFOLLOW: ELOOP, or ENOTDIR with O_DIRECTORY */
		if (!unknown || (ret != -ELOOP && !(ret == -ENOTDIR && (flags & O_DIRECTORY))))
			return ret;
		long p = past_link(r, mode, resolve);
		if (p <= 0)
			return p < 0 ? p : ret;
	}
}

/* stat, lstat, newfstatat, statx: the mode says whether it was a symlink. */
static long do_stat(struct zv_call *c, struct fsv_res *r, int mode, long fl, long buf, long mask, int statx,
		    unsigned resolve)
{
	for (;;) {
		long ret = statx ? next(c, __NR_statx, r->dirfd, (long)r->name, at_flags(r, mode, fl), mask, buf, 0)
				 : next(c, __NR_newfstatat, r->dirfd, (long)r->name, buf, at_flags(r, mode, fl), 0, 0);
		if (ret != 0)
			return ret;
		if ((mode_of_stat((uint64_t)buf, statx) & FSV_S_IFMT) != FSV_S_IFLNK) {
			fsv_dc_hint(r->ent, r->name, r->namelen);
			return ret;
		}
		if (mode != FSV_FOLLOW || r->last != FSV_LAST_UNKNOWN)
			return ret;
		long p = past_link(r, mode, resolve);
		if (p <= 0)
			return p < 0 ? p : ret;
	}
}

/* utime's and utimes' times as utimensat's; 0, or EFAULT or EINVAL as the
 * host gives them before the lookup. */
static long times_of(long nr, long p, struct kts *ts)
{
	if (nr == __NR_utime) {
		long u[2];
		if (zv_guest_copy(u, (const void *)p, sizeof u, (uint64_t)p) < 0)
			return -EFAULT;
		ts[0] = (struct kts){ u[0], 0 };
		ts[1] = (struct kts){ u[1], 0 };
		return 0;
	}
	long tv[4];
	if (zv_guest_copy(tv, (const void *)p, sizeof tv, (uint64_t)p) < 0)
		return -EFAULT;
	for (int i = 0; i < 2; i++) {
		if (tv[2 * i + 1] < 0 || tv[2 * i + 1] >= 1000000)
			return -EINVAL;
		ts[i] = (struct kts){ tv[2 * i], tv[2 * i + 1] * 1000 };
	}
	return 0;
}

/* The xattr calls: *xattrat on (dirfd, name), or the l-form (the host's
 * follow form on a magic link) of "/proc/self/fd/D/NAME". */
static long do_xattr(struct zv_call *c, struct fsv_res *r, int mode)
{
	long *a = c->a, nr = c->nr;
	int f = host_follows(r, mode);
	if (nr >= __NR_setxattrat_ && nr <= __NR_removexattrat_)
		return next(c, nr, r->dirfd, (long)r->name, at_flags(r, mode, a[2]), a[3], a[4], a[5]);
	if (fsv_have_xattrat) {
		long fl = f ? 0 : AT_SYMLINK_NOFOLLOW;
		struct xattr_args_ xa = { (uint64_t)a[2], (uint32_t)a[3], (uint32_t)a[4] };
		switch (nr) {
		case __NR_setxattr: case __NR_lsetxattr:
			return next(c, __NR_setxattrat_, r->dirfd, (long)r->name, fl, a[1], (long)&xa, sizeof xa);
		case __NR_getxattr: case __NR_lgetxattr:
			xa.flags = 0;
			return next(c, __NR_getxattrat_, r->dirfd, (long)r->name, fl, a[1], (long)&xa, sizeof xa);
		case __NR_listxattr: case __NR_llistxattr:
			return next(c, __NR_listxattrat_, r->dirfd, (long)r->name, fl, a[1], a[2], 0);
		default:
			return next(c, __NR_removexattrat_, r->dirfd, (long)r->name, fl, a[1], 0, 0);
		}
	}
	char p[64 + 256];
	fd_path(p, sizeof p, r);
	long lnr;
	switch (nr) {
	case __NR_setxattr: case __NR_lsetxattr: lnr = f ? __NR_setxattr : __NR_lsetxattr; break;
	case __NR_getxattr: case __NR_lgetxattr: lnr = f ? __NR_getxattr : __NR_lgetxattr; break;
	case __NR_listxattr: case __NR_llistxattr: lnr = f ? __NR_listxattr : __NR_llistxattr; break;
	default: lnr = f ? __NR_removexattr : __NR_lremovexattr; break;
	}
	return next(c, lnr, (long)p, a[1], a[2], a[3], a[4], 0);
}

/* Calls that act on the object itself through an O_PATH fd of it:
 * truncate (its "/proc/self/fd/N"), statfs (fstatfs). */
static long via_fd(struct zv_call *c, struct fsv_res *r, int mode)
{
	int fl = O_PATH | O_CLOEXEC | (host_follows(r, mode) ? 0 : O_NOFOLLOW);
	long fd = zv_openat(r->dirfd, r->name, fl, 0);
	if (fd < 0)
		return fd;
	long ret;
	if (c->nr == __NR_statfs) {
		ret = next(c, __NR_fstatfs, fd, c->a[1], 0, 0, 0, 0);
	} else {
		char p[48];
		zv_snprintf(p, sizeof p, "/proc/self/fd/%ld", fd);
		ret = next(c, __NR_truncate, (long)p, c->a[1], 0, 0, 0, 0);
	}
	zv_close((int)fd);
	return ret;
}

/* The view's mount a resolved name's directory is in: the index of the
 * deepest directory bind that holds its view path, -1 for the root's, -2
 * when not known. A bind is a mount of its own, as the host's bind mount:
 * rename and link across one are EXDEV, though the host (both on one
 * filesystem) would make them. */
static int mount_of_view(const char *view, size_t n)
{
	int best = -1;
	size_t best_len = 0;
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		const char *g = fsv_str(b->guest);
		size_t gn = zv_strlen(g);
		if (b->kind != FSV_BIND_DIR || gn < best_len || n < gn || memcmp(view, g, gn) ||
		    (gn > 1 && n > gn && view[gn] != '/'))
			continue;
		best = i;
		best_len = gn;
	}
	return best;
}

static int mount_of(struct fsv_res *r)
{
	if (fsv_walk_need_view(r) < 0)
		return -2;
	return mount_of_view(r->view, r->viewlen);
}

/* The mount of the object a /proc magic link the host follows names (an
 * fd's file: linkat of /proc/self/fd/N, as for an O_TMPFILE file): its
 * host path named back; -2 when it has no view path (a pipe, a memfd). */
static int mount_of_magic(struct fsv_res *r)
{
	char host[FSV_PATH_MAX], view[FSV_PATH_MAX];
	long n = zv_sys4(__NR_readlinkat, r->dirfd, (long)r->name, (long)host, sizeof host - 1);
	if (n <= 0)
		return -2;
	host[n] = 0;
	if (n > 10 && !zv_strcmp(host + n - 10, " (deleted)"))
		host[n - 10] = 0;
	if (fsv_view_of_host(host, view, sizeof view) < 0)
		return -2;
	return mount_of_view(view, zv_strlen(view));
}

/* Whether from (the object itself when it is a mountpoint, or the file a
 * magic link the host follows names) and to's directory are in different
 * mounts of the view. */
static int cross_mount(struct fsv_res *from, int follows, struct fsv_res *to)
{
	if (!fsv.nbinds || (from->bind < 0 && !follows && from->dirfd == to->dirfd))
		return 0;
	int a = from->bind >= 0 ? from->bind : follows ? mount_of_magic(from) : mount_of(from), b = mount_of(to);
	return a != -2 && b != -2 && a != b;
}

static int only_looks(long nr);
static long act(struct zv_call *c, struct fsv_res *r, int m);

long fsv_at_call(struct zv_call *c, struct fsv_res *res, const int *modes, char (*path)[FSV_PATH_MAX],
		 const struct open_how *how, unsigned resolve)
{
	long *a = c->a, nr = c->nr;
	struct fsv_res *r = &res[0];
	int m = modes[0];
	long e;
	switch (nr) {
	case __NR_open:
		return do_open(c, r, m, a[1], a[2], NULL, resolve);
	case __NR_creat:
		return do_open(c, r, m, O_CREAT | O_WRONLY | O_TRUNC, a[1], NULL, resolve);
	case __NR_openat:
		return do_open(c, r, m, a[2], a[3], NULL, resolve);
	case __NR_openat2:
		return do_open(c, r, m, 0, 0, how, resolve);
	case __NR_stat: case __NR_lstat:
		return do_stat(c, r, m, 0, a[1], 0, 0, resolve);
	case __NR_newfstatat:
		return do_stat(c, r, m, a[3], a[2], 0, 0, resolve);
	case __NR_statx:
		return do_stat(c, r, m, a[2], a[4], a[3], 1, resolve);
	case __NR_readlink:
		return do_readlink(c, r, m, a[1], a[2]);
	case __NR_readlinkat:
		return do_readlink(c, r, m, a[2], a[3]);
	case __NR_mkdir:
		return next(c, __NR_mkdirat, r->dirfd, (long)r->name, a[1], 0, 0, 0);
	case __NR_mkdirat:
		return next(c, __NR_mkdirat, r->dirfd, (long)r->name, a[2], 0, 0, 0);
	case __NR_mknod:
		return next(c, __NR_mknodat, r->dirfd, (long)r->name, a[1], a[2], 0, 0);
	case __NR_mknodat:
		return next(c, __NR_mknodat, r->dirfd, (long)r->name, a[2], a[3], 0, 0);
	case __NR_unlink: case __NR_rmdir: case __NR_unlinkat: {
		long fl = nr == __NR_rmdir ? AT_REMOVEDIR : nr == __NR_unlink ? 0 : a[2];
		if (r->bind >= 0) /* a mountpoint */
			return !(fl & AT_REMOVEDIR) && fsv.binds[r->bind].kind == FSV_BIND_DIR ? -EISDIR : -EBUSY;
		e = next(c, __NR_unlinkat, r->dirfd, (long)r->name, fl, 0, 0, 0);
		if (e == 0) /* the view's caches forget it (a directory, or perhaps a symlink) */
			fsv_dc_gone(r->ent, r->name, r->namelen, fl & AT_REMOVEDIR ? 'd' : 0);
		return e;
	}
	case __NR_rename: case __NR_renameat: case __NR_renameat2:
		if (r->bind >= 0 || res[1].bind >= 0)
			return -EBUSY;
		if (cross_mount(r, 0, &res[1]))
			return -EXDEV; /* the host looks up neither name first */
		e = next(c, __NR_renameat2, r->dirfd, (long)r->name, res[1].dirfd, (long)res[1].name,
			 nr == __NR_renameat2 ? a[4] : 0, 0);
		if (e == 0) {
			/* what moved (both, for RENAME_EXCHANGE) */
			int k0 = kind_at(&res[1]), k1 = nr == __NR_renameat2 && (a[4] & 2) ? kind_at(r) : k0;
			fsv_dc_gone(r->ent, r->name, r->namelen, k0);
			fsv_dc_gone(res[1].ent, res[1].name, res[1].namelen, k1);
		}
		return e;
	case __NR_link: case __NR_linkat: {
		long fl = nr == __NR_linkat ? a[4] : 0;
		if (m == FSV_FOLLOW && (e = fsv_settle_last(r, m, resolve)) < 0)
			return e;
		fl &= ~(long)AT_SYMLINK_FOLLOW;
		if (host_follows(r, m))
			fl |= AT_SYMLINK_FOLLOW;
		if (cross_mount(r, host_follows(r, m), &res[1])) {
			/* the source is looked up first: its error, else EXDEV */
			struct stat st;
			e = zv_sys4(__NR_newfstatat, r->dirfd, r->name, &st,
				    fl & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW);
			return e < 0 ? e : -EXDEV;
		}
		return next(c, __NR_linkat, r->dirfd, (long)r->name, res[1].dirfd, (long)res[1].name, fl, 0);
	}
	case __NR_symlink:
		return next(c, __NR_symlinkat, a[0], r->dirfd, (long)r->name, 0, 0, 0);
	case __NR_symlinkat:
		return next(c, __NR_symlinkat, a[0], r->dirfd, (long)r->name, 0, 0, 0);
	}
	/* the rest act on the object a followed last component names: settle
	 * it first (their results cannot tell a symlink, or they would change
	 * it); one that only looks goes first, as a missing name is missing
	 * followed or not (access("/etc/ld.so.preload"), PATH searches) */
	if (m != FSV_FOLLOW)
		return act(c, r, m);
	int look = only_looks(nr) && r->last == FSV_LAST_UNKNOWN && !fsv_dc_hinted(r->ent, r->name, r->namelen);
	long first = look ? act(c, r, m) : 0;
	if (first == -ENOENT)
		return first;
	if ((e = fsv_settle_last(r, m, resolve)) < 0)
		return e;
	return look && r->last == FSV_LAST_NOLINK ? first : act(c, r, m);
}

/* A mode or owner changed (e == 0): who may search a directory with it. */
static long searched(struct fsv_res *r, long e)
{
	if (e == 0)
		fsv_dc_mode_changed(r->ent, r->name, r->namelen);
	return e;
}

/* Calls that change nothing, whatever they name. */
static int only_looks(long nr)
{
	switch (nr) {
	case __NR_access: case __NR_faccessat: case __NR_faccessat2:
	case __NR_getxattr: case __NR_listxattr: case __NR_getxattrat_: case __NR_listxattrat_:
		return 1;
	}
	return 0;
}

/* The calls after the first switch of fsv_at_call, on a settled last component. */
static long act(struct zv_call *c, struct fsv_res *r, int m)
{
	long *a = c->a, nr = c->nr;
	long e;
	switch (nr) {
	case __NR_access:
		return next(c, __NR_faccessat2, r->dirfd, (long)r->name, a[1], at_flags(r, m, 0), 0, 0);
	case __NR_faccessat:
		return next(c, __NR_faccessat2, r->dirfd, (long)r->name, a[2], at_flags(r, m, 0), 0, 0);
	case __NR_faccessat2:
		return next(c, __NR_faccessat2, r->dirfd, (long)r->name, a[2], at_flags(r, m, a[3]), 0, 0);
	case __NR_chmod:
		return searched(r, next(c, __NR_fchmodat, r->dirfd, (long)r->name, a[1], 0, 0, 0));
	case __NR_fchmodat:
		return searched(r, next(c, __NR_fchmodat, r->dirfd, (long)r->name, a[2], 0, 0, 0));
	case __NR_fchmodat2_:
		return searched(r, next(c, __NR_fchmodat2_, r->dirfd, (long)r->name, a[2], at_flags(r, m, a[3]), 0, 0));
	case __NR_chown: case __NR_lchown:
		return searched(r, next(c, __NR_fchownat, r->dirfd, (long)r->name, a[1], a[2], at_flags(r, m, 0), 0));
	case __NR_fchownat:
		return searched(r, next(c, __NR_fchownat, r->dirfd, (long)r->name, a[2], a[3], at_flags(r, m, a[4]), 0));
	case __NR_utime: case __NR_utimes: case __NR_futimesat: {
		long p = nr == __NR_futimesat ? a[2] : a[1];
		struct kts ts[2], *tp = NULL;
		if (p) {
			if ((e = times_of(nr, p, ts)) < 0)
				return e;
			tp = ts;
		}
		return next(c, __NR_utimensat, r->dirfd, (long)r->name, (long)tp, at_flags(r, m, 0), 0, 0);
	}
	case __NR_utimensat:
		return next(c, __NR_utimensat, r->dirfd, (long)r->name, a[2], at_flags(r, m, a[3]), 0, 0);
	case __NR_truncate: case __NR_statfs:
		return via_fd(c, r, m);
	case __NR_inotify_add_watch: {
		char p[64 + 256];
		fd_path(p, sizeof p, r);
		long mask = host_follows(r, m) ? a[2] : a[2] | IN_DONT_FOLLOW_;
		return next(c, nr, a[0], (long)p, mask, 0, 0, 0);
	}
	case __NR_fanotify_mark: {
		long fl = host_follows(r, m) ? a[1] : a[1] | FAN_MARK_DONT_FOLLOW_;
		return next(c, nr, a[0], fl, a[2], r->dirfd, (long)r->name, 0);
	}
	case __NR_name_to_handle_at: {
		long fl = a[4] & ~(long)AT_SYMLINK_FOLLOW;
		if (host_follows(r, m))
			fl |= AT_SYMLINK_FOLLOW;
		return next(c, nr, r->dirfd, (long)r->name, a[2], a[3], fl, 0);
	}
	case __NR_open_tree: case __NR_open_tree_attr_:
		if (a[2] & OPEN_TREE_CLONE_)
			return -EPERM; /* a new mount: CAP_SYS_ADMIN */
		fsv_res_high(r);
		return next(c, nr, r->dirfd, (long)r->name, at_flags(r, m, a[2]), a[3], a[4], 0);
	case __NR_file_getattr_: case __NR_file_setattr_:
		return next(c, nr, r->dirfd, (long)r->name, a[2], a[3], at_flags(r, m, a[4]), 0);
	case __NR_quotactl: {
		char p[64 + 256];
		fd_path(p, sizeof p, r);
		return next(c, nr, a[0], (long)p, a[2], a[3], 0, 0);
	}
	}
	return do_xattr(c, r, m);
}

long fsv_at_validate(struct zv_call *c)
{
	const struct zv_sysent *row = zv_row(c->nr);
	long a[6];
	memcpy(a, c->a, sizeof a);
	int flags = 0;
	for (int i = 0; i < 2; i++) {
		const struct zv_fsv_arg *p = &row->fsv.p[i];
		if (!p->path)
			continue;
		a[p->path - 1] = (long)"";
		if (p->dirfd)
			a[p->dirfd - 1] = -1;
		flags |= p->flags != 0;
	}
	if (!flags && c->nr != __NR_readlink && c->nr != __NR_readlinkat && c->nr != __NR_utimes &&
	    c->nr != __NR_futimesat)
		return 0;
	long r = zv_sys6(c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	return r == -EINVAL || r == -E2BIG ? r : 0;
}
