/* A file's record wherever it is kept: in its extended attribute when the
 * file can hold one (a regular file or directory, on a filesystem with
 * user xattrs, writable by the host user), else in the database. A lookup
 * asks the attribute first (one host call, on the fd or path the stat
 * itself used) and the database, in memory, after. A record that gives a
 * regular file another type is in the database as well, for getdents. */
#include "fakeid/fakeid.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/fcntl.h>
#include <linux/stat.h>

/* The host's struct stat on x86-64. */
struct kstat {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	uint64_t times[6], unused[3];
};

/* A device number as struct stat encodes it, as major << 32 | minor. */
uint64_t zv_fid_dev(uint64_t d)
{
	uint64_t major = ((d >> 8) & 0xfff) | ((d >> 32) & ~0xfffUL);
	uint64_t minor = (d & 0xff) | ((d >> 12) & ~0xffUL);
	return major << 32 | (minor & 0xffffffff);
}

/* The host's stat of (dirfd, path, flags) in the shared form. */
long zv_fid_fstatat(int dirfd, const char *path, int flags, struct zv_fid_stat *s)
{
	struct kstat st;
	long r = zv_sys4(__NR_newfstatat, dirfd, path, &st, flags);
	if (r < 0)
		return r;
	*s = (struct zv_fid_stat){ zv_fid_dev(st.dev), st.ino, st.mode, st.uid, st.gid, (uint32_t)st.nlink,
				   (uint32_t)(zv_fid_dev(st.rdev) >> 32), (uint32_t)zv_fid_dev(st.rdev),
				   st.times[4] * 1000000000UL + st.times[5] };
	return 0;
}

/* Whether files of s's type can hold a user xattr (Linux allows them on
 * regular files and directories only), on a filesystem that has them. */
static int xattr_capable(const struct zv_fid_stat *s)
{
	uint32_t type = s->mode & S_IFMT;
	if (zv_fid.db_only || (type != S_IFREG && type != S_IFDIR))
		return 0;
	for (int i = 0; i < 8; i++)
		if (zv_fid.no_xattr_dev[i] == s->dev + 1)
			return 0;
	return 1;
}

static void no_xattrs_on(uint64_t dev)
{
	static int next;
	zv_fid.no_xattr_dev[next++ & 7] = dev + 1;
}

/* Whether the host user may read and write s's attribute: a user xattr
 * needs the file's read and write permission (the owner's bits, for the
 * user's own files; root needs none). A file whose owner lost either (a
 * non-root identity's chmod 0222 or 0444) keeps its record in the
 * database, asked first: the attribute would be unreadable or stale. */
static int attr_usable(const struct zv_fid_stat *s)
{
	return zv_fid.host_uid == 0 || s->uid != zv_fid.host_uid || (s->mode & 0600) == 0600;
}

int zv_fid_lookup(int dirfd, const char *path, int flags, const struct zv_fid_stat *s, struct zv_fid_rec *r)
{
	if (xattr_capable(s) && !attr_usable(s) && zv_fid_db_get(s->dev, s->ino, r))
		return 1;
	if (xattr_capable(s)) {
		int known = zv_fid_cache_get(s, r);
		if (known > 0)
			return 1;
		if (known < 0) {
			char buf[96];
			long n = zv_fid_xattr_get(dirfd, path, flags, buf, sizeof buf);
			int found = n >= 0 && zv_fid_rec_parse(buf, (size_t)n, r);
			if (n == -EOPNOTSUPP)
				no_xattrs_on(s->dev);
			else if (n >= 0 || n == -ENODATA)
				zv_fid_cache_put(s, found ? r : NULL);
			if (found)
				return 1;
		}
	}
	return zv_fid_db_get(s->dev, s->ino, r);
}

/* Whether r makes a device node, FIFO or socket of a regular file. */
static int type_changed(const struct zv_fid_rec *r)
{
	uint32_t t = r->mode & S_IFMT;
	return t == S_IFCHR || t == S_IFBLK || t == S_IFIFO || t == S_IFSOCK;
}

/* Keeps r (NULL: nothing) as the record of the file whose host stat is s;
 * a record that says no more than the host's stat is dropped instead. */
long zv_fid_store(int dirfd, const char *path, int flags, const struct zv_fid_stat *s, const struct zv_fid_rec *r)
{
	int usable = attr_usable(s);
	if (r && usable && !zv_fid_rec_needed(r, s))
		r = NULL; /* (kept otherwise: an old attribute may say more) */
	zv_fid_cache_drop(s);
	if (xattr_capable(s) && usable) {
		long e;
		if (r) {
			char buf[96];
			int n = zv_fid_rec_format(buf, sizeof buf, r);
			e = zv_fid_xattr_set(dirfd, path, flags, buf, (size_t)n);
		} else {
			e = zv_fid_xattr_remove(dirfd, path, flags);
			if (e == -ENODATA)
				e = 0;
		}
		if (e == 0) /* one place only, but for a type getdents must see */
			return zv_fid_db_put(s->dev, s->ino, r && type_changed(r) ? r : NULL);
		if (e == -EOPNOTSUPP)
			no_xattrs_on(s->dev);
		else if (e != -EPERM && e != -EACCES)
			return e; /* EROFS, ENOSPC, EDQUOT: as natively */
	}
	return zv_fid_db_put(s->dev, s->ino, r);
}

/* The view of the file the host's stat s describes: s patched. */
void zv_fid_view(int dirfd, const char *path, int flags, struct zv_fid_stat *s)
{
	struct zv_fid_rec r;
	zv_fid_apply(s, zv_fid_lookup(dirfd, path, flags, s, &r) ? &r : NULL);
}
