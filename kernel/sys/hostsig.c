/* The host's side of a handled signal: every signal the guest handles, and
 * the faults, reach zv_host_sighandler on the thread's kernel stack. Here
 * the host's view is sorted out: a signal that interrupted the kernel
 * (deferred, or a fault on a bad guest pointer), one that caught a thread
 * on its way into the kernel, a fault that is the platform's own (a call
 * beyond zpoline's sled, page 0's trampoline). What is left interrupted the
 * guest and goes to sys/signal.c, which speaks of the guest's signals. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/calls.h"
#include "sys/platform.h"
#include "lib/syscall.h"
#include "lib/fmt.h"

#define SIGSEGV 11
#define SIGBUS 7
#define SEGV_MAPERR 1
#define SEGV_ACCERR 2
#define SEGV_PKUERR 4

/* A signal or fault that interrupted zvisor's own code (or the host's vDSO,
 * called by the kernel). */
static void in_kernel(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc)
{
	uint64_t ip = uc->mc.rip;
	if (zv_signal_is_fault(sig, si)) {
		if ((sig == SIGSEGV || sig == SIGBUS) && t->guard_sp) {
			/* A bad pointer from the guest: the call fails. */
			uc->mc.rsp = t->guard_sp;
			uc->mc.rip = (uint64_t)zv_guard_fault;
			t->guard_sp = 0;
			if (t->in_host_vdso) {
				t->in_host_vdso = 0;
				t->sud_selector = 1;
			}
			return;
		}
		if (ip == (uint64_t)zv_guest_jump)
			zv_die_by_signal(sig); /* a bad entry point: the guest dies as natively */
		zv_dprintf(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2,
			   "zvisor: fault in the kernel (signal %d at ip %p, address %p)\n", sig, (void *)ip,
			   (void *)si->sys.call_addr);
		zv_die_by_signal(sig);
	}
	zv_signal_defer_held(t, sig, si, uc);
	zv_kernel_interrupted(uc);
}

/* Something must happen on the way back to the guest (a deferred signal,
 * a checkpoint's freeze) of a thread interrupted in the kernel at uc: a
 * blocking call not yet started is not started, and a fast call about to
 * return leaves through SIGSYS, whose frame the way out needs. */
void zv_kernel_interrupted(struct zv_ucontext *uc)
{
	uint64_t ip = uc->mc.rip;
	if (ip >= (uint64_t)zv_sc_begin && ip < (uint64_t)zv_sc_end)
		uc->mc.rip = (uint64_t)zv_sc_cancel; /* do not start the blocking call */
	else if (zv_plat->kernel_ip)
		uc->mc.rip = zv_plat->kernel_ip(ip); /* a fast return leaves through SIGSYS, the SIGSYS restorer looks again */
}

/* Whether the thread runs the kernel (or on its way in) at uc, where what
 * it is asked must wait for the way out. */
int zv_interrupted_kernel(struct zv_thread *t, struct zv_ucontext *uc)
{
	uint64_t ip = uc->mc.rip;
	return zv_in_kernel_text(ip) || t->in_host_vdso || zv_in_trampoline(ip);
}

void zv_host_sighandler(int sig, zv_siginfo *si, void *ucv)
{
	struct zv_ucontext *uc = ucv;
	struct zv_thread *t = zv_current();
	uint64_t ip = uc->mc.rip, closed = 0;
	if (t->faults_open && !zv_in_kernel_text(ip) && !t->in_host_vdso)
		closed = zv_close_faults_in(t, uc); /* the guest's mask is uc's again */
	if (si->si_code == -1 /* SI_QUEUE */)
		zv_event_arrive(t, sig, si); /* another kernel's SIGCHLD (the guest's ptrace) */
	if ((zv_kernel_signals() & ~ZV_SIGBIT(31) & ZV_SIGBIT(sig)) && si->si_code <= 0) {
		zv_event_own_signal(t, sig, uc); /* --checkpoint-on's: sent by a process, never the guest's */
		return;
	}
	if (zv_in_kernel_text(ip) || t->in_host_vdso) {
		in_kernel(t, sig, si, uc);
		return;
	}
	int fault = zv_signal_is_fault(sig, si);
	if (zv_in_trampoline(ip) && !fault) {
		zv_signal_defer_held(t, sig, si, uc); /* on its way into the kernel: the fast exit delivers it */
		return;
	}
	if (fault && sig == SIGSEGV) {
		if (zv_plat->fault && zv_plat->fault(t, uc)) { /* zpoline: beyond the sled */
			zv_signals_on_exit(t, uc); /* a syscall beyond the sled, now made */
			return;
		}
		if (zv_in_trampoline(ip)) {
			/* A stray jump into page 0 past the sled: as if it were
			 * unmapped. */
			si->si_code = SEGV_MAPERR;
			si->sys.call_addr = ip;
		} else if ((si->si_code == SEGV_ACCERR || si->si_code == SEGV_PKUERR) &&
			   zv_in_trampoline(si->sys.call_addr)) {
			/* A NULL write, or a NULL read of an execute-only page 0
			 * (protection keys): page 0 is unmapped for the guest. */
			si->si_code = SEGV_MAPERR;
		}
	}
	if ((closed & ZV_SIGBIT(sig)) && zv_blocked_fault(t, sig, si))
		return; /* it came while open for a fast call: blocked for the guest */
	zv_signal_from_guest(t, sig, si, uc);
}
