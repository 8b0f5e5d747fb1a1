/* The record's attribute is the kernel's, as an inode's owner is: the
 * program does not see it (getxattr says ENODATA, listxattr leaves it
 * out), so that tools that copy attributes (cp -a, tar --xattrs, rsync
 * -X) copy what the program set, and ownership as the program chowns it.
 * An access ACL the program sets changes the host's mode bits; the record
 * takes them (acl_set). */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>

#define NAME_LEN (sizeof ZV_FID_XATTR) /* with its NUL */
#define LIST_MAX 65536                 /* XATTR_LIST_MAX */

#define NR_getxattrat 464
#define NR_listxattrat 465
#define NR_setxattrat 463
#define NR_removexattrat 466

/* Whether the guest's attribute name at name is want (len bytes with its NUL). */
static int name_is(uint64_t name, const char *want, size_t len)
{
	char buf[64];
	return len <= sizeof buf && zv_fid_arg_copy(buf, name, len) == 0 && !memcmp(buf, want, len);
}

static int is_ours(uint64_t name)
{
	return name_is(name, ZV_FID_XATTR, NAME_LEN);
}

/* The list of names at buf (n bytes) without ours; its new length. */
static long strip(char *buf, long n)
{
	for (long at = 0; at < n;) {
		long l = (long)zv_strlen(buf + at) + 1;
		if (l == (long)NAME_LEN && !memcmp(buf + at, ZV_FID_XATTR, NAME_LEN)) {
			memmove(buf + at, buf + at + l, (size_t)(n - at - l));
			return n - l;
		}
		at += l;
	}
	return n;
}

/* listxattr and its kin: the list (argument li) and its size (li + 1). */
static long list(struct zv_call *call, int li)
{
	long *a = call->a;
	char *buf = zv_kmap(LIST_MAX, 4096, -1);
	if (zv_is_err((long)buf))
		return zv_next(call);
	long b[6];
	memcpy(b, a, sizeof b);
	b[li] = (long)buf;
	b[li + 1] = LIST_MAX;
	long n = zv_next_with(call, b), size = a[li + 1];
	uint64_t out = (uint64_t)a[li];
	if (n >= 0) {
		n = strip(buf, n);
		if (size && n > size)
			n = -ERANGE;
		else if (size && n && zv_guest_copy((void *)out, buf, (size_t)n, out) < 0)
			n = -EFAULT;
	} else if (n == -E2BIG && size == 0) {
		n = zv_next(call);
	}
	zv_kunmap(buf, LIST_MAX);
	return n;
}

/* An access ACL set or removed: the host changed the file's permission
 * bits with it (posix_acl_equiv_mode, as cp -p's ACL copy does after its
 * fchown), and the record, which holds the mode the program sees, takes
 * them too. */
static long acl_set(struct zv_call *call)
{
	static const char acl[] = "system.posix_acl_access";
	long nr = call->nr, r = zv_next(call);
	int at = nr == NR_setxattrat || nr == NR_removexattrat;
	if (r < 0 || !name_is((uint64_t)call->a[at ? 3 : 1], acl, sizeof acl))
		return r;
	int fdcall = nr == __NR_fsetxattr || nr == __NR_fremovexattr;
	int dirfd = fdcall || at ? (int)call->a[0] : AT_FDCWD;
	const char *path = fdcall ? "" : (const char *)call->a[at ? 1 : 0];
	int flags = fdcall ? AT_EMPTY_PATH
		  : at ? (int)call->a[2] & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)
		  : (nr == __NR_lsetxattr || nr == __NR_lremovexattr) ? AT_SYMLINK_NOFOLLOW : 0;
	struct zv_fid_stat host, v;
	if (zv_fid_fstatat(dirfd, path, flags, &host) < 0)
		return r;
	v = host;
	zv_fid_view(dirfd, path, flags, &v);
	if ((v.mode & 0777) == (host.mode & 0777))
		return r;
	v.mode = (v.mode & ~0777u) | (host.mode & 0777);
	struct zv_fid_rec rec;
	zv_fid_rec_of(&rec, &v);
	zv_fid_store(dirfd, path, flags, &host, &rec);
	return r;
}

long zv_fid_xattr_call(struct zv_call *call)
{
	switch (call->nr) {
	case __NR_setxattr: case __NR_lsetxattr: case __NR_fsetxattr:
	case __NR_removexattr: case __NR_lremovexattr: case __NR_fremovexattr:
	case NR_setxattrat: case NR_removexattrat:
		return acl_set(call);
	case __NR_listxattr: case __NR_llistxattr: case __NR_flistxattr:
		return list(call, 1);
	case NR_listxattrat:
		return list(call, 3);
	default: {
		long r = zv_next(call);
		uint64_t name = (uint64_t)call->a[call->nr == NR_getxattrat ? 3 : 1];
		return (r >= 0 || r == -ERANGE) && is_ours(name) ? -ENODATA : r;
	}
	}
}
