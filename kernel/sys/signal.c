/* Guest signals. The guest's dispositions, altstack and SIGSYS bit are
 * virtual; its signal mask is the host's (minus SIGSYS, which the kernel
 * keeps). Every signal the guest handles reaches zv_host_sighandler on the
 * thread's kernel stack: interrupting guest code it is delivered at once by
 * building the guest's frame as the host would; interrupting the kernel it is
 * deferred to the return to the guest, as a real kernel does. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "sys/platform.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/sigshared.h"

void zv_host_set_mask(uint64_t mask, uint64_t *old)
{
	zv_sys4(__NR_rt_sigprocmask, ZV_SIG_SETMASK, &mask, old, 8);
}

/* The mask the guest believes is in force for the context uc. */
uint64_t zv_guest_mask(struct zv_thread *t, struct zv_ucontext *uc)
{
	return uc->uc_sigmask | t->kernel_blocked | (t->sigsys_blocked ? ZV_SIGBIT(SIGSYS) : 0);
}

void defer(struct zv_thread *t, int sig, const zv_siginfo *si)
{
	t->pending_info[sig] = *si;
	/* A fork child before its set-up (sys/proc.c): its pending_set is
	 * still the parent's, which it drops; its own are kept apart. */
	if (t->forking && zv_getpid() != t->forking) {
		__atomic_fetch_or(&t->fork_own, ZV_SIGBIT(sig), __ATOMIC_RELAXED);
		return;
	}
	t->pending_set |= ZV_SIGBIT(sig);
	t->fast.sig_pending = 1;
	zv_plat->need_catchall(t); /* its delivery bounces, a syscall only SUD catches */
}

/* A signal for thread t (the calling one), delivered on its way out. */
void zv_signal_post(struct zv_thread *t, const zv_siginfo *si)
{
	defer(t, si->si_signo, si);
}

/* SIGSYS stays unblocked on the host, which brings the kernel its calls by
 * it: one sent to a guest that blocks it is held here, pending, until the
 * guest unblocks it (LTP's sighold02). Another one meanwhile is lost, as
 * the host loses a standard signal already pending. */
static void hold_sigsys(struct zv_thread *t, const zv_siginfo *si)
{
	if (!t->sigsys_held)
		t->sigsys_info = *si;
	t->sigsys_held = 1;
}

void set_guest_mask(struct zv_thread *t, struct zv_ucontext *uc, uint64_t m)
{
	m &= ~UNBLOCKABLE;
	t->sigsys_blocked = (m & ZV_SIGBIT(SIGSYS)) != 0;
	if (t->sigsys_held && !t->sigsys_blocked) {
		t->sigsys_held = 0;
		defer(t, SIGSYS, &t->sigsys_info); /* delivered on the way out */
	}
	t->faults_blocked = (m & ZV_FAULT_SIGNALS) != 0;
	t->kernel_blocked = zv_kernel_blocked(m);
	uc->uc_sigmask = m & ~zv_kernel_signals();
}

void zv_signal_set_mask(struct zv_thread *t, struct zv_ucontext *uc, uint64_t m)
{
	set_guest_mask(t, uc, m);
}

/* A kernel entry on a signal frame (uc) whose guest blocks SIGSEGV or
 * SIGBUS: the kernel's own accesses to guest memory must still fault into
 * zvisor (EFAULT for a bad pointer), and a blocked fault signal would kill
 * the process instead. So they are unblocked on the host until the frame's
 * sigreturn puts the guest's mask back; one that is sent to the guest
 * meanwhile is deferred, and on the way out goes back to the host, pending,
 * as the guest blocks it. One already pending stays blocked: unblocked, it
 * would arrive at every entry and cancel the call again and again. (A
 * fast call opens them for itself: zv_open_faults.) */
void zv_unblock_faults(struct zv_thread *t, struct zv_ucontext *uc)
{
	t->faults_blocked = (uc->uc_sigmask & ZV_FAULT_SIGNALS) != 0;
	if (!t->faults_blocked)
		return;
	uint64_t pending = 0;
	zv_sys2(__NR_rt_sigpending, &pending, 8);
	uint64_t unblock = uc->uc_sigmask & ZV_FAULT_SIGNALS & ~pending;
	if (unblock)
		zv_host_set_mask(uc->uc_sigmask & ~unblock, NULL);
}

/* The same for a fast call, which has no frame and no sigreturn: the
 * fault signals the guest blocks are opened on the host by the first call
 * that may touch guest memory, and stay open (`faults_open`) until the
 * thread next enters zvisor through a signal outside the kernel: a SIGSYS
 * bounce or frame, or a signal that interrupts guest code
 * (zv_close_faults_in). 0 when one is pending on the host already: the
 * call bounces, and the frame keeps it blocked. */
int zv_open_faults(struct zv_thread *t)
{
	uint64_t pending = 0, old = 0;
	const uint64_t faults = ZV_FAULT_SIGNALS;
	zv_sys2(__NR_rt_sigpending, &pending, 8);
	if (pending & ZV_FAULT_SIGNALS)
		return 0;
	zv_sys4(__NR_rt_sigprocmask, ZV_SIG_UNBLOCK, &faults, &old, 8);
	t->faults_open = old & ZV_FAULT_SIGNALS;
	return 1;
}

/* Closes what zv_open_faults opened, in the context uc that a signal
 * taken outside the kernel returns to: its sigreturn blocks them again
 * on the host, and uc's mask is the guest's once more. Returns them. */
uint64_t zv_close_faults_in(struct zv_thread *t, struct zv_ucontext *uc)
{
	uint64_t open = t->faults_open;
	t->faults_open = 0;
	uc->uc_sigmask |= open;
	return open;
}

/* With --count a fatal signal must still let the leader print its report, so
 * zvisor catches the signals whose default action kills; and those that dump
 * core always, so that the core shows the guest where it took the signal
 * (sys/sigdeath.c). */
static int catch_default(int sig)
{
	if (sig == SIGSEGV || sig == SIGBUS)
		return 1; /* faults on guest memory inside the kernel become EFAULT */
	if (zv_sig_dumps(sig))
		return 1;
	if (zv_proc.catch_signals)
		return sig != SIGKILL && sig != SIGSTOP; /* a tracer sees every signal first */
	return (zv_proc.count_fd >= 0 || zv_proc.trace.on) && !default_ignores(sig) && !default_stops(sig) &&
	       sig != SIGKILL;
}

void set_host_action(struct zv_sighand *sh, int sig)
{
	if (sig == SIGSYS || sig == SIGKILL || sig == SIGSTOP)
		return;
	if (zv_kernel_blocked(ZV_SIGBIT(sig))) { /* --checkpoint-on's: zvisor's, whatever the guest asks */
		struct zv_ksigaction k = { (uint64_t)zv_host_sighandler, ZV_SA_SIGINFO | ZV_SA_ONSTACK | ZV_SA_RESTORER,
					   (uint64_t)zv_sigreturn, ~0UL };
		zv_sys4(__NR_rt_sigaction, sig, &k, NULL, 8);
		return;
	}
	struct zv_ksigaction *g = &sh->act[sig], h;
	uint64_t keep = g->flags & (ZV_SA_NOCLDSTOP | ZV_SA_NOCLDWAIT);
	if ((g->handler == ZV_SIG_IGN && !zv_proc.catch_signals) || (g->handler == ZV_SIG_DFL && !catch_default(sig))) {
		h = (struct zv_ksigaction){ g->handler, keep | ZV_SA_RESTORER, (uint64_t)zv_sigreturn, 0 };
	} else {
		/* No SA_RESTART: a host call made for the guest must return
		 * EINTR so the kernel can deliver, then restart it itself. */
		h = (struct zv_ksigaction){ (uint64_t)zv_host_sighandler,
					    keep | ZV_SA_SIGINFO | ZV_SA_ONSTACK | ZV_SA_RESTORER,
					    (uint64_t)zv_sigreturn, ~0UL };
	}
	zv_sys4(__NR_rt_sigaction, sig, &h, NULL, 8);
}

/* The dispositions the guest inherits (ignored signals survive execve):
 * *ignored when the exec'ing image said (its ignored signals are the
 * host's, set by set_host_action), else read from the host; then the host
 * actions that match them. */
void zv_signals_init(struct zv_sighand *sh, const uint64_t *ignored)
{
	for (int sig = 1; sig <= 64; sig++) {
		struct zv_ksigaction old;
		sh->act[sig] = (struct zv_ksigaction){ 0 };
		if (sig == SIGSYS && ignored && (*ignored & ZV_SIGBIT(sig)))
			sh->act[sig].handler = ZV_SIG_IGN; /* (the host's action is the kernel's: only the exec state tells) */
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSYS)
			continue;
		if (ignored ? (*ignored & ZV_SIGBIT(sig)) != 0
			    : zv_sys4(__NR_rt_sigaction, sig, NULL, &old, 8) == 0 && old.handler == ZV_SIG_IGN)
			sh->act[sig].handler = ZV_SIG_IGN;
		if (catch_default(sig) || zv_kernel_blocked(ZV_SIGBIT(sig)))
			set_host_action(sh, sig);
	}
}

/* Something must happen on t's way out of the kernel, where uc caught it
 * (an exec's request to exit, sys/exec_reset.c): the way out goes through
 * zv_signals_on_exit, which bounces, a syscall only SUD catches. */
void zv_signals_leave_kernel(struct zv_thread *t, struct zv_ucontext *uc)
{
	t->fast.sig_pending = 1;
	zv_plat->need_catchall(t); /* the way out bounces, a syscall only SUD catches */
	zv_kernel_interrupted(uc);
}

/* An exec made in this process (kernel/inexec.c), as the host's
 * flush_signal_handlers and setup_new_exec: handled signals go back to
 * their default, ignored ones stay ignored, every action loses its flags,
 * mask and restorer; the altstack goes, and so does a SIGSYS held for the
 * thread. The host's action changes only where the guest's handler or
 * SA_NOCLD* flags were there. */
void zv_signals_exec(struct zv_thread *t)
{
	struct zv_sighand *sh = t->sighand;
	for (int sig = 1; sig <= 64; sig++) {
		struct zv_ksigaction *g = &sh->act[sig];
		if (!g->handler && !g->flags && !g->mask && !g->restorer)
			continue;
		int host = g->handler > ZV_SIG_IGN || (g->flags & (ZV_SA_NOCLDSTOP | ZV_SA_NOCLDWAIT));
		*g = (struct zv_ksigaction){ g->handler == ZV_SIG_IGN ? ZV_SIG_IGN : ZV_SIG_DFL, 0, 0, 0 };
		if (host)
			set_host_action(sh, sig);
	}
	t->guest_ss = (struct zv_stack){ 0, ZV_SS_DISABLE, 0, 0 };
	t->sigsys_held = 0;
}

/* A restored process (cr/restore.c): the host's actions for the guest's
 * dispositions, which came back with the kernel's memory. */
void zv_signals_reinstall(struct zv_sighand *sh)
{
	for (int sig = 1; sig <= 64; sig++)
		set_host_action(sh, sig);
}

uint64_t zv_signals_ignored(const struct zv_sighand *sh)
{
	uint64_t m = 0;
	for (int sig = 1; sig <= 64; sig++)
		if (sh->act[sig].handler == ZV_SIG_IGN)
			m |= ZV_SIGBIT(sig);
	return m;
}

/* clone3's CLONE_CLEAR_SIGHAND: handled signals go back to their default
 * (the host does the same for its own table). */
void zv_clear_handlers(struct zv_sighand *sh)
{
	for (int sig = 1; sig <= 64; sig++)
		if (sh->act[sig].handler > ZV_SIG_IGN)
			sh->act[sig] = (struct zv_ksigaction){ 0 };
}

int on_guest_altstack(struct zv_thread *t, uint64_t sp)
{
	struct zv_stack *ss = &t->guest_ss;
	if (ss->ss_flags & ZV_SS_AUTODISARM)
		return 0;
	return ss->ss_size && sp > ss->ss_sp && sp - ss->ss_sp <= ss->ss_size;
}

int altstack_flags(struct zv_thread *t, uint64_t sp)
{
	struct zv_stack *ss = &t->guest_ss;
	if (!ss->ss_size || (ss->ss_flags & ZV_SS_DISABLE))
		return ZV_SS_DISABLE;
	return (on_guest_altstack(t, sp) ? ZV_SS_ONSTACK : 0) | (ss->ss_flags & ZV_SS_AUTODISARM);
}

/* Queues sig for this thread on the host again, pending while blocked. A
 * SIGSEGV or SIGBUS from kill() (SI_USER) went to the process: one caught
 * while the kernel opened them for a call (zv_unblock_faults,
 * zv_open_faults) goes back to the process, where another thread may take
 * it, as natively it never left. */
static void give_back(struct zv_thread *t, int sig, const zv_siginfo *si)
{
	long pid = zv_getpid(); /* not zv_proc.pid: a vfork child shares it */
	if ((ZV_SIGBIT(sig) & ZV_FAULT_SIGNALS) && si->si_code == 0 /* SI_USER */ &&
	    zv_sys3(__NR_rt_sigqueueinfo, pid, sig, si) == 0)
		return;
	if (zv_sys4(__NR_rt_tgsigqueueinfo, pid, t->htid, sig, si) < 0)
		zv_sys3(__NR_tgkill, pid, t->htid, sig);
}

/* sig, a fault signal the guest blocks, came to guest code while it was
 * open on the host (zv_close_faults_in): what the host does with a blocked
 * one. One sent goes back to the host, pending (1: done). The guest's own
 * fault is forced, as force_sig_fault does: its action becomes the default
 * and delivery goes on (0), where a fault with the default action faults
 * again, now blocked, and the host kills. */
int zv_blocked_fault(struct zv_thread *t, int sig, const zv_siginfo *si)
{
	if (!zv_signal_is_fault(sig, si)) {
		give_back(t, sig, si);
		return 1;
	}
	struct zv_sighand *sh = t->sighand;
	zv_lock(&sh->lock);
	sh->act[sig].handler = ZV_SIG_DFL;
	zv_unlock(&sh->lock);
	return 0;
}

/* Copies a signal frame and its xsave image to the guest's stack. The host
 * fails a delivery whose frame it cannot write (a read-only altstack, a
 * stack past its end) and forces SIGSEGV instead (LTP's signal06). When a
 * SIGSEGV handler could then run, the copy is made with faults unblocked on
 * the host and guarded: -EFAULT. Otherwise a fault kills the process with
 * SIGSEGV, since zvisor's handlers block it, as the host would kill it. */
static long put_frame(struct zv_thread *t, int recoverable, struct zv_sigframe *f, const struct zv_sigframe *fr,
		      void *fp, const void *fpsrc, size_t fpsize)
{
	if (!recoverable) {
		memcpy(fp, fpsrc, fpsize);
		memcpy(f, fr, sizeof *fr);
		return 0;
	}
	uint64_t old, outer = t->guard_sp, before = t->pending_set;
	int was_pending = t->fast.sig_pending;
	zv_host_set_mask(~ZV_FAULT_SIGNALS, &old);
	long r = zv_copy_guarded(fp, fpsrc, fpsize, &t->guard_sp);
	if (r == 0)
		r = zv_copy_guarded(f, fr, sizeof *fr, &t->guard_sp);
	t->guard_sp = outer;
	zv_host_set_mask(old, NULL);
	/* A SIGSEGV or SIGBUS that was pending on the host came in meanwhile:
	 * back to the host, which delivers it after this frame, on top. */
	uint64_t in = t->pending_set & ~before & ZV_FAULT_SIGNALS;
	for (int sig = 1; in; sig++) {
		if (in & ZV_SIGBIT(sig)) {
			in &= ~ZV_SIGBIT(sig);
			t->pending_set &= ~ZV_SIGBIT(sig);
			give_back(t, sig, &t->pending_info[sig]);
		}
	}
	if (!t->pending_set)
		t->fast.sig_pending = was_pending;
	return r;
}

/* Whether a failed frame for sig would be followed by a SIGSEGV handler. */
static int segv_handled(struct zv_thread *t, int sig, uint64_t blocked)
{
	return sig != SIGSEGV && t->sighand->act[SIGSEGV].handler > ZV_SIG_IGN &&
	       !(blocked & ZV_SIGBIT(SIGSEGV));
}

/* Builds the guest's signal frame for sig on the guest stack and points the
 * context uc at the guest's handler, exactly as the host's signal delivery
 * does (rt_sigframe, xsave image, red zone, altstack, masks, flags). */
static void act_on(struct zv_thread *t, int sig, const zv_siginfo *si, struct zv_ucontext *uc)
{
	struct zv_sighand *sh = t->sighand;
	zv_lock(&sh->lock);
	struct zv_ksigaction act = sh->act[sig];
	if (act.handler > ZV_SIG_IGN && (act.flags & ZV_SA_RESETHAND)) {
		/* As the host: only the handler is reset; sigaction still
		 * reports the other flags (SA_SIGINFO included). */
		sh->act[sig].handler = ZV_SIG_DFL;
		set_host_action(sh, sig);
	}
	zv_unlock(&sh->lock);
	if (act.handler == ZV_SIG_IGN)
		return;
	zv_event_signal(t, sig, si);
	if (act.handler == ZV_SIG_DFL) {
		zv_signal_default(t, si, uc);
		return;
	}
	if (!(act.flags & ZV_SA_RESTORER)) {
		/* x86-64 has no default restorer: the host fails the frame. */
		zv_siginfo segv = { .si_signo = SIGSEGV, .si_code = 0x80 /* SI_KERNEL */ };
		zv_signal_default(t, &segv, uc);
		return;
	}
	uint64_t saved_mask = zv_guest_mask(t, uc);
	uint64_t base_mask = t->delivery_mask_set ? t->delivery_mask : saved_mask;
	uint64_t sp = uc->mc.rsp;
	int ss_flags = altstack_flags(t, sp);
	if ((act.flags & ZV_SA_ONSTACK) && ss_flags == 0)
		sp = t->guest_ss.ss_sp + t->guest_ss.ss_size;
	else
		sp -= 128; /* the red zone of the interrupted code */

	const void *host_fp = (const void *)uc->mc.fpstate;
	size_t fpsize = host_fp ? zv_fpstate_size(host_fp) : 0;
	sp = (sp - fpsize) & ~63UL;
	uint64_t fp = sp;
	sp -= sizeof(struct zv_sigframe);
	sp = (sp & ~15UL) - 8; /* as if 'call' had pushed pretcode */

	struct zv_sigframe fr;
	fr.pretcode = act.restorer;
	fr.uc.uc_flags = uc->uc_flags;
	fr.uc.uc_link = 0;
	fr.uc.uc_stack = t->guest_ss;
	fr.uc.uc_stack.ss_flags = ss_flags;
	fr.uc.mc = uc->mc;
	if (zv_plat->guest_ip) /* in code the platform moved: the original address */
		fr.uc.mc.rip = zv_plat->guest_ip(uc->mc.rip, uc->mc.rcx);
	fr.uc.mc.fpstate = fpsize ? fp : 0;
	fr.uc.uc_sigmask = saved_mask;
	fr.info = *si;
	if (si->si_code == 0 || si->si_code == -1 || si->si_code == -3 || si->si_code == -6 ||
	    (sig == 17 /* SIGCHLD */ && si->si_code >= 1 && si->si_code <= 6 /* CLD_* */))
		/* sent by a process (kill, sigqueue, mq, tgkill), or a child's: a restored one by its old pid */
		fr.info.kill.pid = (int32_t)zv_guest_id(si->kill.pid);
	struct zv_sigframe *f = (struct zv_sigframe *)sp;
	if (put_frame(t, segv_handled(t, sig, base_mask), f, &fr, (void *)fp, host_fp, fpsize) < 0) {
		zv_siginfo segv = { .si_signo = SIGSEGV, .si_code = 0x80 /* SI_KERNEL */ };
		act_on(t, SIGSEGV, &segv, uc); /* sig is lost, as on the host */
		return;
	}
	if (t->guest_ss.ss_flags & ZV_SS_AUTODISARM) {
		t->guest_ss.ss_sp = 0;
		t->guest_ss.ss_size = 0;
		t->guest_ss.ss_flags = ZV_SS_DISABLE;
	}

	/* The handler returns through a restorer, a syscall left in place. */
	t->handler_depth++;
	zv_plat->need_catchall(t);
	uc->mc.rip = act.handler;
	uc->mc.rsp = sp;
	uc->mc.rdi = sig;
	uc->mc.rsi = (uint64_t)&f->info;
	uc->mc.rdx = (uint64_t)&f->uc;
	uc->mc.rax = 0;
	uc->mc.eflags &= ~(0x400UL | 0x10000UL | 0x100UL); /* DF, RF, TF */
	if (fpsize) {
		/* The handler starts with default x87 and SSE control words. */
		*(uint16_t *)host_fp = 0x37f;
		*(uint32_t *)((char *)host_fp + 24) = 0x1f80;
	}
	uint64_t m = base_mask | act.mask;
	if (!(act.flags & ZV_SA_NODEFER))
		m |= ZV_SIGBIT(sig);
	set_guest_mask(t, uc, m);
}

/* Gives the layers (a tracer's signal-delivery stop) the signal first: it
 * may be suppressed or replaced, and a replacement the guest blocks goes
 * back to the host, pending, as natively it is queued again. 0: nothing
 * more to do. From here on the sender's uid is the guest's (virtual ids),
 * for the tracer and the handler alike; one given back has the host's
 * again unless the tracer set another. */
static int first_seen(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc)
{
	uint32_t huid = si->kill.uid, guid = huid;
	if (zv_ids_sender_hook && zv_si_names_uid(sig, si->si_code))
		si->kill.uid = guid = zv_ids_sender_hook(t, si->kill.pid, 0, huid);
	int to = zv_event_deliver(t, sig, si, uc);
	if (to && to != sig) {
		si->si_signo = to;
		uint64_t blocked = t->delivery_mask_set ? t->delivery_mask : zv_guest_mask(t, uc);
		if (blocked & ZV_SIGBIT(to)) {
			if (guid != huid && si->kill.uid == guid && zv_si_names_uid(to, si->si_code))
				si->kill.uid = huid;
			give_back(t, to, si);
			return 0;
		}
	}
	return to;
}

static void deliver(struct zv_thread *t, int sig, const zv_siginfo *si, struct zv_ucontext *uc)
{
	zv_siginfo info = *si;
	sig = first_seen(t, sig, &info, uc);
	if (sig)
		act_on(t, sig, &info, uc);
}

/* A signal that interrupted the kernel is deferred, and the host must not
 * interrupt it again with the same signal before the guest has it: a POSIX
 * timer re-queues its signal as soon as the last one is taken, and at a
 * microsecond's interval the host would deliver it again at every return
 * from this handler, so the kernel would never run another instruction
 * (stress-ng --timer). So the interrupted context (uc) resumes with sig
 * blocked, as a real kernel keeps a pending signal until its delivery.
 * Inside a SIGSYS entry that context is the kernel's, and the entry's
 * sigreturn puts the guest's mask back. In a fast call it is the guest's
 * mask that the bounce frame will capture: the bits are noted (host_held)
 * and taken out of that frame (zv_signals_unhold), so the guest never sees
 * them. (sys_uc is NULL too at a SIGSYS handler's start and end, whose
 * sigreturn drops the hold: the SIGSYS path forgets such a note,
 * intercept/plat_catchall.c.) Further queued instances stay with the host. */
void zv_signal_defer_held(struct zv_thread *t, int sig, const zv_siginfo *si, struct zv_ucontext *uc)
{
	defer(t, sig, si);
	/* Never SIGSYS (a blocked SIGSYS from SUD or seccomp kills) nor a
	 * signal the CPU may raise in the kernel or a stub before delivery. */
	const uint64_t never = ZV_SIGBIT(SIGSYS) | CPU_SIGNALS | UNBLOCKABLE;
	if (!(ZV_SIGBIT(sig) & never) && !(uc->uc_sigmask & ZV_SIGBIT(sig))) {
		uc->uc_sigmask |= ZV_SIGBIT(sig);
		if (!t->sys_uc)
			t->host_held |= ZV_SIGBIT(sig);
	}
}

/* The bounce frame of a fast call that deferred signals caught the mask
 * holding them: it gets the guest's mask back, before anything reads or
 * copies it; the kernel's live mask keeps holding them until the frame's
 * sigreturn. host_held is nonzero only between such a deferral and its
 * bounce (a fast exit with a signal pending always bounces). */
void zv_signals_unhold(struct zv_thread *t, struct zv_ucontext *uc)
{
	uc->uc_sigmask &= ~t->host_held;
	t->host_held = 0;
}

int zv_signal_is_fault(int sig, const zv_siginfo *si)
{
	return si->si_code > 0 && (CPU_SIGNALS & ZV_SIGBIT(sig));
}

/* A handled signal that interrupted the guest (sys/hostsig.c has sorted out
 * the kernel's own cases and the platform's view of page 0): delivered to
 * the guest's handler, or, for the guest's own fault with no handler, left
 * to the host's default so the process dies exactly as natively. */
void zv_signal_from_guest(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc)
{
	if (sig == SIGSYS && t->sigsys_blocked) {
		hold_sigsys(t, si);
		return;
	}
	int was = sig;
	if (!(sig = first_seen(t, sig, si, uc)))
		return;
	if (sig == was && zv_signal_is_fault(sig, si) && sig != 5 && sig != 8 &&
	    t->sighand->act[sig].handler == ZV_SIG_DFL) {
		/* Restore the host's default and let the instruction fault
		 * again (core dump included). */
		zv_report_at_exit();
		struct zv_ksigaction dfl = { ZV_SIG_DFL, ZV_SA_RESTORER, (uint64_t)zv_sigreturn, 0 };
		zv_sys4(__NR_rt_sigaction, sig, &dfl, NULL, 8);
		if (zv_in_trampoline(uc->mc.rip))
			zv_die_by_signal(sig); /* page 0 would not fault the same way twice */
		return;
	}
	act_on(t, sig, si, uc);
}

/* A feature's work that must run with the guest's registers at hand (a
 * peer's knock, a tracer's stop): at once when uc interrupted guest code,
 * else on the way back to the guest, where a blocking call it interrupts
 * is made again, as after a stop and continue. */
void zv_kwork_request(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (!zv_interrupted_kernel(t, uc)) {
		zv_event_kwork(t, uc);
		if (t->fast.sig_pending) /* what it posted, or asked for meanwhile */
			zv_signals_on_exit(t, uc);
		return;
	}
	t->kwork = 1;
	t->fast.sig_pending = 1;
	zv_plat->need_catchall(t); /* the way out bounces, a syscall only SUD catches */
	zv_kernel_interrupted(uc);
}

/* The kernel work asked for, then the deferred signals, with every host
 * signal blocked; 1 if a forced signal kills at the guest's instruction. */
static int kwork_and_signals(struct zv_thread *t, struct zv_ucontext *uc)
{
	while (t->kwork) { /* (one asked for meanwhile is done too: nothing comes between here and sigreturn) */
		t->kwork = 0;
		zv_event_kwork(t, uc);
	}
	if (zv_signal_death_due(t, uc))
		return 1; /* (sys/sigdeath.c) */
	while (t->pending_set && !t->dying) {
		int sig = __builtin_ctzl(t->pending_set) + 1;
		t->pending_set &= ~ZV_SIGBIT(sig);
		zv_siginfo info = t->pending_info[sig];
		uint64_t blocked = t->delivery_mask_set ? t->delivery_mask : zv_guest_mask(t, uc);
		if (blocked & ZV_SIGBIT(sig)) {
			if (sig == SIGSYS) {
				hold_sigsys(t, &info);
				continue;
			}
			/* Blocked by now: give it back to the host, which keeps it
			 * pending until the guest unblocks it. */
			give_back(t, sig, &info);
			continue;
		}
		deliver(t, sig, &info, uc);
	}
	return 0;
}

/* Delivers the signals deferred during this kernel entry, on the way back
 * to the guest. All host signals stay blocked until the final sigreturn
 * restores the guest's mask, so none can slip in between; but a ptrace
 * stop in deliver sleeps with SIGSYS open, and work asked for then (a
 * tracer's SIGSTOP to this thread, a knock) takes another pass, or it
 * would wait for the next signal (gdb waited for that stop for ever). */
void zv_signals_on_exit(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (!t->fast.sig_pending) {
		t->delivery_mask_set = 0;
		return;
	}
	t->dying = 0; /* only this pass's own death counts (a handler set meanwhile undoes an earlier one) */
	if (t->exec_exit)
		zv_exec_thread_exit(t); /* another thread execs (sys/exec_reset.c) */
	zv_event_to_guest(t, uc); /* a checkpoint parks here: every register is in uc now */
	zv_host_set_mask(~0UL, NULL);
	do {
		if (kwork_and_signals(t, uc))
			return; /* a forced signal kills at the guest's instruction */
	} while (t->kwork && !t->dying);
	if (t->dying)
		return; /* uc is the guest's instruction, where the host kills */
	t->fast.sig_pending = 0;
	t->sud_remake = 0;
	t->delivery_mask_set = 0;
	if (zv_plat->resume_ip) /* a restarted call: rip back on a moved syscall */
		uc->mc.rip = zv_plat->resume_ip(uc->mc.rip);
}

/* Whether a deferred signal t does not block will run a guest handler;
 * *restart: whether every such handler has SA_RESTART. */
static int handlers_due(struct zv_thread *t, struct zv_ucontext *uc, int *restart)
{
	uint64_t blocked = t->delivery_mask_set ? t->delivery_mask : zv_guest_mask(t, uc);
	int handled = 0;
	*restart = 1;
	for (int sig = 1; sig <= 64; sig++) {
		if (!(t->pending_set & ZV_SIGBIT(sig)) || (blocked & ZV_SIGBIT(sig)))
			continue;
		struct zv_ksigaction *a = &t->sighand->act[sig];
		handled |= a->handler > ZV_SIG_IGN;
		if (a->handler > ZV_SIG_IGN && !(a->flags & ZV_SA_RESTART))
			*restart = 0; /* a handler without SA_RESTART sees EINTR */
	}
	return handled;
}

int zv_signal_handler_due(struct zv_thread *t, struct zv_ucontext *uc)
{
	int restart;
	return handlers_due(t, uc, &restart);
}

int zv_restart_on_eintr(struct zv_thread *t, long nr, struct zv_ucontext *uc)
{
	const long a[6] = { (long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx, (long)uc->mc.r10 };
	int restart, handled = handlers_due(t, uc, &restart);
	if (!handled) {
		if (zv_call_restarts(t))
			t->cr.restart_nr = (int)nr + 1; /* a checkpoint's park may still decide otherwise */
		return 1; /* no handler runs (a checkpoint's freeze, a feature's work, a signal
			   * zvisor caught that the guest ignores): as after a stop and continue */
	}
	if (zv_sys_never_restarted(nr, a)) /* signal(7), the row's restart class */
		return 0;
	return restart;
}
