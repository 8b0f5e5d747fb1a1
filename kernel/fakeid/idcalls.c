/* The id calls under virtual credentials: each thread's own struct
 * zv_creds (getuid and its like are answered by sys/id.c from the same
 * struct), changed by the rules of creds.c, copied to and from the guest
 * with the host's errnos and in the host's order. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include <linux/prctl.h>

#define NGROUPS_MAX 65536

static long put_ids(const long *a, uint32_t x, uint32_t y, uint32_t z)
{
	uint32_t v[3] = { x, y, z };
	for (int i = 0; i < 3; i++)
		if (zv_guest_copy((void *)a[i], &v[i], 4, (uint64_t)a[i]) < 0)
			return -EFAULT;
	return 0;
}

static long getgroups(const struct zv_creds *c, long size, uint64_t list)
{
	if ((int)size < 0)
		return -EINVAL;
	if (size) {
		if (c->ngroups > (uint32_t)size)
			return -EINVAL;
		if (zv_guest_copy((void *)list, c->groups, c->ngroups * 4, list) < 0)
			return -EFAULT;
	}
	return c->ngroups;
}

static long setgroups(struct zv_creds *c, long size, uint64_t list)
{
	if (!zv_fid_capable(c, CAP_SETGID))
		return -EPERM;
	if ((unsigned)size > NGROUPS_MAX)
		return -EINVAL;
	uint32_t g[ZV_CRED_GROUPS];
	if ((unsigned)size > ZV_CRED_GROUPS)
		return zv_guest_copy(g, (const void *)list, 4, list) < 0 ? -EFAULT : -EINVAL;
	if (size && zv_guest_copy(g, (const void *)list, (size_t)size * 4, list) < 0)
		return -EFAULT;
	for (long i = 0; i < size; i++)
		if (g[i] == 0xffffffffu)
			return -EINVAL;
	zv_fid_set_groups(c, g, (uint32_t)size);
	return 0;
}

/* The capability header: its version's number of 32-bit words, or
 * -EINVAL after writing the version the host prefers (as capget's probe
 * expects), or -EFAULT. */
static long cap_words(uint64_t hdr)
{
	uint32_t v;
	if (zv_guest_copy(&v, (const void *)hdr, 4, hdr) < 0)
		return -EFAULT;
	if (v == _LINUX_CAPABILITY_VERSION_1)
		return 1;
	if (v == _LINUX_CAPABILITY_VERSION_2 || v == _LINUX_CAPABILITY_VERSION_3)
		return 2;
	v = _LINUX_CAPABILITY_VERSION_3;
	return zv_guest_copy((void *)hdr, &v, 4, hdr) < 0 ? -EFAULT : -EINVAL;
}

static long capget(struct zv_thread *t, struct zv_call *call, uint64_t hdr, uint64_t data)
{
	long words = cap_words(hdr);
	if (!data || words < 0)
		return !data && words == -EINVAL ? 0 : words;
	int pid;
	if (zv_guest_copy(&pid, (const void *)(hdr + 4), 4, hdr + 4) < 0)
		return -EFAULT;
	if (pid < 0)
		return -EINVAL;
	const struct zv_creds *c = &t->cred;
	if (pid && pid != t->tid) {
		struct zv_thread *o = zv_thread_find(pid);
		struct zv_creds oc;
		if (o)
			c = &o->cred;
		else if (zv_fid_task_status_creds(pid, &oc) == 0)
			c = &oc; /* another process's, as its status shows them */
		else
			return zv_next(call); /* none such: the host's answer */
	}
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)c->cap_eff, (uint32_t)c->cap_prm, (uint32_t)c->cap_inh },
		{ (uint32_t)(c->cap_eff >> 32), (uint32_t)(c->cap_prm >> 32), (uint32_t)(c->cap_inh >> 32) },
	};
	return zv_guest_copy((void *)data, d, (size_t)words * sizeof d[0], data) < 0 ? -EFAULT : 0;
}

static long capset(struct zv_thread *t, uint64_t hdr, uint64_t data)
{
	long words = cap_words(hdr);
	if (words < 0)
		return words;
	int pid;
	if (zv_guest_copy(&pid, (const void *)(hdr + 4), 4, hdr + 4) < 0)
		return -EFAULT;
	if (pid && pid != t->tid)
		return -EPERM;
	struct __user_cap_data_struct d[2] = { { 0 } };
	if (zv_guest_copy(d, (const void *)data, (size_t)words * sizeof d[0], data) < 0)
		return -EFAULT;
	return zv_fid_capset(&t->cred, (uint64_t)d[1].effective << 32 | d[0].effective,
			     (uint64_t)d[1].permitted << 32 | d[0].permitted,
			     (uint64_t)d[1].inheritable << 32 | d[0].inheritable);
}

static long id_call(struct zv_call *call)
{
	struct zv_thread *t = call->t;
	struct zv_creds *c = &t->cred;
	const long *a = call->a;
	uint32_t x = (uint32_t)a[0], y = (uint32_t)a[1], z = (uint32_t)a[2];
	switch (call->nr) {
	case __NR_getresuid: return put_ids(a, c->uid, c->euid, c->suid);
	case __NR_getresgid: return put_ids(a, c->gid, c->egid, c->sgid);
	case __NR_getgroups: return getgroups(c, a[0], (uint64_t)a[1]);
	case __NR_setgroups: return setgroups(c, a[0], (uint64_t)a[1]);
	case __NR_setuid: return zv_fid_set_id(c, 0, x);
	case __NR_setreuid: return zv_fid_set_reid(c, 0, x, y);
	case __NR_setresuid: return zv_fid_set_resid(c, 0, x, y, z);
	case __NR_setfsuid: return zv_fid_set_fsid(c, 0, x);
	case __NR_setgid: return zv_fid_set_id(c, 1, x);
	case __NR_setregid: return zv_fid_set_reid(c, 1, x, y);
	case __NR_setresgid: return zv_fid_set_resid(c, 1, x, y, z);
	case __NR_setfsgid: return zv_fid_set_fsid(c, 1, x);
	case __NR_capget: return capget(t, call, (uint64_t)a[0], (uint64_t)a[1]);
	case __NR_capset: return capset(t, (uint64_t)a[0], (uint64_t)a[1]);
	case __NR_prctl: {
		if (a[0] == PR_GET_DUMPABLE)
			return zv_fid.dumpable;
		if (a[0] == PR_SET_DUMPABLE) {
			long r = zv_next(call); /* the host's too: its errnos, and exec_note's reset at exec */
			if (r == 0 && zv_fid.dumpable != (int)a[1]) {
				zv_fid.dumpable = (int)a[1];
				zv_fid_publish_all(t);
			}
			return r;
		}
		long r = zv_fid_prctl(c, a[0], (unsigned long)a[1], (unsigned long)a[2], (unsigned long)a[3],
				      (unsigned long)a[4]);
		if (r != -ENOSYS)
			return r;
		r = zv_next(call);
		if (a[0] == PR_SET_NO_NEW_PRIVS && r == 0)
			zv_fid.no_new_privs = 1; /* the host's is the seccomp platform's too: set-ID files look here */
		return r;
	}
	}
	return zv_next(call);
}

/* The calls, and the credentials they changed published for the run's
 * other processes (procids.c). */
long zv_fid_id_call(struct zv_call *call)
{
	struct zv_thread *t = call->t;
	uint32_t nr = (uint32_t)call->nr;
	if (nr == __NR_getresuid || nr == __NR_getresgid || nr == __NR_getgroups || nr == __NR_capget)
		return id_call(call);
	struct zv_creds before = t->cred;
	long r = id_call(call);
	if (!memcmp(&before, &t->cred, sizeof before))
		return r;
	int d = zv_fid_dump_changed(&before, &t->cred) ? zv_fid_suid_dumpable() : zv_fid.dumpable;
	if (d != zv_fid.dumpable) {
		zv_fid.dumpable = d;
		zv_fid_publish_all(t);
	}
	zv_fid_publish(t);
	return r;
}
