/* A set-user-ID or set-group-ID program the host exec'd: the host ran
 * zvisor, whose file has no such bits, so the credentials the program's
 * file would give are applied here, with the host's own setresuid and
 * setresgid, which allow exactly what a privileged (or owner-matching)
 * caller may take. Natively exec takes them whoever calls; where the host
 * refuses here (an unprivileged caller and another owner), the program
 * runs with the caller's ids, as under no_new_privs. Virtual ids
 * (fakeid) compute their own. AT_SECURE, AT_EUID and AT_EGID follow. */
#include "zvisor.h"
#include "sys/setid.h"
#include "lib/syscall.h"
#include <linux/prctl.h>
#include <sys/stat.h>

int zv_setid_secure;

void zv_setid_image(const char *elf)
{
	if (zv_proc.cred_virtual)
		return;
	struct stat st;
	if (zv_sys4(__NR_newfstatat, -100 /* AT_FDCWD */, elf, &st, 0) < 0 || !(st.st_mode & (S_ISUID | S_ISGID)))
		return;
	struct { uint64_t type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags, spare[4]; } fs;
	if (zv_sys2(__NR_statfs, elf, &fs) < 0 || (fs.flags & 2 /* ST_NOSUID */))
		return;
	if (zv_sys2(__NR_prctl, PR_GET_NO_NEW_PRIVS, 0) == 1)
		return;
	/* group first: after the uid changes, the gid may no longer be ours to take */
	if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		zv_sys3(__NR_setresgid, -1, st.st_gid, st.st_gid);
	if (st.st_mode & S_ISUID)
		zv_sys3(__NR_setresuid, -1, st.st_uid, st.st_uid);
	zv_setid_secure = zv_sys0(__NR_getuid) != zv_sys0(__NR_geteuid) ||
			  zv_sys0(__NR_getgid) != zv_sys0(__NR_getegid);
}
