/* The path every platform takes into and out of the kernel for one guest
 * call: the arguments from the guest's registers, the layers and the
 * handler (sys/layers.c), counting, the result registers as the host's
 * `syscall` leaves them, and the restart of a call a signal interrupted.
 * Signals deferred meanwhile are delivered by the caller on its way out
 * (zv_signals_on_exit), or by the fast path's bounce. */
#include "zvisor.h"
#include "sys/procself.h"
#include "sys/layer.h"
#include "sys/tsc.h"
#include "lib/syscall.h"

/* A host call for the guest (args: number, then arguments) that a deferred
 * signal may stop before it begins: then -EINTR, with call_cancelled set
 * so that the call is made again after the handler (zv_frame_result), as
 * natively the handler would have run before it. */
long zv_host_call_args(struct zv_thread *t, const long args[7])
{
	long r = zv_sc_cancellable(args, &t->fast.sig_pending);
	if (r == -EMFILE && !t->vfork_child && zv_procself_drop()) /* nothing was made: it can be made again */
		r = zv_sc_cancellable(args, &t->fast.sig_pending);
	if (r != ZV_CANCELLED)
		return r;
	t->call_cancelled = 1;
	return -EINTR;
}

long zv_host_call(struct zv_thread *t, long nr, long a, long b, long c, long d, long e, long f)
{
	long args[7] = { nr, a, b, c, d, e, f };
	return zv_host_call_args(t, args);
}

/* The kernel's side of a guest call, under the fault guard
 * (zv_call_guarded): every layer that sees it, then its handler or the
 * host. */
long zv_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr)
{
	long a[6] = {
		(long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx,
		(long)uc->mc.r10, (long)uc->mc.r8, (long)uc->mc.r9,
	};
	return zv_layers_call(t, uc, nr, a);
}

void (*zv_entry_counter)(long nr, long ret, int vdso);

/* --count's row for a call that returned r: counted once, where it was
 * made (a fork child returns from the parent's call; a cancelled call
 * counts when it is made again, and so does one a checkpoint interrupted). */
void zv_entry_count(struct zv_thread *t, long nr, long r, int vdso)
{
	void (*counter)(long, long, int) = zv_entry_counter;
	if (counter && !t->call_cancelled && !zv_sys_in_child(nr, r) && !(r == -EINTR && zv_call_restarts(t)))
		counter(nr, r == ZV_NORESULT ? 0 : r, vdso);
}

/* Sets the result registers of guest call nr, which returned r, in a signal
 * frame's context. A call interrupted by a handler is restarted as the host
 * does; one that never started (a signal was deferred before it) is always
 * restarted: natively the handler would have run first. */
void zv_frame_result(struct zv_thread *t, struct zv_ucontext *uc, long nr, long r)
{
	if (r == ZV_NORESULT)
		return;
	if (r == -EINTR && t->fast.sig_pending && (t->call_cancelled || zv_restart_on_eintr(t, nr, uc))) {
		/* Re-execute the syscall after the handler: rip back onto the
		 * instruction (2 bytes, `syscall` or `call *%rax`). */
		uc->mc.rip -= 2;
		uc->mc.rax = nr;
		t->restarted = 1;
		t->restart_rip = uc->mc.rip;
		t->restart_nr = nr;
	} else {
		uc->mc.rax = r;
		t->restarted = 0;
	}
}

/* Runs guest call nr for the context of a signal frame whose rip is the
 * return address, and sets the registers the host's syscall sets. */
void zv_frame_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr)
{
	/* The host's syscall instruction leaves the return address in rcx and
	 * the flags in r11; so does ours. */
	uc->mc.rcx = uc->mc.rip;
	uc->mc.r11 = uc->mc.eflags;
	long r;
	/* Whether the call came from the vDSO's stubs: known by its return
	 * address now, not after the call (rt_sigreturn moves rip anywhere,
	 * into a stub too when the signal caught one). */
	int vdso = zv_vdso_call(uc->mc.rip);
	t->call_cancelled = 0;
	if (nr < 0 || (nr & 0x40000000)) {
		r = -ENOSYS; /* x32 calls are not supported */
	} else {
		uint64_t outer_guard = t->guard_sp;
		r = zv_call_guarded(t, uc, nr, &t->guard_sp);
		t->guard_sp = outer_guard;
		if (r == -EFAULT && nr == __NR_rt_sigreturn)
			zv_die_by_signal(11); /* a bad frame: the host forces SIGSEGV */
	}
	zv_entry_count(t, nr, r, vdso);
	zv_frame_result(t, uc, nr, r);
}
