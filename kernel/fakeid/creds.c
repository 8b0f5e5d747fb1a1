/* The host kernel's rules for changing credentials (kernel/sys.c,
 * kernel/groups.c, security/commoncap.c), applied to a virtual struct
 * zv_creds: who may set which ids, what a uid change does to the
 * capabilities, what capset and the capability prctls allow, and what an
 * exec makes of them. Pure functions: the calls' handlers (idcalls.c)
 * copy to and from the guest. */
#include "fakeid/fakeid.h"
#include <linux/errno.h>
#include <linux/securebits.h>
#include <linux/prctl.h>

#define NONE 0xffffffffu /* (uid_t)-1: "unchanged", never an id */
#define BIT(c) (1ULL << (c))
/* The capabilities a change of fsuid from or to 0 drops or raises. */
#define CAP_FS_SET (BIT(CAP_CHOWN) | BIT(CAP_MKNOD) | BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH) | \
		    BIT(CAP_FOWNER) | BIT(CAP_FSETID) | BIT(CAP_LINUX_IMMUTABLE) | BIT(CAP_MAC_OVERRIDE))

int zv_fid_capable(const struct zv_creds *c, int cap)
{
	return (c->cap_eff >> cap) & 1;
}

int zv_fid_in_group(const struct zv_creds *c, uint32_t gid)
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
static void fix_caps(struct zv_creds *c, const struct zv_creds *old, int fs_only)
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

/* The uid calls and the gid calls follow the same rules on their four ids
 * (real, effective, saved, fs: consecutive in struct zv_creds), with
 * CAP_SETUID or CAP_SETGID; only uid changes move capabilities. */
enum { R, E, S, FS };

static uint32_t *ids_of(struct zv_creds *c, int gid)
{
	return gid ? &c->gid : &c->uid;
}

static int may(const struct zv_creds *c, int gid)
{
	return zv_fid_capable(c, gid ? CAP_SETGID : CAP_SETUID);
}

static long changed(struct zv_creds *c, const struct zv_creds *old, int gid)
{
	if (!gid)
		fix_caps(c, old, 0);
	return 0;
}

/* setuid, setgid */
long zv_fid_set_id(struct zv_creds *c, int gid, uint32_t v)
{
	uint32_t *id = ids_of(c, gid);
	if (v == NONE)
		return -EINVAL;
	struct zv_creds old = *c;
	if (may(c, gid))
		id[R] = id[S] = v;
	else if (v != id[R] && v != id[S])
		return -EPERM;
	id[E] = id[FS] = v;
	return changed(c, &old, gid);
}

static int is_new(uint32_t v, const uint32_t *o)
{
	return v != NONE && v != o[R] && v != o[E] && v != o[S];
}

/* setreuid, setregid */
long zv_fid_set_reid(struct zv_creds *c, int gid, uint32_t r, uint32_t e)
{
	uint32_t *id = ids_of(c, gid), o[3] = { id[R], id[E], id[S] };
	int cap = may(c, gid);
	if (r != NONE && r != o[R] && r != o[E] && !cap)
		return -EPERM;
	if (is_new(e, o) && !cap)
		return -EPERM;
	struct zv_creds old = *c;
	if (r != NONE)
		id[R] = r;
	if (e != NONE)
		id[E] = e;
	if (r != NONE || (e != NONE && e != o[R]))
		id[S] = id[E];
	id[FS] = id[E];
	return changed(c, &old, gid);
}

/* setresuid, setresgid */
long zv_fid_set_resid(struct zv_creds *c, int gid, uint32_t r, uint32_t e, uint32_t s)
{
	uint32_t *id = ids_of(c, gid);
	if ((r == NONE || r == id[R]) && (e == NONE || (e == id[E] && e == id[FS])) && (s == NONE || s == id[S]))
		return 0;
	if ((is_new(r, id) || is_new(e, id) || is_new(s, id)) && !may(c, gid))
		return -EPERM;
	struct zv_creds old = *c;
	if (r != NONE)
		id[R] = r;
	if (e != NONE)
		id[E] = e;
	if (s != NONE)
		id[S] = s;
	id[FS] = id[E];
	return changed(c, &old, gid);
}

/* setfsuid, setfsgid: the old fs id, whether or not it changed. */
long zv_fid_set_fsid(struct zv_creds *c, int gid, uint32_t fs)
{
	uint32_t *id = ids_of(c, gid), was = id[FS];
	if (fs == NONE || fs == was || !(fs == id[R] || fs == id[E] || fs == id[S] || may(c, gid)))
		return was;
	struct zv_creds old = *c;
	id[FS] = fs;
	if (!gid)
		fix_caps(c, &old, 1);
	return was;
}

/* The list sorted, as the host keeps it (groups_sort). */
void zv_fid_set_groups(struct zv_creds *c, const uint32_t *g, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = g[i], j = i;
		for (; j > 0 && c->groups[j - 1] > v; j--)
			c->groups[j] = c->groups[j - 1];
		c->groups[j] = v;
	}
	c->ngroups = n;
}

long zv_fid_capset(struct zv_creds *c, uint64_t eff, uint64_t prm, uint64_t inh)
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
long zv_fid_prctl(struct zv_creds *c, long op, unsigned long a2, unsigned long a3, unsigned long a4,
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

/* Whether a change from old to new makes the process as dumpable as the
 * host's fs.suid_dumpable says (commit_creds): its euid, egid, fsuid or
 * fsgid changed, or its permitted set grew. */
int zv_fid_dump_changed(const struct zv_creds *old, const struct zv_creds *new)
{
	return old->euid != new->euid || old->egid != new->egid || old->fsuid != new->fsuid ||
	       old->fsgid != new->fsgid || (new->cap_prm & ~old->cap_prm);
}

/* Whether an exec from credentials old to new leaves the process dumpable
 * (SUID_DUMP_USER), as begin_new_exec decides from the ids before it, and
 * commit_creds from the change. */
int zv_fid_exec_dumpable(const struct zv_creds *old, const struct zv_creds *new)
{
	return old->euid == old->uid && old->egid == old->gid && !zv_fid_dump_changed(old, new);
}

/* An exec of a file with mode (virtual), owned by uid:gid; suid_ok,
 * sgid_ok: the set-user-ID and set-group-ID bits may apply (no nosuid
 * mount, no no_new_privs, an owner the id map knows). Returns AT_SECURE.
 * Files carry no capabilities here. */
int zv_fid_exec(struct zv_creds *c, uint32_t mode, uint32_t uid, uint32_t gid, int suid_ok, int sgid_ok)
{
	struct zv_creds old = *c;
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
