/* A new image's credentials as exec makes them. A set-user-ID or
 * set-group-ID program always reaches the host's execve, which runs zvisor,
 * a file without such bits: the ids the program's file would give are
 * taken here with the host's own setresgid and setresuid, which allow what
 * a privileged (or owner-matching) caller may take. Natively exec takes
 * them whoever calls; where the host refuses here (an unprivileged caller
 * and another owner), the program runs with the caller's ids, as under
 * no_new_privs. Virtual ids (fakeid) compute their own. */
#include "zvisor.h"
#include "sys/setid.h"
#include "lib/syscall.h"
#include <linux/prctl.h>
#include <linux/auxvec.h>
#include <sys/stat.h>

int zv_setid_secure, zv_setid_host_image;

/* Whether this process's effective ids differ from its real ones, as the
 * last image the host exec'd found them (its auxv) or set them (a set-id
 * file): an exec made in the process follows only an image whose ids did
 * not change since (a change sends the exec to the host: sys/exec_note.c),
 * so it takes this without asking the host again. A fork child has it. */
static int ids_known, ids_secure;

static uint64_t host_aux(uint64_t type)
{
	for (const uint64_t *a = zv_proc.host_auxv; a[0] != AT_NULL; a += 2)
		if (a[0] == type)
			return a[1];
	return ~0UL;
}

static void take_file_ids(const char *elf)
{
	struct stat st;
	if (zv_sys4(__NR_newfstatat, -100 /* AT_FDCWD */, elf, &st, 0) < 0 || !(st.st_mode & (S_ISUID | S_ISGID)))
		return;
	struct { uint64_t type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags, spare[4]; } fs;
	if (zv_sys2(__NR_statfs, elf, &fs) < 0 || (fs.flags & 2 /* ST_NOSUID */) ||
	    zv_sys2(__NR_prctl, PR_GET_NO_NEW_PRIVS, 0) == 1)
		return;
	/* group first: after the uid changes, the gid may no longer be ours to take */
	if ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		zv_sys3(__NR_setresgid, -1, st.st_gid, st.st_gid);
	if (st.st_mode & S_ISUID)
		zv_sys3(__NR_setresuid, -1, st.st_uid, st.st_uid);
}

void zv_setid_image(struct zv_thread *t, const char *elf)
{
	zv_setid_secure = 0;
	if (zv_proc.cred_virtual)
		return;
	if (zv_setid_host_image) { /* set-id files never stay in the process (sys/exec.c) */
		int setid = zv_setid_host_image == ZV_SETID_HOST_FILE;
		zv_setid_host_image = 0;
		if (!setid) { /* the host's own exec: its auxv's AT_SECURE and ids are this image's */
			uint64_t uid = host_aux(AT_UID), euid = host_aux(AT_EUID), gid = host_aux(AT_GID), egid = host_aux(AT_EGID);
			ids_known = uid != ~0UL && euid != ~0UL && gid != ~0UL && egid != ~0UL;
			ids_secure = euid != uid || egid != gid;
			return;
		}
		take_file_ids(elf);
		t->cred_valid = 0;
	}
	uint32_t r[3], g[3];
	if (t->cred_valid) { /* an exec made in the process: no set-id file, the ids known */
		r[0] = t->cred.uid, r[1] = t->cred.euid, g[0] = t->cred.gid, g[1] = t->cred.egid;
	} else if (ids_known && !zv_proc.no_cred_cache && !(zv_proc.exec_needs_host & ZV_EXEC_NEEDS_HOST_CREDS)) {
		zv_setid_secure = ids_secure;
		return;
	} else if (zv_sys3(__NR_getresuid, &r[0], &r[1], &r[2]) < 0 ||
		   zv_sys3(__NR_getresgid, &g[0], &g[1], &g[2]) < 0) {
		return;
	}
	/* the host's secure exec (is_setid): effective ids other than the real */
	zv_setid_secure = r[1] != r[0] || g[1] != g[0];
	ids_known = !zv_proc.no_cred_cache;
	ids_secure = zv_setid_secure;
}
