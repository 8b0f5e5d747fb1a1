/* The host kernel's rules for changing credentials (kernel/sys.c,
 * kernel/groups.c, security/commoncap.c), applied to a virtual struct
 * zv_cred: who may set which ids, what a uid change does to the
 * capabilities, what capset and the capability prctls allow, and what an
 * exec makes of them. Pure functions: the calls' handlers (idcalls.c)
 * copy to and from the guest. */
#include "fakeid/fakeid.h"
#include <linux/errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <linux/prctl.h>

#define NONE 0xffffffffu /* (uid_t)-1: "unchanged", never an id */
#define BIT(c) (1ULL << (c))
/* The capabilities a change of fsuid from or to 0 drops or raises. */
#define CAP_FS_SET (BIT(CAP_CHOWN) | BIT(CAP_MKNOD) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH) | \
		    BIT(CAP_FOWNER) | BIT(CAP_FSETID) | BIT(CAP_LINUX_IMMUTABLE) | BIT(CAP_MAC_OVERRIDE))

int zv_fid_capable(const struct zv_cred *c, int cap)
{
	return (c->cap_eff >> cap) & 1;
}

int zv_fid_in_group(const struct zv_cred *c, uint32_t gid)
{
	if (gid == c->fsgid)
		return 1;
	for (uint32_t i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return 1;
	return 0;
}

/* What a change of uids from old to c does to the capabilities, unless
 * SECBIT_NO_SETUID_FIXUP (cap_emulate_setxuid and the fsuid rule). */
static void fix_caps(struct zv_cred *c, const struct zv_cred *old, int fs_only)
{
	if (old->securebits & SECBIT_NO_SETUID_FIXUP)
		return;
	if (!fs_only) {
		int had_root = !old->uid || !old->euid || !old->suid;
		int has_root = !c->uid || !c->euid || !c->suid;
		if (had_root && !has_root) {
			if (!(old->securebits & SECBIT_KEEP_CAPS))
				c->cap_prm = c->cap_eff = 0;
			c->cap_amb = 0;
		}
		if (!old->euid && c->euid)
			c->cap_eff = 0;
		if (old->euid && !c->euid)
			c->cap_eff = c->cap_prm;
	}
	if (!old->fsuid && c->fsuid)
		c->cap_eff &= ~CAP_FS_SET;
	if (old->fsuid && !c->fsuid)
		c->cap_eff |= c->cap_prm & CAP_FS_SET;
}

long zv_fid_setuid(struct zv_cred *c, uint32_t uid)
{
	if (uid == NONE)
		return -EINVAL;
	struct zv_cred old = *c;
	if (zv_fid_capable(c, CAP_SETUID))
		c->uid = c->suid = uid;
	else if (uid != c->uid && uid != c->suid)
		return -EPERM;
	c->euid = c->fsuid = uid;
	fix_caps(c, &old, 0);
	return 0;
}

long zv_fid_setreuid(struct zv_cred *c, uint32_t r, uint32_t e)
{
	struct zv_cred old = *c;
	int cap = zv_fid_capable(c, CAP_SETUID);
	if (r != NONE && r != old.uid && r != old.euid && !cap)
		return -EPERM;
	if (e != NONE && e != old.uid && e != old.euid && e != old.suid && !cap)
		return -EPERM;
	if (r != NONE)
		c->uid = r;
	if (e != NONE)
		c->euid = e;
	if (r != NONE || (e != NONE && e != old.uid))
		c->suid = c->euid;
	c->fsuid = c->euid;
	fix_caps(c, &old, 0);
	return 0;
}

static int is_new(uint32_t id, uint32_t a, uint32_t b, uint32_t c)
{
	return id != NONE && id != a && id != b && id != c;
}

long zv_fid_setresuid(struct zv_cred *c, uint32_t r, uint32_t e, uint32_t s)
{
	struct zv_cred old = *c;
	if ((r == NONE || r == old.uid) && (e == NONE || (e == old.euid && e == old.fsuid)) &&
	    (s == NONE || s == old.suid))
		return 0;
	if ((is_new(r, old.uid, old.euid, old.suid) || is_new(e, old.uid, old.euid, old.suid) ||
	     is_new(s, old.uid, old.euid, old.suid)) && !zv_fid_capable(c, CAP_SETUID))
		return -EPERM;
	if (r != NONE)
		c->uid = r;
	if (e != NONE)
		c->euid = e;
	if (s != NONE)
		c->suid = s;
	c->fsuid = c->euid;
	fix_caps(c, &old, 0);
	return 0;
}

/* Returns the old fsuid, whether or not it changed. */
long zv_fid_setfsuid(struct zv_cred *c, uint32_t fs)
{
	struct zv_cred old = *c;
	if (fs == NONE)
		return old.fsuid;
	if ((fs == c->uid || fs == c->euid || fs == c->suid || fs == c->fsuid || zv_fid_capable(c, CAP_SETUID)) &&
	    fs != c->fsuid) {
		c->fsuid = fs;
		fix_caps(c, &old, 1);
	}
	return old.fsuid;
}

long zv_fid_setgid(struct zv_cred *c, uint32_t gid)
{
	if (gid == NONE)
		return -EINVAL;
	if (zv_fid_capable(c, CAP_SETGID))
		c->gid = c->sgid = gid;
	else if (gid != c->gid && gid != c->sgid)
		return -EPERM;
	c->egid = c->fsgid = gid;
	return 0;
}

long zv_fid_setregid(struct zv_cred *c, uint32_t r, uint32_t e)
{
	struct zv_cred old = *c;
	int cap = zv_fid_capable(c, CAP_SETGID);
	if (r != NONE && r != old.gid && r != old.egid && !cap)
		return -EPERM;
	if (e != NONE && e != old.gid && e != old.egid && e != old.sgid && !cap)
		return -EPERM;
	if (r != NONE)
		c->gid = r;
	if (e != NONE)
		c->egid = e;
	if (r != NONE || (e != NONE && e != old.gid))
		c->sgid = c->egid;
	c->fsgid = c->egid;
	return 0;
}

long zv_fid_setresgid(struct zv_cred *c, uint32_t r, uint32_t e, uint32_t s)
{
	struct zv_cred old = *c;
	if ((r == NONE || r == old.gid) && (e == NONE || (e == old.egid && e == old.fsgid)) &&
	    (s == NONE || s == old.sgid))
		return 0;
	if ((is_new(r, old.gid, old.egid, old.sgid) || is_new(e, old.gid, old.egid, old.sgid) ||
	     is_new(s, old.gid, old.egid, old.sgid)) && !zv_fid_capable(c, CAP_SETGID))
		return -EPERM;
	if (r != NONE)
		c->gid = r;
	if (e != NONE)
		c->egid = e;
	if (s != NONE)
		c->sgid = s;
	c->fsgid = c->egid;
	return 0;
}

long zv_fid_setfsgid(struct zv_cred *c, uint32_t fs)
{
	uint32_t old = c->fsgid;
	if (fs == NONE)
		return old;
	if (fs == c->gid || fs == c->egid || fs == c->sgid || fs == c->fsgid || zv_fid_capable(c, CAP_SETGID))
		c->fsgid = fs;
	return old;
}

/* The list sorted, as the host keeps it (groups_sort). */
void zv_fid_set_groups(struct zv_cred *c, const uint32_t *g, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = g[i], j = i;
		for (; j > 0 && c->groups[j - 1] > v; j--)
			c->groups[j] = c->groups[j - 1];
		c->groups[j] = v;
	}
	c->ngroups = n;
}

long zv_fid_capset(struct zv_cred *c, uint64_t eff, uint64_t prm, uint64_t inh)
{
	if (!zv_fid_capable(c, CAP_SETPCAP) && (inh & ~(c->cap_inh | c->cap_prm)))
		return -EPERM;
	if (inh & ~(c->cap_inh | c->cap_bnd))
		return -EPERM;
	if (prm & ~c->cap_prm)
		return -EPERM;
	if (eff & ~prm)
		return -EPERM;
	c->cap_eff = eff;
	c->cap_prm = prm;
	c->cap_inh = inh;
	c->cap_amb &= prm & inh;
	return 0;
}

/* The prctls of capabilities and securebits; -ENOSYS for other options. */
long zv_fid_prctl(struct zv_cred *c, long op, unsigned long a2, unsigned long a3, unsigned long a4,
		  unsigned long a5)
{
	int valid = a2 <= (unsigned long)zv_fid.last_cap;
	const uint64_t all_bits = SECURE_ALL_BITS, all_locks = SECURE_ALL_LOCKS;
	switch (op) {
	case PR_CAPBSET_READ:
		return valid ? (long)((c->cap_bnd >> a2) & 1) : -EINVAL;
	case PR_CAPBSET_DROP:
		if (!zv_fid_capable(c, CAP_SETPCAP))
			return -EPERM;
		if (!valid)
			return -EINVAL;
		c->cap_bnd &= ~BIT(a2);
		return 0;
	case PR_GET_KEEPCAPS:
		return (c->securebits & SECBIT_KEEP_CAPS) != 0;
	case PR_SET_KEEPCAPS:
		if (a2 > 1)
			return -EINVAL;
		if (c->securebits & SECBIT_KEEP_CAPS_LOCKED)
			return -EPERM;
		c->securebits = a2 ? c->securebits | SECBIT_KEEP_CAPS : c->securebits & ~SECBIT_KEEP_CAPS;
		return 0;
	case PR_GET_SECUREBITS:
		return c->securebits;
	case PR_SET_SECUREBITS:
		if ((((c->securebits & all_locks) >> 1) & (c->securebits ^ a2)) || (c->securebits & all_locks & ~a2) ||
		    (a2 & ~(all_locks | all_bits)) || !zv_fid_capable(c, CAP_SETPCAP))
			return -EPERM;
		c->securebits = (uint32_t)a2;
		return 0;
	case PR_CAP_AMBIENT:
		if (a2 == PR_CAP_AMBIENT_CLEAR_ALL) {
			if (a3 | a4 | a5)
				return -EINVAL;
			c->cap_amb = 0;
			return 0;
		}
		if (a3 > (unsigned long)zv_fid.last_cap || a4 || a5)
			return -EINVAL;
		if (a2 == PR_CAP_AMBIENT_IS_SET)
			return (c->cap_amb >> a3) & 1;
		if (a2 == PR_CAP_AMBIENT_LOWER) {
			c->cap_amb &= ~BIT(a3);
			return 0;
		}
		if (a2 != PR_CAP_AMBIENT_RAISE)
			return -EINVAL;
		if (!((c->cap_prm >> a3) & 1) || !((c->cap_inh >> a3) & 1) ||
		    (c->securebits & SECBIT_NO_CAP_AMBIENT_RAISE))
			return -EPERM;
		c->cap_amb |= BIT(a3);
		return 0;
	default:
		return -ENOSYS;
	}
}

/* An exec of a file with mode (virtual), owned by uid:gid; suid_ok,
 * sgid_ok: the set-user-ID and set-group-ID bits may apply (no nosuid
 * mount, no no_new_privs, an owner the id map knows). Returns AT_SECURE.
 * Files carry no capabilities here. */
int zv_fid_exec(struct zv_cred *c, uint32_t mode, uint32_t uid, uint32_t gid, int suid_ok, int sgid_ok)
{
	struct zv_cred old = *c;
	if (suid_ok && (mode & 04000))
		c->euid = uid;
	if (sgid_ok && (mode & 02010) == 02010)
		c->egid = gid;
	int effective = 0;
	uint64_t prm = 0;
	if (!(old.securebits & SECBIT_NOROOT) && (!c->uid || !c->euid)) {
		prm = old.cap_bnd | old.cap_inh;
		effective = !c->euid;
	}
	int is_setid = c->euid != old.uid || c->egid != old.gid;
	c->suid = c->fsuid = c->euid;
	c->sgid = c->fsgid = c->egid;
	if (is_setid)
		c->cap_amb = 0;
	c->cap_prm = prm | c->cap_amb;
	c->cap_eff = effective ? c->cap_prm : c->cap_amb;
	c->securebits &= ~SECBIT_KEEP_CAPS;
	int grew = (c->cap_prm & ~c->cap_amb) != 0;
	return is_setid || (c->uid && (effective || grew));
}
