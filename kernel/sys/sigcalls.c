/* The guest's signal calls: its dispositions (rt_sigaction), its mask
 * (rt_sigprocmask, rt_sigsuspend, and the calls that take a mask or a set
 * for their wait), rt_sigreturn, sigaltstack and rt_sigpending. Its
 * signals are delivered by sys/signal.c. */
#include "zvisor.h"
#include "sys/platform.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "sys/sigshared.h"

long zv_sys_rt_sigaction(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	int sig = (int)a[0];
	const struct zv_ksigaction *act = (const void *)a[1];
	struct zv_ksigaction *oact = (void *)a[2];
	if (a[3] != 8 || sig < 1 || sig > 64)
		return -EINVAL;
	if (act && (sig == SIGKILL || sig == SIGSTOP))
		return -EINVAL;
	if (act && zv_bad_guest_ptr((uint64_t)act))
		return -EFAULT;
	struct zv_ksigaction new;
	if (act) /* read before locking: a bad pointer aborts the call */
		new = *act;
	struct zv_sighand *sh = t->sighand;
	zv_lock(&sh->lock);
	struct zv_ksigaction old = sh->act[sig];
	if (act) {
		sh->act[sig] = new;
		sh->act[sig].mask &= ~UNBLOCKABLE;
		set_host_action(sh, sig);
	}
	zv_unlock(&sh->lock);
	if (oact)
		*oact = old;
	return 0;
}

long zv_sys_rt_sigprocmask(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	long *a = c->a;
	const uint64_t *set = (const void *)a[1];
	uint64_t *oset = (void *)a[2];
	if (a[3] != 8)
		return -EINVAL;
	if (set && zv_bad_guest_ptr((uint64_t)set))
		return -EFAULT;
	uint64_t old = zv_guest_mask(t, uc), m = old;
	if (set) {
		switch (a[0]) {
		case ZV_SIG_BLOCK: m |= *set; break;
		case ZV_SIG_UNBLOCK: m &= ~*set; break;
		case ZV_SIG_SETMASK: m = *set; break;
		default: return -EINVAL;
		}
	}
	if (oset)
		*oset = old;
	/* The new mask takes effect when this entry returns to the guest. */
	set_guest_mask(t, uc, m);
	return 0;
}

long zv_sys_rt_sigreturn(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	const struct zv_sigframe *f = (const void *)(uc->mc.rsp - 8);
	const struct zv_ucontext *g = &f->uc;
	/* r8 .. rip come from the frame; segment state stays the host's. */
	memcpy(&uc->mc, &g->mc, offsetof(struct zv_mcontext, eflags));
	if (zv_plat->resume_ip) /* inside code the platform moved: resume in its copy */
		uc->mc.rip = zv_plat->resume_ip(uc->mc.rip);
	const uint64_t fix = 0x40dd5UL; /* AC OF DF TF SF ZF AF PF CF, RF */
	uc->mc.eflags = (uc->mc.eflags & ~fix) | (g->mc.eflags & fix);
	void *host_fp = (void *)uc->mc.fpstate;
	if (host_fp && g->mc.fpstate)
		memcpy(host_fp, (const void *)g->mc.fpstate, zv_fpstate_size(host_fp));
	set_guest_mask(t, uc, g->uc_sigmask);
	if (t->handler_depth)
		t->handler_depth--;
	if (!on_guest_altstack(t, uc->mc.rsp)) {
		struct zv_stack ss = g->uc_stack;
		if (ss.ss_flags & ZV_SS_DISABLE)
			t->guest_ss = (struct zv_stack){ .ss_flags = ZV_SS_DISABLE };
		else if (ss.ss_size >= ZV_MINSIGSTKSZ)
			t->guest_ss = (struct zv_stack){ ss.ss_sp, ss.ss_flags & ZV_SS_AUTODISARM, 0, ss.ss_size };
	}
	return ZV_NORESULT;
}

long zv_sys_sigaltstack(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	long *a = c->a;
	const struct zv_stack *ss = (const void *)a[0];
	struct zv_stack *old = (void *)a[1];
	struct zv_stack prev = t->guest_ss;
	prev.ss_flags = altstack_flags(t, uc->mc.rsp);
	prev.pad = 0;
	if (ss) {
		if (zv_bad_guest_ptr((uint64_t)ss))
			return -EFAULT;
		if (on_guest_altstack(t, uc->mc.rsp))
			return -EPERM;
		int mode = ss->ss_flags & ~ZV_SS_AUTODISARM;
		if (mode != 0 && mode != ZV_SS_DISABLE && mode != ZV_SS_ONSTACK)
			return -EINVAL;
		if (mode == ZV_SS_DISABLE) {
			t->guest_ss = (struct zv_stack){ .ss_flags = ZV_SS_DISABLE };
		} else {
			if (ss->ss_size < ZV_MINSIGSTKSZ)
				return -ENOMEM;
			t->guest_ss = (struct zv_stack){ ss->ss_sp, ss->ss_flags & ZV_SS_AUTODISARM, 0, ss->ss_size };
		}
	}
	if (old)
		*old = prev;
	return 0;
}

long zv_sys_rt_sigsuspend(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	if (a[1] != 8)
		return -EINVAL;
	if (zv_bad_guest_ptr((uint64_t)a[0]))
		return -EFAULT;
	uint64_t m = *(const uint64_t *)a[0] & ~UNBLOCKABLE;
	uint64_t host = m & ~zv_kernel_signals();
	/* Handlers run with the temporary mask; their frames save the old. */
	t->delivery_mask = m;
	t->delivery_mask_set = 1;
	if (t->sigsys_held && !(m & ZV_SIGBIT(SIGSYS))) {
		t->sigsys_held = 0;
		defer(t, SIGSYS, &t->sigsys_info);
		return -EINTR; /* its handler runs with the temporary mask */
	}
	return zv_host_call(t, __NR_rt_sigsuspend, (long)&host, 8, 0, 0, 0, 0);
}

/* ppoll, pselect6, epoll_pwait(2): a temporary mask for the wait. */
long zv_sys_masked_wait(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	uint64_t m, host;
	struct { uint64_t *set; uint64_t len; } psel;
	const uint64_t *user = NULL;
	const struct zv_sysent *row = zv_row(nr);
	int idx = zv_arg_index(row->sigset);
	if (!row->sigsize) { /* pselect6: a { set, size } pair */
		const uint64_t *arg = (const void *)a[idx];
		if (arg && zv_bad_guest_ptr((uint64_t)arg))
			return -EFAULT;
		if (arg && arg[0] && arg[1] == 8) {
			user = (const uint64_t *)arg[0];
			psel.set = &host;
			psel.len = 8;
			b[idx] = (long)&psel;
		}
	} else {
		if (a[idx] && a[zv_arg_index(row->sigsize)] == 8) {
			user = (const uint64_t *)a[idx];
			b[idx] = (long)&host;
		}
	}
	if (user) {
		if (zv_bad_guest_ptr((uint64_t)user))
			return -EFAULT;
		m = *user & ~UNBLOCKABLE;
		host = m & ~zv_kernel_signals();
	}
	long r = zv_host_call(t, nr, b[0], b[1], b[2], b[3], b[4], b[5]);
	if (user && r == -EINTR) {
		t->delivery_mask = m;
		t->delivery_mask_set = 1;
	}
	return r;
}

/* signalfd, signalfd4, rt_sigtimedwait: SIGSYS is never the guest's to take.
 * A set the host would refuse for its size goes to it as it is. */
long zv_sys_sigmask_arg(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	const struct zv_sysent *row = zv_row(nr);
	int idx = zv_arg_index(row->sigset), ti = zv_arg_index(row->timeout);
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	uint64_t m;
	if (a[idx] && a[zv_arg_index(row->sigsize)] == 8) {
		if (zv_bad_guest_ptr((uint64_t)a[idx]) || (ti >= 0 && a[ti] && zv_bad_guest_ptr((uint64_t)a[ti])))
			return -EFAULT;
		m = *(const uint64_t *)a[idx] & ~zv_kernel_signals();
		b[idx] = (long)&m;
	}
	return zv_host_call(t, nr, b[0], b[1], b[2], b[3], b[4], b[5]);
}

/* The host's pending set, and a held SIGSYS (bit 31, in the fourth byte). */
long zv_sys_rt_sigpending(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	long r = zv_host_call(t, nr, a[0], a[1], 0, 0, 0, 0);
	if (r == 0 && t->sigsys_held && (size_t)a[1] >= 4)
		((uint8_t *)a[0])[3] |= (uint8_t)(ZV_SIGBIT(SIGSYS) >> 24);
	return r;
}
