/* Calls the kernel answers from its own state, without the host: getpid and
 * gettid (kept per thread: a vfork child is another process on shared
 * memory), and getuid/geteuid/getgid/getegid (credentials are per thread on
 * Linux; each thread caches its own, dropped by its setuid-family calls).
 * A process that enters or creates a user namespace stops caching ids: its
 * uid can change when another process writes its uid_map. Virtual ids
 * (zv_proc.cred_virtual, struct zv_creds) are never dropped: they are the
 * answer.
 *
 * getppid is not cached: the parent may exit and the process be reparented
 * at any time. Nor is uname: another process may change the host name. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "sys/layer.h"
#include "sys/platform.h"
#include "lib/syscall.h"
#include <linux/sched.h>

long zv_sys_getpid(struct zv_call *c)
{
	return c->t->pid;
}

long zv_sys_gettid(struct zv_call *c)
{
	return c->t->tid;
}

static int load_ids(struct zv_thread *t)
{
	uint32_t r[3], g[3];
	if (zv_sys3(__NR_getresuid, &r[0], &r[1], &r[2]) < 0 || zv_sys3(__NR_getresgid, &g[0], &g[1], &g[2]) < 0)
		return 0;
	struct zv_creds *c = &t->cred;
	c->uid = r[0];
	c->euid = c->fsuid = r[1];
	c->suid = r[2];
	c->gid = g[0];
	c->egid = c->fsgid = g[1];
	c->sgid = g[2];
	t->cred_valid = !zv_proc.no_cred_cache;
	return 1;
}

/* getuid, geteuid, getgid, getegid. */
long zv_sys_id_get(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long nr = c->nr;
	if (!t->cred_valid && !load_ids(t))
		return zv_host_call(t, nr, 0, 0, 0, 0, 0, 0);
	switch (zv_row(nr)->cred) {
	case ZV_CRED_UID: return t->cred.uid;
	case ZV_CRED_EUID: return t->cred.euid;
	case ZV_CRED_GID: return t->cred.gid;
	default: return t->cred.egid;
	}
}

/* The setuid family, unshare and setns: run on the host, then forget
 * (virtual ids stay: a layer answers the setuid family itself). */
long zv_sys_id_set(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	long r = zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (zv_proc.cred_virtual)
		return r;
	t->cred_valid = 0;
	if (r >= 0)
		zv_exec_note_creds(nr, a[0]);
	int userns = zv_row(nr)->userns;
	if ((userns == ZV_USERNS_FLAG0 && (a[0] & CLONE_NEWUSER)) || userns == ZV_USERNS_MAY)
		zv_proc.no_cred_cache = 1;
	return r;
}

int (*zv_ids_status_hook)(const struct zv_creds *c, const char *line, size_t keylen, char *buf, size_t size);
int (*zv_ids_other_hook)(int tid, const char *raw, size_t len, struct zv_creds *c);
uint32_t (*zv_ids_sender_hook)(const struct zv_thread *self, int tid, int pid, uint32_t huid);

void zv_ids_make_virtual(void)
{
	zv_proc.cred_virtual = 1;
}

/* A new task t made by parent (t itself after a fork) starts with its
 * parent's ids; they are read again where the host's may differ. */
void zv_ids_after_clone(struct zv_thread *t, const struct zv_thread *parent, uint64_t flags)
{
	if (t != parent) {
		t->cred = parent->cred;
		t->cred_valid = parent->cred_valid;
	}
	if ((flags & CLONE_NEWUSER) && !zv_proc.cred_virtual) {
		t->cred_valid = 0;
		zv_proc.no_cred_cache = 1;
	}
}

/* On the fast platforms %gs belongs to the kernel: the guest's base is
 * virtual. */
long zv_sys_arch_prctl(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	if (zv_plat->owns_gs) {
		if (a[0] == 0x1001) { /* ARCH_SET_GS */
			if ((uint64_t)a[1] >= 0x7ffffffff000UL)
				return -EPERM;
			t->guest_gs = (uint64_t)a[1];
			return 0;
		}
		if (a[0] == 0x1004) { /* ARCH_GET_GS */
			*(uint64_t *)a[1] = t->guest_gs;
			return 0;
		}
	}
	long r = zv_host_call(t, __NR_arch_prctl, a[0], a[1], 0, 0, 0, 0);
	if (r == 0 && a[0] == 0x1012 /* ARCH_SET_CPUID */ && !a[1])
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_MM); /* execve turns cpuid back on */
	return r;
}
