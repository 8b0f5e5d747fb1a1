/* Interception platforms. On sud and seccomp, Syscall User Dispatch or a
 * seccomp trap filter delivers every guest syscall as SIGSYS to one handler,
 * which runs it through the dispatcher on the thread's kernel stack. On
 * zpoline, SUD is the catch-all: a site that arrives there is rewritten to
 * `call *%rax` (intercept/sites.c) and then enters through page 0
 * (intercept/fastpath.c). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "trace/count.h"
#include "intercept/sites.h"
#include "lib/fmt.h"
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <linux/audit.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_ON 1
#endif
#define ZV_SYS_USER_DISPATCH 2 /* si_code of a SUD SIGSYS */
#define ZV_SYS_SECCOMP 1
#define ZV_SECCOMP_DATA 0x2a5  /* marks traps from zvisor's own filter */

/* A filter that allows a syscall only when it comes from the kernel's text
 * and traps everything else (as no-MMU UML does). It survives execve, which is
 * why zvisor is linked at a fixed address: the next image is zvisor again with
 * the same text range. */
static long install_seccomp(void)
{
	uint32_t hi = (uint32_t)(zv_proc.text_start >> 32);
	uint32_t lo = (uint32_t)zv_proc.text_start, lo_end = (uint32_t)zv_proc.text_end;
	if ((zv_proc.text_end - 1) >> 32 != hi)
		return -EINVAL; /* text must not straddle a 4 GiB boundary */
	struct sock_filter prog[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, hi, 0, 4),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 2),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo_end, 1, 0),
		/* 5 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 6 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | ZV_SECCOMP_DATA),
	};
	struct sock_fprog fprog = { .len = sizeof prog / sizeof prog[0], .filter = prog };
	long r = zv_sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
	if (r == -EACCES) {
		/* Without CAP_SYS_ADMIN a filter needs no_new_privs. */
		zv_sys5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		r = zv_sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
	}
	return r;
}

long zv_platform_install(void)
{
	struct zv_ksigaction sa = {
		.handler = (uint64_t)zv_sigsys_handler,
		/* NODEFER and an empty mask: guest signals may interrupt a host
		 * syscall made on the guest's behalf; they are deferred. */
		.flags = ZV_SA_SIGINFO | ZV_SA_ONSTACK | ZV_SA_RESTORER | ZV_SA_NODEFER,
		.restorer = (uint64_t)zv_sigreturn,
		.mask = 0,
	};
	long r = zv_sys4(__NR_rt_sigaction, 31, &sa, NULL, 8);
	if (r < 0)
		return r;
	if (zv_proc.platform == ZV_PLAT_ZPOLINE) {
		r = zv_trampoline_map();
		if (r < 0) {
			zv_dprintf(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2,
				   "zvisor: cannot map page 0 for the zpoline fast path (%s): using the sud platform; "
				   "'sysctl -w vm.mmap_min_addr=0' enables it\n", zv_strerror((int)-r));
			zv_proc.platform = ZV_PLAT_SUD;
		}
	}
	if (zv_proc.platform == ZV_PLAT_SECCOMP && !zv_proc.seccomp_installed) {
		r = install_seccomp();
		if (r < 0)
			return r;
		zv_proc.seccomp_installed = 1;
	}
	return 0;
}

long zv_platform_arm_thread(struct zv_thread *t)
{
	if (zv_proc.platform == ZV_PLAT_SECCOMP)
		return 0; /* the seccomp filter is inherited by every thread */
	if (zv_proc.platform == ZV_PLAT_ZPOLINE) {
		/* The fast entry finds this thread's area through %gs. */
		t->fast.self = t;
		t->fast.kstack = (uint64_t)t + ZV_BLOCK_SIZE;
		t->fast.bounce_site = ZV_BOUNCE_SITE;
		long r = zv_sys2(__NR_arch_prctl, 0x1001 /* ARCH_SET_GS */, t);
		if (r < 0)
			return r;
	}
	/* With a selector that says BLOCK except while the kernel itself runs
	 * the host's vDSO code, whose fallback `syscall` lies outside its text. */
	t->sud_selector = 1; /* SYSCALL_DISPATCH_FILTER_BLOCK */
	return zv_sys5(__NR_prctl, PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, zv_proc.text_start,
		       zv_proc.text_end - zv_proc.text_start, &t->sud_selector);
}

void zv_sigsys_handler(int sig, zv_siginfo *si, void *ucv)
{
	struct zv_ucontext *uc = ucv;
	int ours = si->si_code == ZV_SYS_USER_DISPATCH ||
		   (si->si_code == ZV_SYS_SECCOMP && (si->si_errno & 0xffff) == ZV_SECCOMP_DATA);
	if (!ours) {
		/* kill(SIGSYS) or the like: a signal for the guest. */
		zv_host_sighandler(sig, si, ucv);
		return;
	}
	struct zv_thread *t = zv_current();
	zv_unblock_faults(t, uc);
	struct zv_ucontext *outer = t->sys_uc;
	t->sys_uc = uc;
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
	if (si->sys.call_addr == ZV_BOUNCE_SITE + 2 && t->fast.bounce) {
		zv_fast_bounced(t, uc); /* a fast call that needs this frame */
	} else {
		if (zv_proc.stats)
			zv_proc.stat_sigsys++;
		if (zv_proc.platform == ZV_PLAT_ZPOLINE && zv_proc.rewrite != ZV_REWRITE_NONE)
			zv_site_seen(uc->mc.rip - 2, zv_proc.rewrite_after, zv_site_safe, uc);
		zv_frame_syscall(t, uc, nr);
	}
	zv_signals_on_exit(t, uc);
	t->sys_uc = outer;
}
