/* The guest's ptrace as a layer (outermost: a tracer sees the call as the
 * guest made it, and may change it) and its event hooks: syscall-entry
 * and -exit stops, signal-delivery and group stops, the clone, fork,
 * vfork, exec and exit events, SIGSTOP (which the host could not let
 * zvisor see) sent to a tracee, and a tracer's wait4 and waitid. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "sys/execstate.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/sched.h>

#define TF 0x100UL
#define TRAP_BRKPT 1
#define SI_USER 0
#define SI_TKILL (-6)
#define SI_KERNEL 0x80
#define PR_SET_PTRACER 0x59616d61

static int sysgood(const struct zv_pt_slot *s)
{
	return s->options & PT_O_TRACESYSGOOD ? 0x80 : 0;
}

static int event_on(const struct zv_pt_slot *s, int event)
{
	return s && (s->options & (1u << event)); /* PTRACE_O_TRACEFORK is 1 << PTRACE_EVENT_FORK, ... */
}

/* A stop at an event, with rax as during a call (-ENOSYS) and orig_rax the call. */
static void event_stop(struct zv_thread *t, struct zv_ucontext *uc, int event, uint64_t msg)
{
	uint64_t rax = uc->mc.rax;
	uc->mc.rax = (uint64_t)-ENOSYS;
	zv_pt_stop(t, uc, ZV_PT_EVENT, zv_pt_event_status(event), NULL, msg);
	if (uc->mc.rax == (uint64_t)-ENOSYS)
		uc->mc.rax = rax;
}

/* SIGTRAP after a step over a syscall (TRAP_BRKPT, as the host's
 * user_single_step_report), or a signal the tracer gave a syscall stop
 * (SI_KERNEL: the host's ptrace_report_syscall sends it with send_sig(sig,
 * current, 1), strace's -e inject=...:signal=). */
static void post(struct zv_thread *t, int sig, int code, uint64_t addr)
{
	zv_siginfo si = { .si_signo = sig, .si_code = code };
	memcpy(si.bytes, &addr, 8);
	zv_signal_post(t, &si);
}

/* The call itself: a tracer's wait and its tracees' /proc/PID/mem are
 * this feature's too. */
static int stop_signal(struct zv_call *c, long *ret);

long zv_pt_inner(struct zv_call *c)
{
	long r;
	/* (inside a tracee's syscall stops: its tracer sees the kill) */
	if ((c->nr == __NR_kill || c->nr == __NR_tkill || c->nr == __NR_tgkill) && stop_signal(c, &r))
		return r;
	/* (a traced child's group stop its real parent's waits report) */
	if (c->nr == __NR_wait4 || c->nr == __NR_waitid)
		return zv_pt_job_wait(c, zv_pt_tracing() ? zv_pt_wait : zv_next);
	if (zv_pt_tracing() && zv_pt_procmem_sees(c->nr) && zv_pt_procmem_call(c, &r))
		return r;
	return zv_next(c);
}

/* Whether a signal deferred for t will run a guest handler. */
static int handler_pending(struct zv_thread *t)
{
	for (uint64_t m = t->pending_set; m; m &= m - 1)
		if (t->sighand->act[__builtin_ctzl(m) + 1].handler > 1 /* SIG_IGN */)
			return 1;
	return 0;
}

/* The exit stop of call nr (args a), which returned r: what the host's
 * tracer sees before a restart or a handler decides, ERESTART* for a call
 * a signal interrupted. Returns the call's result (the tracer's, if it
 * changed rax). */
static long exit_stop(struct zv_thread *t, struct zv_ucontext *uc, long nr, const long *a, long r, int st)
{
	long shown = r;
	if (r == ZV_NORESULT)
		shown = (long)uc->mc.rax;
	else if (r == -EINTR && t->fast.sig_pending && zv_sys_restart_code(nr, a))
		shown = -zv_sys_restart_code(nr, a);
	uc->mc.rax = (uint64_t)shown;
	t->pt.orig_rax = nr;
	int sig = zv_pt_stop(t, uc, ZV_PT_SYSCALL_EXIT, st, NULL, 0);
	if ((long)uc->mc.rax != shown)
		r = (long)uc->mc.rax; /* the tracer's result */
	if (sig)
		post(t, sig, SI_KERNEL, 0);
	return r;
}

/* SECCOMP_RET_TRACE of the guest's filter: PTRACE_EVENT_SECCOMP if the
 * tracer asked for it (PTRACE_O_TRACESECCOMP), rax -ENOSYS and orig_rax
 * the call, as the host stops; the tracer may change or skip the call. */
static long pt_seccomp_trace(struct zv_thread *t, struct zv_ucontext *uc, long nr, uint32_t data)
{
	struct zv_pt_slot *s = t->pt.slot;
	if (!s || !(s->options & PT_O_TRACESECCOMP))
		return ZV_SECCOMP_UNTRACED;
	uint64_t rax = uc->mc.rax;
	uc->mc.rax = (uint64_t)-ENOSYS;
	t->pt.orig_rax = nr;
	t->pt.seccomp_stopped = 1;
	zv_pt_stop(t, uc, ZV_PT_SECCOMP, zv_pt_event_status(PT_EVENT_SECCOMP), NULL, data);
	long now = t->pt.slot ? t->pt.orig_rax : nr; /* (detached: the call as it was) */
	if (now >= 0 && uc->mc.rax == (uint64_t)-ENOSYS)
		uc->mc.rax = rax;
	return now;
}

/* Whether a stop is asked from outside (pt.want, or the slot's from the
 * tracer): its wake may have been dropped for a SIGSYS pending already
 * (area.c), whose own handling looks so, and takes it on its way out. */
static int want_due(struct zv_thread *t)
{
	struct zv_pt_slot *s = t->pt.slot;
	return __atomic_load_n(&t->pt.want, __ATOMIC_ACQUIRE) || (s && __atomic_load_n(&s->want, __ATOMIC_ACQUIRE));
}

static long syscall_stops(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	struct zv_pt_slot *s = t->pt.slot;
	if (want_due(t)) { /* (before a sleep it cancels: made again after the stop) */
		t->kwork = 1;
		t->fast.sig_pending = 1;
		zv_plat->need_catchall(t); /* the way out bounces, a syscall only SUD catches */
	}
	int stepped = t->pt.stepping || t->pt.step_syscall;
	if (stepped) {
		/* a step reached this call: made whole, then a stop after it */
		zv_pt_step_end(t, uc);
		t->pt.step_syscall = 0;
		zv_pt_set_bounce(t);
	}
	int mode = t->pt.mode;
	t->pt.orig_rax = c->nr;
	t->pt.end_rip = uc->mc.rip;
	t->pt.seccomp_stopped = 0;
	long r, nr = c->nr;
	int st = (SIGTRAP_ | sysgood(s)) << 8 | 0x7f, sig = 0;
	if (mode != ZV_PT_SYSCALL && mode != ZV_PT_SYSEMU && mode != ZV_PT_SYSEMU_STEP) {
		r = zv_pt_inner(c);
		/* resumed with PTRACE_SYSCALL from a seccomp stop: the exit stop */
		if (t->pt.seccomp_stopped && t->pt.slot && t->pt.mode == ZV_PT_SYSCALL) {
			const long a[6] = { (long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx,
					    (long)uc->mc.r10, (long)uc->mc.r8, (long)uc->mc.r9 };
			r = exit_stop(t, uc, t->pt.orig_rax, a, r, st);
		}
		goto out;
	}
	uint64_t rax = uc->mc.rax;
	/* The call a deferred signal stopped before it began, made again
	 * after the handler: the tracer saw its entry already (natively it
	 * began, and the signal came at its end). */
	int again = t->pt.again_nr == c->nr && t->pt.again_rip == uc->mc.rip;
	if (t->pt.again_nr >= 0 && (again || t->handler_depth <= t->pt.again_depth))
		t->pt.again_nr = -1;
	/* natively a sleep made again with no handler run is restart_syscall */
	long shown_nr = t->pt.block_nr == c->nr && t->pt.block_rip == uc->mc.rip ? __NR_restart_syscall : c->nr;
	t->pt.block_nr = -1;
	t->pt.orig_rax = shown_nr;
	uc->mc.rax = (uint64_t)-ENOSYS;
	uint64_t held = t->pending_set;
	if (!again)
		sig = zv_pt_stop(t, uc, ZV_PT_SYSCALL_ENTRY, st, NULL, 0);
	if (sig)
		post(t, sig, SI_KERNEL, 0);
	if (mode == ZV_PT_SYSEMU || mode == ZV_PT_SYSEMU_STEP) {
		r = (long)uc->mc.rax; /* not made: what the tracer left in rax */
		goto out;
	}
	nr = t->pt.orig_rax == shown_nr ? c->nr : t->pt.orig_rax;
	long a[6] = { (long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx,
		      (long)uc->mc.r10, (long)uc->mc.r8, (long)uc->mc.r9 };
	int came = !again && (t->pending_set & ~held) != 0; /* a guest signal came at the stop */
	if (nr == -1)
		r = (long)uc->mc.rax; /* skipped by the tracer */
	else
		r = zv_pt_entry_made(c, nr, a, rax, came);
	s = t->pt.slot;
	if (!s || t->pt.mode != ZV_PT_SYSCALL)
		goto out;
	if (r == -EINTR && t->call_cancelled && t->fast.sig_pending && !handler_pending(t)) {
		/* never began, and made again right after the signal (no guest
		 * handler runs first): its exit stop then */
		t->pt.again_nr = nr;
		t->pt.again_rip = uc->mc.rip;
		t->pt.again_depth = t->handler_depth;
		goto out;
	}
	if (t->pt.seccomp_stopped)
		nr = t->pt.orig_rax; /* as the tracer left it at the seccomp stop */
	r = exit_stop(t, uc, nr == c->nr ? shown_nr : nr, a, r, st);
out:
	/* (rt_sigreturn's trap is at the context it restored, as natively) */
	if (stepped && t->pt.slot && (r != ZV_NORESULT || c->nr == __NR_rt_sigreturn))
		post(t, SIGTRAP_, TRAP_BRKPT, uc->mc.rip);
	return r;
}

/* kill, tkill, tgkill of SIGSTOP to a traced thread: the host would stop
 * the whole process for real, where natively its tracer sees a
 * signal-delivery stop first. Returns 1 if taken. */
static int stop_signal(struct zv_call *c, long *ret)
{
	long nr = c->nr, *a = c->a;
	int sig = (int)(nr == __NR_tgkill ? a[2] : a[1]);
	if (sig != SIGSTOP_)
		return 0;
	int tid = nr == __NR_kill ? 0 : (int)(nr == __NR_tgkill ? a[1] : a[0]);
	int pid = nr == __NR_tgkill ? (int)a[0] : nr == __NR_kill ? (int)a[0] : 0;
	struct zv_thread *t = c->t;
	zv_siginfo si = { .si_signo = SIGSTOP_, .si_code = nr == __NR_kill ? SI_USER : SI_TKILL };
	si.kill.pid = t->pid;
	si.kill.uid = (uint32_t)zv_sys0(__NR_getuid);
	/* a tracer's own tracee, or (a tracee) itself or another traced thread of its process */
	struct zv_pt_tracee_ref *r = tid ? zv_pt_find(tid) : pid > 0 ? zv_pt_find(pid) : NULL;
	if (r && r->s && (!pid || pid == r->pid) && r->hpid != zv_proc.hpid) {
		*ret = zv_pt_wake_tracee(r, ZV_PT_WANT_SIGSTOP);
		return 1;
	}
	if ((pid > 0 || (nr == __NR_tkill && tid > 0)) && zv_pt_stop_other(t, nr, pid, tid, ret))
		return 1; /* another process that may be traced (sigstop.c) */
	if (!zv_pt_me.traced || (pid && pid != t->pid && pid != zv_proc.pid))
		return 0;
	struct zv_thread *x = tid ? (tid == t->tid ? t : zv_thread_find(tid)) : t->pt.slot ? t : NULL;
	if (!x || !x->pt.slot)
		return 0;
	if (x == t)
		zv_signal_post(t, &si);
	else
		zv_pt_wake_thread(x, ZV_PT_WANT_SIGSTOP);
	*ret = 0;
	return 1;
}

static int pt_active(void)
{
	return 1; /* PR_SET_PTRACER is kept before any tracing */
}

static int pt_sees(long nr)
{
	if (nr == __NR_prctl || nr == __NR_kill || nr == __NR_tkill || nr == __NR_tgkill)
		return 1; /* (a SIGSTOP to a tracee, from any process: stop_signal) */
	if (nr == __NR_wait4 || nr == __NR_waitid)
		return 1; /* (any process may be a tracee's real parent: jobstop.c) */
	if (zv_pt_me.traced)
		return 1; /* a traced thread stops at every call */
	/* the number first: the fold asks about every one */
	return (nr == __NR_rt_sigaction || zv_pt_procmem_sees(nr)) && zv_pt_tracing();
}

static long pt_call(struct zv_call *c)
{
	long nr = c->nr;
	if (nr == __NR_prctl && c->a[0] == PR_SET_PTRACER)
		zv_pt_me.ptracer = c->a[1] == -1 ? -1 : (int)c->a[1];
	long r = c->t->pt.slot ? syscall_stops(c) : zv_pt_inner(c);
	if (nr == __NR_rt_sigaction && c->a[0] == SIGCHLD_ && c->a[1] && r == 0)
		zv_pt_bell_handles(c->t); /* (a tracer's new SIGCHLD action) */
	return r;
}

/* Whether uc is a call's end: its kernel entry's frame, or the guest
 * put back on the call to make it again (zv_frame_result) and stopped
 * there before it made it, as when a tracer's INTERRUPT or a signal
 * comes just after the frame returned. Natively the thread is still at
 * the call's end. */
static int at_call_end(const struct zv_thread *t, const struct zv_ucontext *uc)
{
	if (uc == t->sys_uc)
		return 1;
	if (!t->restarted || (long)uc->mc.rax != t->restart_nr)
		return 0;
	uint64_t ip = zv_plat->resume_ip ? zv_plat->resume_ip(t->restart_rip) : t->restart_rip;
	return uc->mc.rip == ip || uc->mc.rip == t->restart_rip;
}

/* At a call's end the host's tracer sees the call as the signal left
 * it, before the restart or the EINTR a handler makes of it: rip after
 * the syscall, rax the ERESTART* code; a call with ERESTART_RESTARTBLOCK
 * made again then shows restart_syscall (block_nr). Sets uc so. */
static void call_end_shown(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (!at_call_end(t, uc))
		return;
	if (uc != t->sys_uc)
		uc->mc.rip = t->restart_rip; /* (not a stub's resume address) */
	if (t->pt.orig_rax < 0 && t->restarted)
		t->pt.orig_rax = (long)uc->mc.rax; /* begun before the attach: the call made again (zv_frame_result) */
	if (t->pt.orig_rax < 0)
		return;
	const long a[6] = { (long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx, (long)uc->mc.r10 };
	long code = zv_sys_restart_code(t->pt.orig_rax, a);
	if (t->restarted) {
		uc->mc.rip += 2;
		uc->mc.rax = (uint64_t)-(code ? code : 512);
		if (code == 516) {
			t->pt.block_nr = t->pt.orig_rax;
			t->pt.block_rip = uc->mc.rip;
		}
	} else if ((long)uc->mc.rax == -EINTR && code) {
		uc->mc.rax = (uint64_t)-code;
	}
}

/* A stop at a call's end, shown as call_end_shown says; rip and rax are
 * the call's again afterwards unless the tracer changed them. Returns the
 * stop's answer. */
static int stop_at_call_end(struct zv_thread *t, struct zv_ucontext *uc, int kind, int status, zv_siginfo *si)
{
	uint64_t rip = uc->mc.rip, rax = uc->mc.rax;
	call_end_shown(t, uc);
	uint64_t shown_rip = uc->mc.rip, shown_rax = uc->mc.rax;
	int r = zv_pt_stop(t, uc, kind, status, si, 0);
	if (uc->mc.rip == shown_rip && uc->mc.rax == shown_rax) { /* the tracer left them */
		uc->mc.rip = rip;
		uc->mc.rax = rax;
	}
	return r;
}

/* A call a handled signal interrupted ends with EINTR (zv_frame_result:
 * a handler was due); if its tracer then suppresses the signal, or gives
 * one no handler takes, and no other runs a handler, natively no handler
 * runs and the call is made again (ERESTART_RESTARTBLOCK's as
 * restart_syscall), as get_signal decides only after the stop. */
static void restart_unhandled(struct zv_thread *t, struct zv_ucontext *uc, int to)
{
	long nr = t->pt.orig_rax;
	if ((to > 0 && to < 65 && t->sighand->act[to].handler > 1 /* SIG_IGN */) || zv_signal_handler_due(t, uc))
		return;
	const long a[6] = { (long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx, (long)uc->mc.r10 };
	long code = zv_sys_restart_code(nr, a);
	if (!code)
		return; /* a call that gives EINTR itself */
	if (code == 516) {
		t->pt.block_nr = nr;
		t->pt.block_rip = uc->mc.rip;
	}
	uc->mc.rip -= 2;
	uc->mc.rax = (uint64_t)nr;
	t->restarted = 1;
	t->restart_rip = uc->mc.rip;
	t->restart_nr = nr;
}

/* A traced thread's signal: its signal-delivery stop, where the tracer
 * picks what is delivered; a stop signal it lets through whose action is
 * the default makes the group stop the tracer sees. */
static int pt_deliver(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc)
{
	if (!t->pt.slot || sig == SIGKILL_)
		return sig;
	if (sig == SIGTRAP_ && zv_pt_trap(t, si, uc))
		return 0; /* a step still inside zvisor's moved code */
	if (!at_call_end(t, uc))
		t->pt.orig_rax = -1; /* not at a call's end */
	if (sig == 18 /* SIGCONT */)
		zv_pt_job_cont(t); /* after a group stop its tracer resumed */
	si->si_signo = sig;
	int eintr = uc == t->sys_uc && !t->restarted && t->pt.orig_rax >= 0 && (long)uc->mc.rax == -EINTR &&
		    uc->mc.rip == t->pt.end_rip;
	int to = stop_at_call_end(t, uc, ZV_PT_SIGNAL, sig << 8 | 0x7f, si);
	struct zv_pt_slot *s = t->pt.slot;
	if (eintr && s && (long)uc->mc.rax == -EINTR && uc->mc.rip == t->pt.end_rip)
		restart_unhandled(t, uc, to);
	if (s && (to == 19 || to == 20 || to == 21 || to == 22) && t->sighand->act[to].handler == 0) {
		int st = to << 8 | 0x7f | (s->seized ? PT_EVENT_STOP << 16 : 0);
		zv_pt_stop(t, uc, ZV_PT_GROUP, st, NULL, 0);
		return 0;
	}
	if (s && to > 0 && to < 65 && t->pt.stepping && t->sighand->act[to].handler > 1 /* SIG_IGN */) {
		/* A step that delivers a signal to a handler: as the host's
		 * handle_signal, TF leaves the interrupted context (the frame
		 * keeps none) and the step ends at the handler's first
		 * instruction, a SIGTRAP stop (ptrace_notify: si_code SIGTRAP). */
		zv_pt_step_end(t, uc);
		post(t, SIGTRAP_, SIGTRAP_, 0);
	}
	return to;
}

static void pt_to_guest(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (want_due(t))
		t->kwork = 1;
}

/* Stops asked from outside, taken on the way back to the guest. */
static void pt_kwork(struct zv_thread *t, struct zv_ucontext *uc)
{
	int want = __atomic_exchange_n(&t->pt.want, 0, __ATOMIC_ACQ_REL);
	if (t->pt.slot)
		want |= (int)__atomic_exchange_n(&t->pt.slot->want, 0, __ATOMIC_ACQ_REL);
	if (!want || !t->pt.slot)
		return;
	if (want & ZV_PT_WANT_SIGSTOP) {
		zv_siginfo si = { .si_signo = SIGSTOP_, .si_code = 0x80 /* SI_KERNEL */ };
		zv_signal_post(t, &si);
	}
	if (want & ZV_PT_WANT_STOP_FROM)
		zv_pt_stop_post(t, t->pt.slot->stop_code, t->pt.slot->stop_pid, t->pt.slot->stop_uid);
	if (want & ZV_PT_WANT_INTERRUPT) {
		if (!at_call_end(t, uc))
			t->pt.orig_rax = -1;
		/* (a sleep it interrupted is seen as a signal's stop sees it:
		 * strace -p shows the sleep made again as restart_syscall) */
		stop_at_call_end(t, uc, ZV_PT_GROUP, zv_pt_event_status(PT_EVENT_STOP), NULL);
	}
}

static int pt_sigsys(struct zv_thread *t, const void *siginfo, struct zv_ucontext *uc)
{
	const zv_siginfo *si = siginfo;
	uint64_t v;
	memcpy(&v, si->bytes + 8, 8);
	if ((v >> 40) != ZV_PT_SIG_MAGIC)
		return 0;
	int what = (int)(v >> 32) & 0xff;
	if (what == ZV_PT_SIG_WAKE) {
		zv_kwork_request(t, uc); /* (a wait it interrupted is made again) */
	} else if (what == ZV_PT_SIG_STOP) {
		zv_pt_stop_arrived(t, si, uc);
	} else if (what == ZV_PT_SIG_JOB) {
		zv_pt_job_arrived(t, si, uc);
	}
	return 1;
}

/* A tracee's stop, continue or end, as its queued SIGCHLD says (its
 * si_code and si_status as the host's ptrace gives them: stop.c). */
static void pt_arrive(struct zv_thread *t, int sig, zv_siginfo *si)
{
	(void)t;
	uint64_t v;
	memcpy(&v, si->bytes + 8, 8);
	if (sig != SIGCHLD_ || (v >> 40) != ZV_PT_SIG_MAGIC || (int)(v >> 32 & 0xff) != ZV_PT_SIG_NOTIFY)
		return;
	int code, st;
	memcpy(&code, si->bytes + 16, 4);
	memcpy(&st, si->bytes + 20, 4);
	zv_siginfo cld = { .si_signo = SIGCHLD_, .si_code = code };
	cld.kill.pid = (int32_t)(uint32_t)v;
	cld.kill.uid = si->kill.uid;
	memcpy(cld.bytes + 8, &st, 4);
	*si = cld;
}

/* clone, fork, vfork: the child of a tracee is traced too when the
 * tracer asked for that kind of child's event, or the call asked with
 * CLONE_PTRACE (then with no event stop, unless asked for: the host's
 * rule, whose CLONE_UNTRACED drops only the event). */
static int child_event(uint64_t flags)
{
	if (flags & CLONE_UNTRACED)
		return 0;
	if (flags & CLONE_VFORK)
		return PT_EVENT_VFORK;
	return (flags & 0xff) != SIGCHLD_ ? PT_EVENT_CLONE : PT_EVENT_FORK;
}

static void pt_clone_before(struct zv_thread *t, struct zv_thread *child, uint64_t flags)
{
	if (t->pt.clone_flags) /* written only when set: a fork loop's parent would copy the page again each time */
		t->pt.clone_flags = 0;
	int ev = child_event(flags);
	if (!t->pt.slot || !((ev && event_on(t->pt.slot, ev)) || (flags & CLONE_PTRACE)))
		return;
	t->pt.clone_flags = flags | (1UL << 63);
	if (child) { /* the same memory: its slot is taken here */
		struct zv_pt_slot *s = zv_pt_slot_take(child);
		if (!s)
			return;
		s->options = t->pt.slot->options;
		s->seized = t->pt.slot->seized;
		s->tid = -1; /* known once the clone returns */
		child->pt.slot = s;
		child->pt.mode = ZV_PT_CONT;
		child->pt.again_nr = -1;
		child->tracer_pid = t->tracer_pid;
		child->pt.dr6 = 0xffff0ff0UL;
		s->tracer_pid = t->tracer_pid;
		t->pt.child_slot = s;
		__atomic_add_fetch(&zv_pt_me.traced, 1, __ATOMIC_ACQ_REL);
	}
}

/* Natively a traced thread's child is a tracee when the clone returns and
 * stops as soon as it runs: the parent's event stop waits until the
 * child's first stop is in its slot (that stop wakes it), so that an
 * exit_group right after does not end a child its tracer never saw stop
 * (strace: "Exit of unknown pid"), as when the child waited for a CPU
 * while its parent went on. Nothing keeps a new thread from its first
 * stop but the end of the whole process; the bound (2 s) is against the
 * unforeseen. */
static void child_started(struct zv_thread *t)
{
	struct zv_pt_slot *s = t->pt.child_slot;
	t->pt.child_slot = NULL;
	for (int i = 0; s && i < 200 && !__atomic_load_n(&s->stops, __ATOMIC_ACQUIRE); i++)
		zv_pt_futex_wait(&s->stops, 0, 10);
}

/* The first stop of an auto-attached task: SIGSTOP, or PTRACE_EVENT_STOP
 * when its tracer seized the parent. */
static void first_stop(struct zv_thread *t)
{
	if (t->pt.slot->seized) {
		__atomic_or_fetch(&t->pt.want, ZV_PT_WANT_INTERRUPT, __ATOMIC_ACQ_REL);
		t->kwork = 1;
		t->fast.sig_pending = 1;
	} else {
		zv_siginfo si = { .si_signo = SIGSTOP_, .si_code = 0x80 };
		zv_signal_post(t, &si);
	}
}

static void pt_clone_after(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags)
{
	uint64_t cf = t->pt.clone_flags;
	if (cf) /* written only when set: after a fork the page is the child's too */
		t->pt.clone_flags = 0;
	if (!(cf >> 63) || child <= 0 || !t->pt.slot) {
		if (t->pt.child_slot)
			t->pt.child_slot = NULL;
		return;
	}
	child_started(t);
	int ev = child_event(flags);
	if (ev && event_on(t->pt.slot, ev))
		event_stop(t, uc, ev, (uint64_t)child);
}

static void pt_task_start(struct zv_thread *t, struct zv_ucontext *uc)
{
	(void)uc;
	struct zv_pt_slot *s = t->pt.slot;
	if (!s)
		return;
	s->htid = t->htid;
	s->pid = t->pid;
	s->hpid = (int)zv_getpid();
	uint64_t e = __atomic_load_n(&zv_pt_me.ending, __ATOMIC_SEQ_CST);
	if (e && !t->is_thread && (int)(e >> 32) == s->hpid) /* a CLONE_VM child process with an ended one's pid */
		__atomic_compare_exchange_n(&zv_pt_me.ending, &e, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	__atomic_store_n(&s->tid, t->tid, __ATOMIC_RELEASE);
	zv_pt_set_bounce(t);
	first_stop(t);
}

static void pt_vfork_done(struct zv_thread *t, struct zv_ucontext *uc, long child)
{
	if (t->pt.slot && event_on(t->pt.slot, PT_EVENT_VFORK_DONE))
		event_stop(t, uc, PT_EVENT_VFORK_DONE, (uint64_t)child);
}

/* A SIGSTOP that came to a fork child before it joined (sigstop.c): its
 * tracer's to see, after the first stop; the host's if it is not traced. */
static void held_stop(struct zv_thread *t)
{
	struct zv_pt_held_stop h = zv_pt_me.held;
	if (!h.set)
		return;
	zv_pt_me.held.set = 0;
	if (t->pt.slot)
		zv_pt_stop_post(t, h.code, h.pid, h.uid);
	else
		zv_sys2(__NR_kill, zv_getpid(), SIGSTOP_);
}

/* A fork child: traced, with an area of its own, if its parent's tracer
 * asked for it; else nothing of its parent's tracing is its. A tracer's
 * child traces nothing. */
static void pt_fork_child(struct zv_thread *t)
{
	/* A parent that neither traced nor was traced leaves nothing to drop
	 * or fold again: nothing is written, so no page is copied. */
	if (!t->pt.slot && !zv_pt_me.traced && !zv_pt_me.area && !zv_pt_me.bell && !zv_pt_me.lock &&
	    !zv_pt_tracing() && !zv_pt_tracer.bell && zv_pt_tracer.bell_fd < 0 && !zv_proc.catch_signals && !t->bounce_all &&
	    !t->tracer_pid && !t->pt.clone_flags)
		return;
	zv_pt_tracer.n = 0;
	zv_pt_tracer.bell = NULL;
	zv_pt_tracer.bell_fd = -1; /* (still open here: it is close-on-exec) */
	memset(zv_pt_tracer.expect, 0, sizeof zv_pt_tracer.expect);
	int follow = t->pt.slot && (t->pt.clone_flags >> 63);
	int tracer = zv_pt_me.tracer_hpid;
	t->pt.slot = NULL;
	t->tracer_pid = 0;
	t->bounce_all = 0;
	t->pt.clone_flags = 0;
	zv_pt_forget();
	int caught = zv_proc.catch_signals;
	zv_proc.catch_signals = 0;
	if (follow) {
		zv_pt_me.tracer_hpid = tracer;
		zv_pt_me.joining = 1;
		int joined = zv_pt_join(t, ZV_PT_JOIN_CHILD, (int)zv_sys0(__NR_getppid)) == 0;
		zv_pt_me.joining = 0;
		if (joined) {
			first_stop(t);
			held_stop(t);
			return;
		}
	}
	if (caught) /* the host's actions follow the guest's again (a fork stays cheap without) */
		zv_signals_reinstall(t->sighand);
	zv_layers_fold();
	held_stop(t);
}

/* PTRACE_EVENT_EXIT, then the exit in the slot (every traced thread of
 * the process when it ends as a whole). */
static void pt_exit(struct zv_thread *t, int code, int sig)
{
	if (!zv_pt_me.traced)
		return;
	int status = sig ? sig & 0xff : (code & 0xff) << 8;
	if (t->pt.slot && event_on(t->pt.slot, PT_EVENT_EXIT) && t->sys_uc)
		event_stop(t, t->sys_uc, PT_EVENT_EXIT, (uint64_t)status);
	/* exit_group or a fatal signal, from any thread: the other traced
	 * threads of the process end with it (stopped ones too, which the
	 * host kills without a word) */
	int whole = sig || (t->is_thread && !t->exit_alone);
	if ((sig || !t->exit_alone) && zv_pt_me.area) {
		struct zv_pt_area *a = zv_pt_me.area;
		/* (the host's pid: a CLONE_VM child process shares zv_proc) */
		uint32_t me = (uint32_t)zv_getpid();
		/* no thread of this process stops from now on */
		__atomic_store_n(&zv_pt_me.ending, (uint64_t)me << 32 | 0x10000 | (uint32_t)status, __ATOMIC_SEQ_CST);
		for (int i = 0; i < a->nslots; i++) {
			struct zv_pt_slot *s = zv_pt_slot_at(a, i);
			if (s->tid > 0 && s->hpid == (int)me && s != t->pt.slot)
				zv_pt_slot_end(s, status);
		}
	}
	zv_pt_exited(t, status);
	/* A tracee's end is its tracer's to see first: natively its parent's
	 * wait finds it only once the tracer has reaped it. The tracer frees
	 * the slot when it reports it (its own child it reports from the
	 * host's wait, so that one does not wait here). */
	struct zv_pt_slot *s = t->pt.slot;
	if (whole && s && zv_sys0(__NR_getppid) != zv_pt_me.tracer_hpid) {
		int tid = t->tid;
		while (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == tid && zv_pt_tracer_alive())
			zv_pt_futex_wait((volatile uint32_t *)&s->tid, (uint32_t)tid, 500);
	}
}

/* A new image of a traced process: it joins its tracer again, then stops
 * for the exec (PTRACE_EVENT_EXEC, or the SIGTRAP of a tracee that was
 * not seized), then at execve's exit for a tracer that stops at calls. */
static struct {
	int tracer_hpid, mode, old_tid;
} carried;

static void pt_exec_start(struct zv_thread *t, struct zv_ucontext *uc)
{
	zv_pt_forget();
	zv_pt_me.tracer_hpid = carried.tracer_hpid;
	if (zv_pt_join(t, carried.old_tid ? ZV_PT_JOIN_EXEC : ZV_PT_JOIN_TRACEME, carried.old_tid) < 0)
		return;
	struct zv_pt_slot *s = t->pt.slot;
	t->pt.mode = carried.mode;
	t->pt.orig_rax = __NR_execve;
	if (event_on(s, PT_EVENT_EXEC))
		event_stop(t, uc, PT_EVENT_EXEC, (uint64_t)carried.old_tid);
	else if (!s->seized)
		post(t, SIGTRAP_, SI_USER, 0);
	/* (a signal already pending is delivered after it, as natively) */
	if (t->pt.slot && t->pt.mode == ZV_PT_SYSCALL) {
		int st = (SIGTRAP_ | sysgood(s)) << 8 | 0x7f;
		uc->mc.rax = 0;
		zv_pt_stop(t, uc, ZV_PT_SYSCALL_EXIT, st, NULL, 0);
	}
	zv_pt_set_bounce(t);
}

/* A tracee's host execve (19) is under way, or failed. */
static void pt_exec(struct zv_thread *t, long nr, const long *a)
{
	(void)nr, (void)a;
	if (t->pt.slot)
		__atomic_store_n(&t->pt.slot->execing, 1, __ATOMIC_RELEASE);
}

static void pt_exec_failed(struct zv_thread *t, long nr)
{
	(void)nr;
	if (t->pt.slot && t->pt.slot->execing)
		__atomic_store_n(&t->pt.slot->execing, 0, __ATOMIC_RELEASE);
}

/* The exec state's field P: the tracer, how it resumed the exec'ing
 * thread, and that thread's tid (PTRACE_EVENT_EXEC's message). */
static int pt_encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	(void)x;
	struct zv_thread *t = zv_current();
	if (!t->pt.slot && t->pt.traceme) /* a vfork child's TRACEME (attach.c): old tid 0 */
		return zv_snprintf(buf, n, "%d.%d.0", (int)zv_sys0(__NR_getppid), ZV_PT_CONT);
	if (!t->pt.slot)
		return -1;
	return zv_snprintf(buf, n, "%d.%d.%d", zv_pt_me.tracer_hpid, t->pt.mode, t->tid);
}

static const char *pt_decode(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	carried.tracer_hpid = (int)zv_parse_dec(s, &s);
	if (*s == '.')
		s++;
	carried.mode = (int)zv_parse_dec(s, &s);
	if (*s == '.')
		s++;
	carried.old_tid = (int)zv_parse_dec(s, &s);
	zv_proc.exec_stop = carried.tracer_hpid > 0;
	return s;
}

ZV_EXEC_FIELD(ptrace, 340, 'P', pt_encode, pt_decode);

ZV_LAYER(ptrace, 050) = {
	.name = "ptrace",
	.sees = pt_sees,
	.active = pt_active,
	.call = pt_call,
	.deliver = pt_deliver,
	.kwork = pt_kwork,
	.to_guest = pt_to_guest,
	.sigsys = pt_sigsys,
	.arrive = pt_arrive,
	.seccomp_trace = pt_seccomp_trace,
	.clone_before = pt_clone_before,
	.clone_after = pt_clone_after,
	.task_start = pt_task_start,
	.vfork_done = pt_vfork_done,
	.fork_child = pt_fork_child,
	.exit = pt_exit,
	.exec = pt_exec,
	.exec_failed = pt_exec_failed,
	.exec_start = pt_exec_start,
};
