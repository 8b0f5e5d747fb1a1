/* unlink, rmdir and rename: a record in the database goes with the file's
 * last link, so that a new file the host gives the same inode number does
 * not inherit it. (An extended attribute goes with its inode by nature;
 * so do hard links and renames, which keep the inode.) Nothing is added
 * while the database is empty. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include <linux/fcntl.h>
#include <linux/stat.h>

#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2

long zv_fid_name_call(struct zv_call *call)
{
	if (zv_fid_db_empty())
		return zv_next(call);
	const long *a = call->a;
	int dirfd = AT_FDCWD;
	const char *path;
	switch (call->nr) {
	case __NR_unlink: case __NR_rmdir: path = (const char *)a[0]; break;
	case __NR_unlinkat: dirfd = (int)a[0], path = (const char *)a[1]; break;
	case __NR_rename: path = (const char *)a[1]; break;
	case __NR_renameat: dirfd = (int)a[2], path = (const char *)a[3]; break;
	default: /* renameat2 */
		if (a[4] & (RENAME_NOREPLACE | RENAME_EXCHANGE))
			return zv_next(call); /* nothing is replaced */
		dirfd = (int)a[2], path = (const char *)a[3];
		break;
	}
	struct zv_fid_stat s;
	struct zv_fid_rec r;
	if (zv_fid_fstatat(dirfd, path, AT_SYMLINK_NOFOLLOW, &s) < 0 ||
	    ((s.mode & S_IFMT) != S_IFDIR && s.nlink > 1) || !zv_fid_db_get(s.dev, s.ino, &r))
		return zv_next(call);
	long ret = zv_next(call);
	if (ret == 0)
		zv_fid_db_put(s.dev, s.ino, NULL);
	return ret;
}
