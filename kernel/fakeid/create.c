/* New files: natively they belong to the creator's fsuid and fsgid and get
 * the mode asked for (less the umask). The host makes them its user's,
 * which the view shows as the start identity; a file made under other fs
 * ids gets a record. A fake root (CAP_DAC_OVERRIDE) makes them with the
 * owner's read and write bits (and search, for a directory) on the host,
 * so that it can go on using them as real root would, and a record keeps
 * the mode asked for. Nothing more is done, and no host call added, when
 * neither applies. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>
#include <linux/stat.h>

/* The bits a fake root adds to a new file's mode on the host. */
uint32_t zv_fid_keep_bits(const struct zv_creds *c, uint32_t type)
{
	if (!zv_fid_capable(c, CAP_DAC_OVERRIDE))
		return 0;
	return type == S_IFDIR ? 0700 : type == S_IFLNK ? 0 : 0600;
}

/* The file just made at (dirfd, path, flags) by a call that asked for
 * mode and got lacks more on the host: its record, with the bits adds.
 * dev: a device node's type and number in place of the host's regular
 * file, or NULL. */
long zv_fid_created(const struct zv_creds *c, int dirfd, const char *path, int flags, uint32_t lacks,
		    uint32_t adds, const struct zv_fid_rec *dev)
{
	struct zv_fid_stat host;
	long e = zv_fid_fstatat(dirfd, path, flags, &host);
	if (e < 0)
		return e;
	struct zv_fid_rec r = { c->fsuid, c->fsgid, (host.mode & S_IFMT) | (((host.mode & 07777) & ~lacks) | adds), 0, 0 };
	if (dev) {
		r.mode = (dev->mode & S_IFMT) | (r.mode & 07777);
		r.major = dev->major;
		r.minor = dev->minor;
	}
	return zv_fid_store(dirfd, path, flags, &host, &r);
}

/* Whether the directory that a file made at (dirfd, path) goes into is
 * set-gid as the view shows it, and its group (*gid). Natively the new
 * file takes that group, and a new directory the set-gid bit too; the host
 * cannot do it when the group is the record's alone. One host stat of the
 * parent per file made; its record is read only when the host's bit is
 * set (chmod sets a directory's bit on the host too: owncalls.c). */
int zv_fid_setgid_dir(int dirfd, uint64_t path, uint32_t *gid)
{
	char p[4096];
	size_t n = 0;
	for (;;) { /* the path, in pieces that do not cross a page */
		if (n == sizeof p)
			return 0;
		size_t piece = 4096 - ((path + n) & 4095);
		if (piece > sizeof p - n)
			piece = sizeof p - n;
		if (zv_fid_arg_copy(p + n, path + n, piece) < 0)
			return 0;
		size_t got = 0;
		while (got < piece && p[n + got])
			got++;
		if (got < piece)
			break;
		n += piece;
	}
	size_t cut = zv_strlen(p);
	while (cut > 1 && p[cut - 1] == '/')
		cut--;
	while (cut > 0 && p[cut - 1] != '/')
		cut--;
	int flags = 0;
	if (!cut) {
		flags = AT_EMPTY_PATH; /* (dirfd itself, or the cwd) */
	} else {
		while (cut > 1 && p[cut - 1] == '/')
			cut--;
		p[cut] = 0;
	}
	struct zv_fid_stat s;
	if (zv_fid_fstatat(dirfd, cut ? p : "", flags, &s) < 0 || !(s.mode & S_ISGID))
		return 0;
	zv_fid_view(dirfd, cut ? p : "", flags, &s);
	if ((s.mode & S_IFMT) != S_IFDIR || !(s.mode & S_ISGID))
		return 0;
	*gid = s.gid;
	return 1;
}

/* Whether a file made by c with mode and the bits lacks added needs a
 * record (set-id bits: zv_fid_rec_needed). */
static int needs_record(const struct zv_creds *c, uint32_t type, uint32_t mode, uint32_t lacks)
{
	return lacks || c->fsuid != zv_fid.uid || c->fsgid != zv_fid.gid ||
	       (type == S_IFREG && (mode & (S_ISUID | S_ISGID)));
}

/* O_NOATIME is for the file's owner or CAP_FOWNER (may_open), where the
 * host's owner is the user: EPERM for an existing file another identity
 * owns, before the open (its O_TRUNC) happens; 0 to go on. */
static long noatime(const struct zv_creds *c, int dirfd, const char *path, int oflags)
{
	struct zv_fid_stat s;
	if (!(oflags & O_NOATIME) || zv_fid_capable(c, CAP_FOWNER) || !path ||
	    zv_fid_fstatat(dirfd, path, (oflags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0, &s) < 0)
		return 0;
	zv_fid_view(dirfd, path, (oflags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0, &s);
	return s.uid != c->fsuid ? -EPERM : 0;
}

long zv_fid_create_call(struct zv_call *call)
{
	struct zv_creds own = call->t->cred;
	const struct zv_creds *c = &own;
	long a[6];
	memcpy(a, call->a, sizeof a);
	int dirfd = AT_FDCWD, pi = 0, mi = -1, oflags = O_CREAT | O_EXCL;
	uint32_t type = S_IFREG;
	struct open_how how;
	switch (call->nr) {
	case __NR_open: pi = 0, oflags = (int)a[1], mi = 2; break;
	case __NR_creat: pi = 0, mi = 1, oflags = O_CREAT; break;
	case __NR_openat: dirfd = (int)a[0], pi = 1, oflags = (int)a[2], mi = 3; break;
	case __NR_openat2:
		if ((size_t)a[3] < sizeof how || zv_fid_arg_copy(&how, (uint64_t)a[2], sizeof how) < 0)
			return zv_next(call); /* the host's errno */
		dirfd = (int)a[0], pi = 1, oflags = (int)how.flags;
		break;
	case __NR_mkdir: pi = 0, mi = 1, type = S_IFDIR; break;
	case __NR_mkdirat: dirfd = (int)a[0], pi = 1, mi = 2, type = S_IFDIR; break;
	case __NR_symlink: pi = 1, type = S_IFLNK; break;
	default: /* symlinkat */ dirfd = (int)a[1], pi = 2, type = S_IFLNK; break;
	}
	int tmpfile = (oflags & O_TMPFILE) == O_TMPFILE;
	long e = type == S_IFREG && !tmpfile ? noatime(c, dirfd, (const char *)a[pi], oflags) : 0;
	if (e < 0)
		return e;
	if (type == S_IFREG && !(oflags & O_CREAT) && !tmpfile)
		return zv_next(call);
	uint32_t mode = call->nr == __NR_openat2 ? (uint32_t)how.mode : mi >= 0 ? (uint32_t)a[mi] : 0777;
	uint32_t lacks = zv_fid_keep_bits(c, type) & ~mode, adds = 0;
	if (!tmpfile && zv_fid_setgid_dir(dirfd, (uint64_t)a[pi], &own.fsgid))
		adds = type == S_IFDIR ? S_ISGID : 0;
	if (!needs_record(c, type, mode, lacks) && !adds)
		return zv_next(call);
	const char *path = (const char *)a[pi];
	struct zv_fid_stat old;
	int existed = type == S_IFREG && !tmpfile && !(oflags & O_EXCL) && zv_fid_fstatat(dirfd, path, 0, &old) == 0;
	if (existed)
		; /* open leaves an existing file's mode and owner */
	else if (call->nr == __NR_openat2 && (size_t)a[3] == sizeof how)
		how.mode |= lacks, a[2] = (long)&how;
	else if (mi >= 0)
		a[mi] = (long)(mode | lacks);
	else
		lacks = 0;
	long r = zv_next_with(call, a);
	if (r < 0 || existed)
		return r;
	if (type == S_IFREG)
		zv_fid_created(c, (int)r, "", AT_EMPTY_PATH, lacks, 0, NULL);
	else
		zv_fid_created(c, dirfd, path, AT_SYMLINK_NOFOLLOW, lacks, adds, NULL);
	return r;
}
