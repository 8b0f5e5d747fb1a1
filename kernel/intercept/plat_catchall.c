/* What every platform shares: the SIGSYS catch-all. On sud and seccomp,
 * Syscall User Dispatch or a seccomp trap filter delivers every guest
 * syscall as SIGSYS to one handler, which runs it through the entry path on
 * the thread's kernel stack. The fast platforms (plat_zpoline.c,
 * plat_stubs.c) rewrite sites so that most calls never come here; SUD is
 * their catch-all for the rest. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/exec_reset.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "sys/tsc.h"
#include "intercept/platform.h"
#include "intercept/sudoff.h"
#include "intercept/sites.h"
#include "intercept/stubs.h"
#include <linux/prctl.h>
#include <linux/audit.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_ON 1
#endif
#define ZV_SYS_USER_DISPATCH 2 /* si_code of a SUD SIGSYS */
#define ZV_SYS_SECCOMP 1
#define ZV_SECCOMP_DATA 0x2a5  /* marks traps from zvisor's own filter (plat_seccomp.c) */

int zv_platform_by_name(const char *s)
{
	for (int i = 0; i < (int)(zv_platforms_end - zv_platforms); i++)
		if (!zv_strcmp(s, zv_platforms[i]->name))
			return i;
	return -1;
}

/* The SIGSYS handler, for every platform. */
long zv_catchall_install(void)
{
	struct zv_ksigaction sa = {
		.handler = (uint64_t)zv_sigsys_handler,
		/* NODEFER and an empty mask: guest signals may interrupt a host
		 * syscall made on the guest's behalf; they are deferred. */
		.flags = ZV_SA_SIGINFO | ZV_SA_ONSTACK | ZV_SA_RESTORER | ZV_SA_NODEFER,
		.restorer = (uint64_t)zv_sigsys_restorer, /* delivers what came after the way out looked */
		.mask = 0,
	};
	return zv_sys4(__NR_rt_sigaction, 31, &sa, NULL, 8);
}

long zv_platform_install(void)
{
	long r = zv_catchall_install();
	if (r < 0)
		return r;
	return zv_plat->install ? zv_plat->install() : 0;
}

long zv_platform_arm_thread(struct zv_thread *t)
{
	return zv_plat->arm_thread(t);
}

/* A fork child's one thread: its %gs base is its parent's, which the host
 * copies, and so is the seccomp filter; SUD is not inherited. */
long zv_platform_arm_fork_child(struct zv_thread *t)
{
	return zv_plat->owns_gs ? zv_catchall_arm_thread(t) : zv_plat->arm_thread(t);
}

/* A fork child's one thread (the platform's fork_child): the locks'
 * holders do not exist there, and SUD is armed unless it may stay off. */
void zv_platform_fork_child(struct zv_thread *t)
{
	zv_sites_after_fork();
	zv_sudoff_after_fork();
	if (!zv_sudoff_fork_child(t))
		zv_platform_arm_fork_child(t);
}

void zv_platform_shared_vm(void) { zv_sudoff_shared_vm(); }

void zv_platform_stats(unsigned long *rewritten, unsigned long *uncovered, int *taint)
{
	*rewritten = zv_sites_rewritten() + zv_stubs_count();
	zv_sudoff_numbers(uncovered, taint);
}

/* The fast entry finds the thread's area through %gs. */
long zv_fast_arm_thread(struct zv_thread *t, uint64_t bounce_site)
{
	t->fast.self = t;
	t->fast.kstack = (uint64_t)t; /* the kernel stack ends where the struct begins */
	t->fast.bounce_site = bounce_site;
	return zv_sys2(__NR_arch_prctl, 0x1001 /* ARCH_SET_GS */, t);
}

/* SUD for the calling thread, with a selector that says BLOCK except while
 * the kernel itself runs the host's vDSO code, whose fallback `syscall`
 * lies outside its text. */
long zv_catchall_arm_thread(struct zv_thread *t)
{
	t->sud_selector = 1; /* SYSCALL_DISPATCH_FILTER_BLOCK */
	long r = zv_sys5(__NR_prctl, PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, zv_proc.text_start,
			 zv_proc.text_end - zv_proc.text_start, &t->sud_selector);
	if (r == 0) /* after: a signal meanwhile that saw it off armed it too */
		t->sud_off = 0;
	return r;
}

/* A SIGSYS sent to the thread (not the platform's) may have been pending
 * when the thread's `syscall` trapped: SIGSYS is a standard signal, and the
 * host drops the trap's own SIGSYS then, leaving rip after the skipped
 * call. With every call outside kernel text trapped (SUD's selector at
 * BLOCK, or the seccomp filter), a guest rip right after `syscall` bytes
 * is such a lost trap; the caller makes the call as the trap would have. */
static int lost_trap(struct zv_thread *t, struct zv_ucontext *uc, zv_siginfo *trap)
{
	/* (page 0's entry page holds zpoline's bounce `syscall`: it counts) */
	if (zv_in_kernel_text(uc->mc.rip) || t->in_host_vdso ||
	    (zv_proc.platform != ZV_PLAT_SECCOMP && (t->sud_off || t->sud_selector != 1)))
		return 0;
	/* Or the signal was pending while the kernel returned from the call
	 * just made there (it blocks signals on the way out), and came with
	 * that return: the guest has run nothing since (rax is still the
	 * result; a lost trap leaves the number there). */
	if (uc->mc.rip == t->ret_rip && uc->mc.rax == t->ret_rax)
		return 0;
	uint16_t w = 0;
	uint64_t outer = t->guard_sp;
	long e = zv_copy_guarded(&w, (const void *)(uc->mc.rip - 2), 2, &t->guard_sp);
	t->guard_sp = outer;
	if (e < 0 || w != 0x050f)
		return 0;
	*trap = (zv_siginfo){ .si_signo = 31, .si_code = ZV_SYS_USER_DISPATCH };
	if (zv_proc.platform == ZV_PLAT_SECCOMP) {
		trap->si_code = ZV_SYS_SECCOMP;
		trap->si_errno = ZV_SECCOMP_DATA;
	}
	trap->sys.call_addr = uc->mc.rip;
	trap->sys.syscall = (int32_t)uc->mc.rax;
	trap->sys.arch = AUDIT_ARCH_X86_64;
	return 1;
}

void zv_sigsys_handler(int sig, zv_siginfo *si, void *ucv)
{
	struct zv_ucontext *uc = ucv;
	int ours = si->si_code == ZV_SYS_USER_DISPATCH ||
		   (si->si_code == ZV_SYS_SECCOMP && (si->si_errno & 0xffff) == ZV_SECCOMP_DATA);
	if (!ours) {
		zv_siginfo trap;
		if (si->si_code <= 0 && lost_trap(zv_current(), uc, &trap))
			zv_sigsys_handler(sig, &trap, ucv); /* first the call, then this signal */
		/* SI_USER from pid 0: a queued one whose siginfo the host lost
		 * (the user's RLIMIT_SIGPENDING reached) */
		int lost_info = si->si_code == 0 && si->kill.pid == 0;
		if ((si->si_code == -1 /* SI_QUEUE */ || lost_info) &&
		    (zv_exec_kill_sigsys(zv_current(), si, uc) || zv_sudoff_sigsys(zv_current(), si, uc) ||
		     zv_event_sigsys(zv_current(), si, uc)))
			return; /* another thread execs (sys/exec_reset.c), SUD armed everywhere (intercept/sudoff.c),
				 * a checkpoint's request or freeze (cr/freeze.c), another kernel's knock (peer/peer.c) */
		/* One without its siginfo that nothing took (the peer channel
		 * looks for knocks at each): not a guest's SIGSYS, whose default
		 * action would end the process. */
		if (lost_info)
			return;
		/* kill(SIGSYS) or the like: a signal for the guest. */
		zv_host_sighandler(sig, si, ucv);
		return;
	}
	struct zv_thread *t = zv_current();
	if (t->faults_open)
		zv_close_faults_in(t, uc); /* a fast call's opening ends at the next entry */
	zv_unblock_faults(t, uc);
	struct zv_ucontext *outer = t->sys_uc;
	t->sys_uc = uc;
	int bounced = si->sys.call_addr == t->fast.bounce_site + 2 && t->fast.bounce;
	if (!bounced) /* no fast call is under way: what a signal held before sys_uc was this handler's */
		t->host_held = 0;
	long nr = (int)uc->mc.rax; /* the host reads the number as a 32-bit int */
	if (si->sys.arch == AUDIT_ARCH_I386) {
		/* int $0x80: run it as the guest asked, on the host. */
		long args[7] = { (uint32_t)uc->mc.rax, (uint32_t)uc->mc.rbx, (uint32_t)uc->mc.rcx,
				 (uint32_t)uc->mc.rdx, (uint32_t)uc->mc.rsi, (uint32_t)uc->mc.rdi,
				 (uint32_t)uc->mc.rbp };
		uc->mc.rax = zv_sys_i386_refused((uint32_t)uc->mc.rax) ? -ENOSYS : zv_int80(args);
		/* int $0x80 leaves rcx and r11 alone. */
		zv_signals_on_exit(t, uc);
		t->sys_uc = outer;
		return;
	}
	if (bounced) {
		zv_fast_bounced(t, uc); /* a fast call that needs this frame */
	} else {
		if (zv_proc.stats) {
			zv_proc.stat_sigsys++;
			zv_proc.stat_restorers += nr == __NR_rt_sigreturn; /* left on SIGSYS on purpose */
		}
		if (zv_plat->arrived)
			zv_plat->arrived(t, uc);
		zv_frame_syscall(t, uc, nr);
	}
	zv_signals_on_exit(t, uc);
	t->sys_uc = outer;
	t->ret_rip = uc->mc.rip;
	t->ret_rax = uc->mc.rax;
	if (!outer)
		zv_sudoff_settle(t);
}

/* A guest signal deferred after the SIGSYS handler's way out looked for
 * them (its restorer, intercept/sigsysret.S, found the flag set): it is
 * delivered now on the frame uc, or given back to the host if the guest
 * blocks it, as that way out would have. Not when uc is kernel code (a
 * signal's frame, not a call's), whose own way out delivers it, nor in a
 * thread whose death is due there. Bits held meanwhile (host_held) held
 * them in the handler's own context, which the sigreturn drops: a later
 * bounce must not take them out of the guest's mask. */
void zv_sigsys_late(struct zv_ucontext *uc)
{
	struct zv_thread *t = zv_current();
	if (t->dying || zv_interrupted_kernel(t, uc))
		return;
	zv_signals_on_exit(t, uc);
	t->host_held = 0;
	t->ret_rip = uc->mc.rip;
	t->ret_rax = uc->mc.rax;
}

/* The platforms' kernel_ip: a signal in the SIGSYS restorer's last stretch
 * makes it read the flag again; in a fast call's return, it leaves
 * through SIGSYS instead (intercept/fastpath.c). */
uint64_t zv_catchall_kernel_ip(uint64_t ip)
{
	if (ip >= (uint64_t)zv_sigsys_restorer && ip <= (uint64_t)zv_sigsys_restorer_end)
		return (uint64_t)zv_sigsys_restorer;
	return zv_fast_kernel_ip(ip);
}
