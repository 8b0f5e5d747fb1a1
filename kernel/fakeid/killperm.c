/* Permission to send a signal, under virtual ids. The host checks the
 * run's user against itself: always allowed. Natively (kernel/signal.c
 * kill_ok_by_cred) the sender's real or effective uid must be the target
 * thread's real or saved uid, or the sender has CAP_KILL; a SIGCONT to a
 * process of the sender's session goes anyway. So a fake root's process
 * that dropped to uid 1000 may not signal its root parent: EPERM.
 *
 * A layer of its own after cr_pids, so that the ids it is given are the
 * host's (a restored tree's are translated by then); it asks only for a
 * sender without CAP_KILL, and only of a single target: a group or
 * everyone (kill with pid <= 0) and pidfd_send_signal are the host's. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"

#define CAP_KILL_ 5
#define SIGCONT_ 18

static int allowed(const struct zv_creds *s, const struct zv_creds *t)
{
	return s->euid == t->suid || s->euid == t->uid || s->uid == t->suid || s->uid == t->uid ||
	       ((s->cap_eff >> CAP_KILL_) & 1);
}

static long kill_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long pid = 0, tid = 0, sig;
	switch (c->nr) {
	case __NR_kill: case __NR_rt_sigqueueinfo: pid = a[0]; sig = a[1]; break;
	case __NR_tkill: tid = a[0]; sig = a[1]; break;
	default: pid = a[0]; tid = a[1]; sig = a[2]; break; /* tgkill, rt_tgsigqueueinfo */
	}
	long target = tid ? tid : pid;
	if (sig < 0 || sig > 64 || !t->cred_valid || ((t->cred.cap_eff >> CAP_KILL_) & 1) || target <= 0 || pid < 0 ||
	    target > 0x3fffffff || (pid ? pid : target) == zv_proc.hpid)
		return zv_next(c); /* EINVAL first; else the host's check gives the same answer */
	struct zv_creds tc;
	if (zv_fid_task_status_creds((int)target, &tc) < 0 || allowed(&t->cred, &tc))
		return zv_next(c);
	if (sig == SIGCONT_) {
		long mine = zv_sys1(__NR_getsid, 0), theirs = zv_sys1(__NR_getsid, target);
		if (mine > 0 && mine == theirs)
			return zv_next(c);
	}
	return -EPERM;
}

static int kill_on(void) { return zv_fid.on; }

static int kill_sees(long nr)
{
	return nr == __NR_kill || nr == __NR_tkill || nr == __NR_tgkill || nr == __NR_rt_sigqueueinfo ||
	       nr == __NR_rt_tgsigqueueinfo;
}

ZV_LAYER(fakeid_kill, 610) = { .name = "fakeid_kill", .sees = kill_sees, .active = kill_on, .call = kill_call };
