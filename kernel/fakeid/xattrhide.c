/* The record's attribute is the kernel's, as an inode's owner is: the
 * program does not see it (getxattr says ENODATA, listxattr leaves it
 * out), so that tools that copy attributes (cp -a, tar --xattrs, rsync
 * -X) copy what the program set, and ownership as the program chowns it.
 * An access ACL the program sets changes the host's mode bits; the record
 * takes them (acl_set).
 *
 * Attributes the host keeps for its root (trusted.*, security.*: setcap's
 * security.capability), which the fake identity may set natively, are kept
 * as user.zvisor.NAME where the host refuses them (EPERM) and read, listed
 * and removed under their own names (priv_*): setcap, getcap, cp -a and
 * tar --xattrs of capabilities work as natively. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <linux/stat.h>

#define NAME_LEN (sizeof ZV_FID_XATTR) /* with its NUL */
#define LIST_MAX 65536                 /* XATTR_LIST_MAX */

#define NR_getxattrat 464
#define NR_listxattrat 465
#define NR_setxattrat 463
#define NR_removexattrat 466
#define NR_fchmodat2 452

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

#define PRIV ZV_FID_PRIV
#define PRIV_LEN (sizeof PRIV - 1)

/* The list of names at buf (n bytes) without ours, and the kept
 * privileged ones under their own names (trusted.* only for an identity
 * with CAP_SYS_ADMIN, as natively); its new length. */
static long strip(char *buf, long n, int trusted)
{
	for (long at = 0; at < n;) {
		long l = (long)zv_strlen(buf + at) + 1;
		if (l == (long)NAME_LEN && !memcmp(buf + at, ZV_FID_XATTR, NAME_LEN)) {
			memmove(buf + at, buf + at + l, (size_t)(n - at - l));
			n -= l;
			continue;
		}
		if (l > (long)PRIV_LEN + 1 && !memcmp(buf + at, PRIV, PRIV_LEN)) {
			if (!trusted && !memcmp(buf + at + PRIV_LEN, "trusted.", 8)) {
				memmove(buf + at, buf + at + l, (size_t)(n - at - l));
				n -= l;
				continue;
			}
			memmove(buf + at, buf + at + PRIV_LEN, (size_t)(n - at - PRIV_LEN));
			n -= PRIV_LEN;
			l -= PRIV_LEN;
		}
		at += l;
	}
	return n;
}

/* The guest's attribute name at p as PRIV NAME into buf, if NAME is one
 * the host keeps for its root: the capability the fake identity needs for
 * it natively (cap_inode_setxattr), else -1. */
static int priv_name(char *buf, size_t size, uint64_t p)
{
	size_t i = 0;
	memcpy(buf, PRIV, PRIV_LEN);
	for (; i < 256 && PRIV_LEN + i + 1 < size; i++) {
		if (zv_fid_arg_copy(buf + PRIV_LEN + i, p + i, 1) < 0)
			return -1;
		if (!buf[PRIV_LEN + i])
			break;
	}
	const char *name = buf + PRIV_LEN;
	if (name[i])
		return -1;
	if (!zv_strcmp(name, "security.capability"))
		return CAP_SETFCAP;
	if ((!zv_strncmp(name, "trusted.", 8) && name[8]) || (!zv_strncmp(name, "security.", 9) && name[9]))
		return CAP_SYS_ADMIN;
	return -1;
}

/* A call on a privileged attribute the host answered with r: made again
 * on its user.zvisor. name where the host refused it (EPERM, as for its
 * user) or has none (ENODATA: get and remove) and the fake identity may
 * (its answer is then the call's, ENODATA for one it has not), else r.
 * ni: the name's argument; after: the layers after this one when the
 * call came. */
static long priv_call(struct zv_call *call, long r, int ni, unsigned after)
{
	int set = 0, get = 0;
	switch (call->nr) {
	case __NR_setxattr: case __NR_lsetxattr: case __NR_fsetxattr: case NR_setxattrat:
		set = 1;
		break;
	case __NR_getxattr: case __NR_lgetxattr: case __NR_fgetxattr: case NR_getxattrat:
		get = 1;
		break;
	}
	if (!(r == -EPERM || ((get || !set) && r == -ENODATA)))
		return r;
	char name[PRIV_LEN + 260];
	int cap = priv_name(name, sizeof name, (uint64_t)call->a[ni]);
	if (cap < 0)
		return r;
	if (get && memcmp(name + PRIV_LEN, "trusted.", 8))
		cap = -1; /* security.* is anyone's to read */
	else if (get)
		cap = CAP_SYS_ADMIN;
	if (cap >= 0 && !zv_fid_capable(&call->t->cred, cap))
		return r;
	long b[6];
	memcpy(b, call->a, sizeof b);
	b[ni] = (long)name;
	call->after = after;
	return zv_next_as(call, call->nr, b);
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
		n = strip(buf, n, zv_fid_capable(&call->t->cred, CAP_SYS_ADMIN));
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

/* The file an xattr call names, as (dirfd, returned path, AT_ flags). */
static const char *target(struct zv_call *call, int *dirfd, int *flags)
{
	long nr = call->nr;
	int at = nr >= NR_setxattrat && nr <= NR_removexattrat;
	int fdcall = nr == __NR_fsetxattr || nr == __NR_fremovexattr || nr == __NR_fgetxattr;
	*dirfd = fdcall || at ? (int)call->a[0] : AT_FDCWD;
	*flags = fdcall ? AT_EMPTY_PATH
	       : at ? (int)call->a[2] & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)
	       : (nr == __NR_lsetxattr || nr == __NR_lremovexattr || nr == __NR_lgetxattr) ? AT_SYMLINK_NOFOLLOW : 0;
	return fdcall ? "" : (const char *)call->a[at ? 1 : 0];
}

/* A user.* attribute of a device node, which the host keeps as a regular
 * file that could hold one: refused as natively (xattr_permission: EPERM
 * for a change, ENODATA for a read); 0 for every other call. */
static long node_user_attr(struct zv_call *call, int ni, int change)
{
	char pre[5];
	if (zv_fid_arg_copy(pre, (uint64_t)call->a[ni], sizeof pre) < 0 || memcmp(pre, "user.", 5))
		return 0;
	int dirfd, flags;
	const char *path = target(call, &dirfd, &flags);
	struct zv_fid_stat host;
	struct zv_fid_rec r;
	if (!path || zv_fid_fstatat(dirfd, path, flags, &host) < 0 || (host.mode & S_IFMT) != S_IFREG ||
	    !zv_fid_db_get(host.dev, host.ino, &r))
		return 0;
	uint32_t t = r.mode & S_IFMT;
	return t == S_IFCHR || t == S_IFBLK ? (change ? -EPERM : -ENODATA) : 0;
}

/* An access ACL set or removed: the host changed the file's permission
 * bits with it (posix_acl_equiv_mode, as cp -p's ACL copy does after its
 * fchown), and the record, which holds the mode the program sees, takes
 * them too. For a fake root the host's bits then get back the owner's read
 * and write (and search, for a directory) that chmod keeps (create.c
 * zv_fid_keep_bits), before the record is written (a user attribute needs
 * write access): cp -a of a directory of mode 0555 sets its mode by ACL,
 * and the copy stayed 0555 on the host, which the fake root could no
 * longer write into or empty. */
static long acl_set(struct zv_call *call)
{
	static const char acl[] = "system.posix_acl_access";
	long nr = call->nr, r = zv_next(call);
	int at = nr == NR_setxattrat || nr == NR_removexattrat;
	if (r < 0 || !name_is((uint64_t)call->a[at ? 3 : 1], acl, sizeof acl))
		return r;
	int dirfd, flags, fdcall = nr == __NR_fsetxattr || nr == __NR_fremovexattr;
	const char *path = target(call, &dirfd, &flags);
	struct zv_fid_stat host, v;
	if (zv_fid_fstatat(dirfd, path, flags, &host) < 0)
		return r;
	v = host;
	zv_fid_view(dirfd, path, flags, &v);
	uint32_t keep = zv_fid_keep_bits(&call->t->cred, host.mode & S_IFMT) & ~host.mode;
	if ((v.mode & 0777) == (host.mode & 0777) && !keep)
		return r;
	v.mode = (v.mode & ~0777u) | (host.mode & 0777);
	if (keep) {
		uint32_t hmode = (host.mode & 07777) | keep;
		long e = fdcall ? zv_sys2(__NR_fchmod, dirfd, hmode)
		       : flags ? zv_sys4(NR_fchmodat2, dirfd, path, hmode, flags)
			       : zv_sys3(__NR_fchmodat, dirfd, path, hmode);
		if (e == 0)
			host.mode = (host.mode & S_IFMT) | hmode;
	}
	struct zv_fid_rec rec;
	zv_fid_rec_of(&rec, &v);
	zv_fid_store(dirfd, path, flags, &host, &rec);
	return r;
}

long zv_fid_xattr_call(struct zv_call *call)
{
	unsigned after = call->after;
	int ni = call->nr == NR_getxattrat || call->nr == NR_setxattrat || call->nr == NR_removexattrat ? 3 : 1;
	switch (call->nr) {
	case __NR_setxattr: case __NR_lsetxattr: case __NR_fsetxattr:
	case __NR_removexattr: case __NR_lremovexattr: case __NR_fremovexattr:
	case NR_setxattrat: case NR_removexattrat: {
		long e = node_user_attr(call, ni, 1);
		return e ? e : priv_call(call, acl_set(call), ni, after);
	}
	case __NR_listxattr: case __NR_llistxattr: case __NR_flistxattr:
		return list(call, 1);
	case NR_listxattrat:
		return list(call, 3);
	default: {
		long r = node_user_attr(call, ni, 0);
		if (r)
			return r;
		r = zv_next(call);
		uint64_t name = (uint64_t)call->a[ni];
		if ((r >= 0 || r == -ERANGE) && is_ours(name))
			return -ENODATA;
		return priv_call(call, r, ni, after);
	}
	}
}
