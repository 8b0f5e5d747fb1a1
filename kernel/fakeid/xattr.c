/* The record's extended attribute on the file a call names as
 * (dirfd, path, AT_ flags), in as few host calls and path walks as that
 * form allows: an fd's own call (fgetxattr), a path's (getxattr or
 * lgetxattr, from the cwd or absolute), for a path under a dirfd the
 * *xattrat calls of Linux 6.13, else the same path through /proc/self/fd,
 * and for an O_PATH fd /proc/self/fd/N. */
#include "fakeid/fakeid.h"
#include "lib/syscall.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

#define NR_setxattrat 463
#define NR_getxattrat 464
#define NR_removexattrat 466

struct xattr_args {
	uint64_t value;
	uint32_t size;
	uint32_t flags;
};

enum op { GET, SET, REMOVE };

/* The *at call, or -ENOSYS where the host has none. */
static long at_call(enum op op, const char *name, int dirfd, const char *path, int flags, char *buf, size_t n)
{
	if (!zv_fid.xattrat)
		return -ENOSYS;
	struct xattr_args args = { (uint64_t)buf, (uint32_t)n, 0 };
	long nr = op == GET ? NR_getxattrat : op == SET ? NR_setxattrat : NR_removexattrat;
	long r = op == REMOVE ? zv_sys4(nr, dirfd, path, flags, name)
			      : zv_sys6(nr, dirfd, (long)path, flags, (long)name, (long)&args, sizeof args);
	if (r == -ENOSYS)
		zv_fid.xattrat = 0;
	else
		zv_fid.xattrat = 1;
	return r;
}

/* The plain call on a path, following a final symlink or not. */
static long path_call(enum op op, const char *name, const char *path, int nofollow, char *buf, size_t n)
{
	switch (op) {
	case GET:
		return zv_sys4(nofollow ? __NR_lgetxattr : __NR_getxattr, path, name, buf, n);
	case SET:
		return zv_sys5(nofollow ? __NR_lsetxattr : __NR_setxattr, path, name, buf, n, 0);
	default:
		return zv_sys2(nofollow ? __NR_lremovexattr : __NR_removexattr, path, name);
	}
}

static long call(enum op op, const char *name, int dirfd, const char *path, int flags, char *buf, size_t n)
{
	int nofollow = (flags & AT_SYMLINK_NOFOLLOW) != 0;
	if (!path[0] && (flags & AT_EMPTY_PATH)) {
		if (dirfd == AT_FDCWD)
			return path_call(op, name, ".", 0, buf, n);
		long r = op == GET ? zv_sys4(__NR_fgetxattr, dirfd, name, buf, n)
		       : op == SET ? zv_sys5(__NR_fsetxattr, dirfd, name, buf, n, 0)
				   : zv_sys2(__NR_fremovexattr, dirfd, name);
		if (r != -EBADF)
			return r;
		/* an O_PATH fd, which the *xattrat calls refuse too (6.18) */
		char p[32];
		zv_snprintf(p, sizeof p, "/proc/self/fd/%d", dirfd);
		return path_call(op, name, p, 0, buf, n);
	}
	if (path[0] == '/' || dirfd == AT_FDCWD)
		return path_call(op, name, path, nofollow, buf, n);
	long r = at_call(op, name, dirfd, path, nofollow ? AT_SYMLINK_NOFOLLOW : 0, buf, n);
	if (r != -ENOSYS)
		return r;
	char p[4096 + 32];
	if (zv_snprintf(p, sizeof p, "/proc/self/fd/%d/%s", dirfd, path) >= (int)sizeof p)
		return -ENAMETOOLONG;
	return path_call(op, name, p, nofollow, buf, n);
}

long zv_fid_xattr_get(int dirfd, const char *path, int flags, char *buf, size_t n)
{
	return call(GET, ZV_FID_XATTR, dirfd, path, flags, buf, n);
}

long zv_fid_xattr_set(int dirfd, const char *path, int flags, const char *val, size_t n)
{
	return call(SET, ZV_FID_XATTR, dirfd, path, flags, (char *)val, n);
}

long zv_fid_xattr_remove(int dirfd, const char *path, int flags)
{
	return call(REMOVE, ZV_FID_XATTR, dirfd, path, flags, NULL, 0);
}

/* Attribute name (not the record's) removed, as zv_fid_xattr_remove. */
long zv_fid_xattr_remove_name(int dirfd, const char *path, int flags, const char *name)
{
	return call(REMOVE, name, dirfd, path, flags, NULL, 0);
}
