/* The resolver's small pieces around the walk (walk.c): its own fds kept
 * out of the guest's way, the guest's path copied in, names the host may
 * look up alone, and the last component found to be a symlink: followed by
 * the walk, or left to the host when it is one of /proc's magic links. */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <linux/limits.h>
#include <linux/magic.h>

/* The lowest fd number the view's own fds may take (the guest's are below),
 * and the hidden fds' numbers move there. */
static int fd_floor(void)
{
	long top = zv_hidden_fd_top(); /* below the usual limit: a long fd table costs every fork */
	return top < 256 ? -1 : (int)top - 192;
}

static int floor;

int fsv_fd_high(int fd, int cloexec)
{
	if (!floor)
		floor = fd_floor();
	if (floor < 0 || fd >= floor)
		return fd;
	int cmd = cloexec ? F_DUPFD_CLOEXEC : F_DUPFD;
	long hi = zv_sys3(__NR_fcntl, fd, cmd, floor);
	if (hi == -EINVAL) /* the limit went down */
		hi = zv_sys3(__NR_fcntl, fd, cmd, floor = fd_floor());
	if (hi < 0)
		return fd;
	zv_close(fd);
	return (int)hi;
}

int fsv_fd_is_high(int fd)
{
	return floor > 0 && fd >= floor;
}

void fsv_res_high(struct fsv_res *res)
{
	if (res->owned && res->dirfd >= 0)
		res->dirfd = fsv_fd_high(res->dirfd, 1);
}

long fsv_copy_path(const char *p, char *out, size_t n)
{
	uint64_t a = (uint64_t)p;
	if (!p || zv_bad_guest_ptr(a) || a >= 0x800000000000UL || (a >= ZV_KWIN_START && a < ZV_KWIN_END))
		return -EFAULT;
	/* the bytes before the kernel's window or the end of user space */
	uint64_t end = a < ZV_KWIN_START ? ZV_KWIN_START : 0x800000000000UL;
	size_t lim = end - a < n ? (size_t)(end - a) : n;
	for (size_t i = 0; i < lim; i++) {
		out[i] = p[i]; /* a fault is the call's EFAULT (the fault guard) */
		if (!out[i])
			return 0;
	}
	return lim < n ? -EFAULT : -ENAMETOOLONG; /* PATH_MAX bytes without a NUL, as the host's getname */
}

int fsv_simple_name(const char *p)
{
	size_t n = 0;
	for (; p[n]; n++)
		if (p[n] == '/')
			return 0;
	if (!n || (p[0] == '.' && (n == 1 || (n == 2 && p[1] == '.'))))
		return 0;
	return n <= NAME_MAX && !fsv_bind_basename(p, n) && !fsv_glue_name(p, n) && !fsv_proc_magic_name(p, n);
}

void fsv_res_direct(struct fsv_res *res, int dirfd, const char *name)
{
	res->dirfd = dirfd;
	res->owned = 0;
	res->bind = -1;
	res->links = 0;
	res->last = FSV_LAST_UNKNOWN;
	res->begun = 0;
	res->dc = 0;
	res->ent = (struct fsv_dref){ FSV_DC_NONE, 0 };
	res->viewlen = (size_t)-1;
	size_t i = 0;
	for (; i < sizeof res->name - 1 && name[i]; i++)
		res->name[i] = name[i];
	res->name[i] = 0;
	res->namelen = i;
}

int fsv_magic_last(struct fsv_res *res, const char *target)
{
	if (target[0] != '/' && !zv_strchr(target, ':'))
		return 0;
	if (res->viewlen != (size_t)-1 && res->viewlen) {
		for (int i = 0; i < fsv.nbinds; i++) {
			const char *g = fsv_str(fsv.binds[i].guest);
			size_t gn = zv_strlen(g);
			if (fsv.binds[i].procfs && res->viewlen > gn && !memcmp(res->view, g, gn) &&
			    res->view[gn] == '/')
				return 1;
		}
		return 0;
	}
	struct { long type; long rest[15]; } sfs;
	return zv_sys2(__NR_fstatfs, res->dirfd, &sfs) == 0 && sfs.type == PROC_SUPER_MAGIC;
}

long fsv_past_link(struct fsv_res *res, const char *t, int mode, unsigned resolve)
{
	if (fsv_magic_last(res, t)) {
		if (resolve & (FSV_R_NO_MAGICLINKS | FSV_R_NO_SYMLINKS))
			return -ELOOP;
		if (resolve & (FSV_R_BENEATH | FSV_R_IN_ROOT))
			return -EXDEV;
		res->last = FSV_LAST_MAGIC; /* the host follows it: an object the process holds */
		return 0;
	}
	return fsv_follow_last(res, t, mode, resolve);
}

/* A symlink whose target did not fit settle's buffer: read again. */
static __attribute__((noinline)) long past_long_link(struct fsv_res *res, int mode, unsigned resolve)
{
	char t[FSV_PATH_MAX];
	long k = zv_sys4(__NR_readlinkat, res->dirfd, res->name, t, sizeof t - 1);
	if (k < 0)
		return 0; /* changed meanwhile: settle looks again */
	t[k] = 0;
	return fsv_past_link(res, t, mode, resolve);
}

long fsv_settle_last(struct fsv_res *res, int mode, unsigned resolve)
{
	if (res->last == FSV_LAST_UNKNOWN && fsv_dc_hinted(res->ent, res->name, res->namelen))
		res->last = FSV_LAST_NOLINK; /* a stat of it just said so */
	while (res->last == FSV_LAST_UNKNOWN) {
		/* a small buffer first: most names are no symlink (EINVAL), and
		 * this stack's pages are each a fault in a fresh image */
		char t[FSV_DC_TARGET_MAX + 1];
		long k = zv_sys4(__NR_readlinkat, res->dirfd, res->name, t, sizeof t - 1);
		if (k < 0) {
			if (k == -EINVAL) {
				res->last = FSV_LAST_NOLINK;
				fsv_dc_hint(res->ent, res->name, res->namelen);
			}
			return 0; /* missing or unreadable: the call's own answer */
		}
		t[k] = 0;
		long r = k < (long)sizeof t - 1 ? fsv_past_link(res, t, mode, resolve) : past_long_link(res, mode, resolve);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The view path grows by a name, or is forgotten when it would not fit. */
void fsv_view_push(struct fsv_res *res, const char *c, size_t n)
{
	if (res->viewlen == (size_t)-1 || !res->viewlen)
		return;
	size_t at = res->viewlen == 1 ? 0 : res->viewlen;
	if (at + 1 + n >= sizeof res->view) {
		res->viewlen = (size_t)-1;
		return;
	}
	res->view[at] = '/';
	memcpy(res->view + at + 1, c, n);
	res->viewlen = at + 1 + n;
	res->view[res->viewlen] = 0;
}

void fsv_view_set(struct fsv_res *res, const char *v, size_t n)
{
	memcpy(res->view, v, n);
	res->view[n] = 0;
	res->viewlen = n;
}

/* The view path of name c (n bytes) in the current directory (whose view
 * path is known) into v (FSV_PATH_MAX bytes): its length, 0 if too long. */
size_t fsv_child_view(const struct fsv_res *res, const char *c, size_t n, char *v)
{
	size_t at = res->viewlen == 1 ? 0 : res->viewlen;
	if (at + 1 + n >= FSV_PATH_MAX)
		return 0;
	memcpy(v, res->view, at);
	v[at] = '/';
	memcpy(v + at + 1, c, n);
	v[at + 1 + n] = 0;
	return at + 1 + n;
}
