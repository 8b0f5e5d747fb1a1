/* chown, chmod and mknod under virtual ids. Each finds the file as the
 * host would (its errnos: ENOENT, ENOTDIR, EACCES, ELOOP, EBADF), judges
 * the change by the virtual credentials and the file's virtual owner, as
 * the host's setattr_prepare and vfs_mknod do, and keeps the result as the
 * file's record. chmod also changes the host's mode (so that the host
 * user's access follows it), keeping the owner's read and write for a
 * fake root; device nodes are empty regular files on the host. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/devnum.h"
#include <linux/fcntl.h>
#include <linux/stat.h>

#define NR_fchmodat2 452
#define NONE 0xffffffffu

/* The file at (dirfd, path, flags) as the host stats it and as the view
 * shows it. */
static long find(int dirfd, const char *path, int flags, struct zv_fid_stat *host, struct zv_fid_stat *view)
{
	long e = zv_fid_fstatat(dirfd, path, flags, host);
	if (e < 0)
		return e;
	*view = *host;
	zv_fid_view(dirfd, path, flags, view);
	return 0;
}

static int in_group_or_capable(const struct zv_creds *c, uint32_t gid)
{
	return zv_fid_in_group(c, gid) || zv_fid_capable(c, CAP_FSETID);
}

static long do_chown(const struct zv_creds *c, int dirfd, const char *path, uint32_t uid, uint32_t gid, int flags)
{
	struct zv_fid_stat host, v;
	long e = find(dirfd, path, flags, &host, &v);
	if (e < 0)
		return e;
	int owner = c->fsuid == v.uid, cap = zv_fid_capable(c, CAP_CHOWN);
	if (uid != NONE && !cap && !(owner && uid == v.uid))
		return -EPERM;
	if (gid != NONE && !cap && !(owner && (gid == v.gid || zv_fid_in_group(c, gid))))
		return -EPERM;
	struct zv_fid_stat n = v;
	if (uid != NONE)
		n.uid = uid;
	if (gid != NONE)
		n.gid = gid;
	if ((v.mode & S_IFMT) != S_IFDIR) { /* set-id bits go, as in notify_change */
		n.mode &= ~S_ISUID;
		if ((v.mode & S_ISGID) && ((v.mode & S_IXGRP) || !in_group_or_capable(c, v.gid)))
			n.mode &= ~S_ISGID;
	}
	struct zv_fid_rec r;
	zv_fid_rec_of(&r, &n);
	e = zv_fid_store(dirfd, path, flags, &host, &r);
	/* and file capabilities go, as in notify_change (ATTR_KILL_PRIV): the
	 * host's own for a zvisor run by root, else the ones the host keeps
	 * for the program (xattrhide.c) */
	if (e == 0 && (host.mode & S_IFMT) != S_IFDIR && (host.mode & S_IFMT) != S_IFLNK)
		zv_fid_xattr_remove_name(dirfd, path, flags,
					 zv_fid.host_uid == 0 ? "security.capability"
							      : ZV_FID_PRIV "security.capability");
	return e;
}

/* The host's own chmod of the file, with mode: the call the guest made. */
static long host_chmod(long nr, int dirfd, const char *path, int flags, uint32_t mode)
{
	switch (nr) {
	case __NR_chmod: return zv_sys2(__NR_chmod, path, mode);
	case __NR_fchmod: return zv_sys2(__NR_fchmod, dirfd, mode);
	case __NR_fchmodat: return zv_sys3(__NR_fchmodat, dirfd, path, mode);
	default: return zv_sys4(NR_fchmodat2, dirfd, path, mode, flags);
	}
}

static long do_chmod(const struct zv_creds *c, long nr, int dirfd, const char *path, uint32_t mode, int flags)
{
	struct zv_fid_stat host, v;
	long e = find(dirfd, path, flags, &host, &v);
	if (e < 0)
		return e;
	if ((host.mode & S_IFMT) == S_IFLNK)
		return -EOPNOTSUPP; /* a symlink itself (AT_SYMLINK_NOFOLLOW): its mode is fixed */
	if (c->fsuid != v.uid && !zv_fid_capable(c, CAP_FOWNER))
		return -EPERM;
	mode &= 07777;
	if (!in_group_or_capable(c, v.gid))
		mode &= ~S_ISGID;
	/* a directory's set-gid bit goes to the host too, so that a new file's
	 * one stat of its parent tells (create.c zv_fid_setgid_dir) */
	uint32_t dir_sgid = (host.mode & S_IFMT) == S_IFDIR ? mode & S_ISGID : 0;
	uint32_t hmode = (mode & 0777) | dir_sgid | zv_fid_keep_bits(c, host.mode & S_IFMT);
	e = host_chmod(nr, dirfd, path, flags, hmode);
	if (e == 0 && dir_sgid)
		e = zv_fid_fstatat(dirfd, path, flags, &host); /* (the host may clear the bit) */
	else if (e == 0)
		host.mode = (host.mode & S_IFMT) | hmode;
	if (e < 0 && e != -EPERM) /* EPERM: a file of another host user's: the record only */
		return e;
	struct zv_fid_stat n = v;
	n.mode = (v.mode & S_IFMT) | mode;
	struct zv_fid_rec r;
	zv_fid_rec_of(&r, &n);
	return zv_fid_store(dirfd, path, flags, &host, &r);
}

static long do_mknod(struct zv_call *call, const struct zv_creds *cred, int dirfd, const char *path, uint32_t mode,
		     uint32_t dev)
{
	struct zv_creds own = *cred;
	const struct zv_creds *c = &own;
	int sgid = zv_fid_setgid_dir(dirfd, (uint64_t)path, &own.fsgid);
	uint32_t type = mode & S_IFMT;
	long *a = call->a, b[6];
	int mi = call->nr == __NR_mknod ? 1 : 2;
	for (int i = 0; i < 6; i++)
		b[i] = a[i];
	struct zv_fid_rec node = { 0, 0, type, zv_dev_major(dev), zv_dev_minor(dev) };
	uint32_t lacks = zv_fid_keep_bits(c, S_IFREG) & ~mode;
	if (type == S_IFCHR || type == S_IFBLK) {
		if (!zv_fid_capable(c, CAP_MKNOD)) {
			struct zv_fid_stat st;
			return zv_fid_fstatat(dirfd, path, AT_SYMLINK_NOFOLLOW, &st) == 0 ? -EEXIST : -EPERM;
		}
		b[mi] = (long)(S_IFREG | (mode & 07777) | lacks); /* an empty file in its place */
		b[mi + 1] = 0;
	} else if (type == 0 || type == S_IFREG || type == S_IFIFO || type == S_IFSOCK) {
		b[mi] = (long)(mode | lacks);
		if (!lacks && !sgid && c->fsuid == zv_fid.uid && c->fsgid == zv_fid.gid)
			return zv_next(call);
	} else {
		return zv_next(call); /* EINVAL, or EPERM for a directory, from the host */
	}
	long r = zv_next_with(call, b);
	if (r < 0)
		return r;
	zv_fid_created(c, dirfd, path, AT_SYMLINK_NOFOLLOW, lacks, 0, type == S_IFCHR || type == S_IFBLK ? &node : NULL);
	return r;
}

/* An *at call's path: NULL with AT_EMPTY_PATH is the fd itself (Linux
 * 6.11); NULL without it is the host's EFAULT. */
static const char *at_path(const char *p, long flags)
{
	return p || !(flags & AT_EMPTY_PATH) ? p : "";
}

/* fchown's and fchmod's fd must not be O_PATH (fstat takes one). */
static long plain_fd(int fd)
{
	long fl = zv_sys2(__NR_fcntl, fd, F_GETFL);
	return fl < 0 ? fl : (fl & O_PATH) ? -EBADF : 0;
}

long zv_fid_own_call(struct zv_call *call)
{
	const struct zv_creds *c = &call->t->cred;
	const long *a = call->a;
	const char *p0 = (const char *)a[0], *p1 = (const char *)a[1];
	long e;
	switch (call->nr) {
	case __NR_chown: return do_chown(c, AT_FDCWD, p0, (uint32_t)a[1], (uint32_t)a[2], 0);
	case __NR_lchown: return do_chown(c, AT_FDCWD, p0, (uint32_t)a[1], (uint32_t)a[2], AT_SYMLINK_NOFOLLOW);
	case __NR_fchown:
		if ((e = plain_fd((int)a[0])) < 0)
			return e;
		return do_chown(c, (int)a[0], "", (uint32_t)a[1], (uint32_t)a[2], AT_EMPTY_PATH);
	case __NR_fchownat:
		if (a[4] & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
			return -EINVAL;
		return do_chown(c, (int)a[0], at_path(p1, a[4]), (uint32_t)a[2], (uint32_t)a[3], (int)a[4]);
	case __NR_chmod: return do_chmod(c, call->nr, AT_FDCWD, p0, (uint32_t)a[1], 0);
	case __NR_fchmod:
		if ((e = plain_fd((int)a[0])) < 0)
			return e;
		return do_chmod(c, call->nr, (int)a[0], "", (uint32_t)a[1], AT_EMPTY_PATH);
	case __NR_fchmodat: return do_chmod(c, call->nr, (int)a[0], p1, (uint32_t)a[2], 0);
	case NR_fchmodat2:
		if (a[3] & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
			return -EINVAL;
		return do_chmod(c, call->nr, (int)a[0], at_path(p1, a[3]), (uint32_t)a[2], (int)a[3]);
	case __NR_mknod: return do_mknod(call, c, AT_FDCWD, p0, (uint32_t)a[1], (uint32_t)a[2]);
	default: return do_mknod(call, c, (int)a[0], p1, (uint32_t)a[2], (uint32_t)a[3]);
	}
}
