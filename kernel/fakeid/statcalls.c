/* stat, lstat, fstat, newfstatat and statx: the host's answer, with the
 * owner, mode and device number of the file's record (or the host's owner
 * through the id map; a hosted process's /proc entries, procowner.c). The record is read through the same fd or path the
 * call named: one host call more for a regular file or directory (its
 * xattr), none for the others (the database is memory). */
#include "fakeid/fakeid.h"
#include "sys/layer.h"
#include <linux/fcntl.h>
#include <linux/stat.h>

/* The host's struct stat on x86-64: the fields the view reads or changes. */
struct kstat_head {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	uint64_t atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns;
};

/* As the host encodes a device number in struct stat (new_encode_dev). */
static uint64_t encode(uint32_t major, uint32_t minor)
{
	return (minor & 0xff) | ((uint64_t)major << 8) | ((uint64_t)(minor & ~0xffu) << 12);
}

static void patch_stat(int dirfd, const char *path, int flags, struct kstat_head *st)
{
	uint64_t rdev = zv_fid_dev(st->rdev);
	struct zv_fid_stat s = { zv_fid_dev(st->dev), st->ino, st->mode, st->uid, st->gid, (uint32_t)st->nlink,
				 (uint32_t)(rdev >> 32), (uint32_t)rdev, st->ctime * 1000000000UL + st->ctime_ns };
	zv_fid_view(dirfd, path, flags, &s);
	zv_fid_proc_owner(dirfd, path, flags, &s);
	st->mode = s.mode;
	st->uid = s.uid;
	st->gid = s.gid;
	if ((uint32_t)(rdev >> 32) != s.rmajor || (uint32_t)rdev != s.rminor)
		st->rdev = encode(s.rmajor, s.rminor);
}

static void patch_statx(int dirfd, const char *path, int flags, struct statx *sx)
{
	uint32_t m = sx->stx_mask;
	if (!(m & STATX_INO) || !(m & (STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID)))
		return;
	struct zv_fid_stat s = { (uint64_t)sx->stx_dev_major << 32 | sx->stx_dev_minor, sx->stx_ino, sx->stx_mode,
				 sx->stx_uid, sx->stx_gid, sx->stx_nlink, sx->stx_rdev_major, sx->stx_rdev_minor,
				 (m & STATX_CTIME) ? sx->stx_ctime.tv_sec * 1000000000UL + sx->stx_ctime.tv_nsec : ~0UL };
	zv_fid_view(dirfd, path, flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH), &s);
	zv_fid_proc_owner(dirfd, path, flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH), &s);
	if (m & STATX_TYPE)
		sx->stx_mode = (uint16_t)((sx->stx_mode & ~S_IFMT) | (s.mode & S_IFMT));
	if (m & STATX_MODE)
		sx->stx_mode = (uint16_t)((sx->stx_mode & S_IFMT) | (s.mode & 07777));
	if (m & STATX_UID)
		sx->stx_uid = s.uid;
	if (m & STATX_GID)
		sx->stx_gid = s.gid;
	sx->stx_rdev_major = s.rmajor;
	sx->stx_rdev_minor = s.rminor;
}

long zv_fid_stat_call(struct zv_call *c)
{
	long r = zv_next(c);
	if (r < 0)
		return r;
	const long *a = c->a;
	switch (c->nr) {
	case __NR_stat:
		patch_stat(AT_FDCWD, (const char *)a[0], 0, (struct kstat_head *)a[1]);
		break;
	case __NR_lstat:
		patch_stat(AT_FDCWD, (const char *)a[0], AT_SYMLINK_NOFOLLOW, (struct kstat_head *)a[1]);
		break;
	case __NR_fstat:
		patch_stat((int)a[0], "", AT_EMPTY_PATH, (struct kstat_head *)a[1]);
		break;
	case __NR_newfstatat: {
		const char *p = (const char *)a[1];
		patch_stat((int)a[0], p ? p : "", (int)a[3], (struct kstat_head *)a[2]);
		break;
	}
	case __NR_statx: {
		const char *p = (const char *)a[1];
		patch_statx((int)a[0], p ? p : "", (int)a[2], (struct statx *)a[4]);
		break;
	}
	}
	return r;
}
