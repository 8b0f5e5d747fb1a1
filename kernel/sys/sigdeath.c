/* Deaths by a signal's default action. The host kills the process itself,
 * with the signal, so that the parent sees the host's own status (the
 * signal, the core bit). Where the guest's context is at hand (uc, which
 * the way out restores by rt_sigreturn), the kill lands on the guest's
 * instruction: the host's action becomes the default, the signal waits,
 * queued for this thread and blocked until the sigreturn unblocks it, and
 * the host takes it before the guest runs another instruction, so a core
 * dump holds the guest's registers, as a native one does. Elsewhere
 * (zv_die_by_signal) the host kills the thread in zvisor's code. */
#include "zvisor.h"
#include "sys/platform.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "sys/sigshared.h"

int zv_sig_dumps(int sig)
{
	return sig == 3 || sig == 4 || sig == 5 || sig == 6 || sig == 7 || sig == 8 || sig == 11 ||
	       sig == 24 || sig == 25 || sig == 31;
}

/* What the layers see of the death (an exit event with the status the
 * parent will see, the count's report), and the host's default action. */
static void report_death(int sig)
{
	/* "(core dumped)" when the host would dump: a core limit above 0 */
	struct { uint64_t cur, max; } core = { 0, 0 };
	zv_sys4(__NR_prlimit64, 0, 4 /* RLIMIT_CORE */, NULL, &core);
	zv_event_exit(zv_current(), 0, sig | (zv_sig_dumps(sig) && core.cur ? 0x80 : 0));
	zv_report_at_exit();
	struct zv_ksigaction dfl = { ZV_SIG_DFL, ZV_SA_RESTORER, (uint64_t)zv_sigreturn, 0 };
	zv_sys4(__NR_rt_sigaction, sig, &dfl, NULL, 8);
}

__attribute__((noreturn)) void zv_die_by_signal(int sig)
{
	report_death(sig);
	uint64_t m = ~ZV_SIGBIT(sig);
	zv_host_set_mask(m, NULL);
	zv_sys3(__NR_tgkill, zv_getpid(), zv_gettid(), sig);
	zv_exit_group(128 + sig);
}

/* The death by si's signal of thread t in the guest's context uc, which the
 * caller's way out restores next, with every host signal blocked until
 * then. The thread's signal work is over (t->dying): nothing else is
 * delivered, nothing more runs in the guest. */
static void die_in_guest(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc)
{
	int sig = si->si_signo;
	long pid = zv_getpid(), tid = zv_gettid();
	if (pid == 1) /* a namespace's init: the host would ignore the signal it sends itself */
		zv_die_by_signal(sig);
	report_death(sig);
	if (zv_sys4(__NR_rt_tgsigqueueinfo, pid, tid, sig, si) < 0) /* its own siginfo, in the core */
		zv_sys3(__NR_tgkill, pid, tid, sig);
	if (zv_plat->guest_ip) /* in code the platform moved: the original address */
		uc->mc.rip = zv_plat->guest_ip(uc->mc.rip, uc->mc.rcx);
	uc->uc_sigmask = ~ZV_SIGBIT(sig); /* it alone, before anything else pending */
	if (zv_plat->owns_gs) /* nothing of the kernel's runs between here and the sigreturn */
		zv_sys2(__NR_arch_prctl, 0x1001 /* ARCH_SET_GS */, t->guest_gs);
	t->dying = sig;
}

/* The default action of sig for the guest at uc (reached only when zvisor
 * holds the signal itself: a signal that dumps core, --count, SIGSYS, or a
 * disposition changed meanwhile). */
void zv_signal_default(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc)
{
	int sig = si->si_signo;
	if (default_ignores(sig))
		return;
	if (default_stops(sig)) {
		zv_sys3(__NR_tgkill, zv_getpid(), zv_gettid(), SIGSTOP);
		return;
	}
	if (zv_sig_dumps(sig))
		die_in_guest(t, si, uc);
	else
		zv_die_by_signal(sig);
}

/* A signal the host would force on the thread for the call being made
 * (force_sig): fatal if the guest blocks or ignores it, then at the call's
 * return, on the way out (zv_signals_on_exit); else delivered there as any
 * other. */
void zv_force_signal(struct zv_thread *t, struct zv_ucontext *uc, const zv_siginfo *si)
{
	int sig = si->si_signo;
	uint64_t h = t->sighand->act[sig].handler;
	if (h <= ZV_SIG_IGN || (zv_guest_mask(t, uc) & ZV_SIGBIT(sig)))
		zv_force_death(t, si);
	else
		defer(t, sig, si);
}

/* The process dies by si's signal once the call being made returns. */
void zv_force_death(struct zv_thread *t, const zv_siginfo *si)
{
	if (!zv_sig_dumps(si->si_signo))
		zv_die_by_signal(si->si_signo);
	t->death_info = *si;
	t->death_due = 1;
	t->fast.sig_pending = 1;
	zv_plat->need_catchall(t); /* the way out bounces, a syscall only SUD catches */
}

/* The way out of a thread whose death is due: 1 if it is (the caller stops
 * there and returns to uc). */
int zv_signal_death_due(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (!t->death_due)
		return 0;
	t->death_due = 0;
	die_in_guest(t, &t->death_info, uc);
	return 1;
}
