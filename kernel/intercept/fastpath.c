/* The zpoline platform's C side: the fast entry (a rewritten site's call,
 * arriving through page 0 and intercept/fastentry.S), the bounces that finish a
 * fast call on the SIGSYS path, and the calls whose number sent a rewritten
 * site's `call *%rax` past the sled (a fault). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "intercept/sites.h"
#include "sys/tsc.h"
#include "intercept/stubs.h"
#include "intercept/sudoff.h"
#include "intercept/intercept.h"

/* Whether the call returning to ret is one zvisor wrote over a `syscall`
 * (zv_site_ours): first in the thread's small cache, then in the process's
 * table. The code bytes before ret were just executed, so reading them
 * cannot fault. */
static inline __attribute__((always_inline)) int from_rewritten_site(struct zv_fast *f, uint64_t ret)
{
	uint64_t code8 = *(const uint64_t *)(ret - 8);
	struct zv_seen *slot = &f->seen[(ret ^ (ret >> 6)) & 7];
	if (slot->ret == ret && slot->code8 == code8)
		return 1;
	if (!zv_site_ours(ret, code8))
		return 0;
	*slot = (struct zv_seen){ ret, code8 };
	return 1;
}

/* The call of a fast entry, from the guest instruction before ret (which
 * is where the host's syscall would have returned). */
static inline __attribute__((always_inline)) long fast_call(struct zv_thread *t, struct zv_ucontext *uc, uint64_t ret)
{
	struct zv_fast *f = &t->fast;
	long nr = (int)uc->mc.rax; /* the host reads the number as a 32-bit int */
	uc->mc.rip = ret;
	f->ret = ret;
	f->nr = nr;
	int kind = (uint64_t)nr < ZV_SLED_END ? zv_call_kind[nr] : ZV_KIND_HANDLER;
	if (kind == ZV_KIND_FRAME || t->gsud.on || zv_proc.seccomp.mode || t->faults_blocked || t->bounce_all) {
		/* While the guest blocks SIGSEGV or SIGBUS (posix_spawn's and
		 * vfork's children, a new thread's start), a call that zvisor's
		 * code may make touch guest memory opens them on the host, until
		 * the next signal or bounce closes them; one the host makes
		 * alone needs nothing (the host's EFAULT); a fork or an exec,
		 * which would carry the opened mask to a new task or image,
		 * bounces. */
		if (t->gsud.on || zv_proc.seccomp.mode || t->bounce_all ||
		    (kind == ZV_KIND_FRAME &&
		     (t->faults_blocked || !(zv_sys_plain_fork(nr, uc) || zv_exec_without_frame(t, nr, uc)))) ||
		    (t->faults_blocked && kind == ZV_KIND_HANDLER && !t->faults_open && !zv_open_faults(t))) {
			f->bounce = ZV_BOUNCE_CALL;
			zv_sudoff_need(t); /* the bounce is a syscall only SUD catches */
			return 0;
		}
		if (kind == ZV_KIND_FRAME)
			kind = ZV_KIND_HANDLER; /* a fork child returns through its copy of this path; an exec does not return */
	}
	t->call_cancelled = 0;
	long r;
	if (kind == ZV_KIND_HOST && (zv_proc.count_fd < 0 || zv_count_tsc)) {
		/* The common case: the host runs it, nothing to check, and
		 * for trace -c only the time to sum (see zv_layers_fold). */
		long args[7] = { nr, uc->mc.rdi, uc->mc.rsi, uc->mc.rdx, uc->mc.r10, uc->mc.r8, uc->mc.r9 };
		uint64_t c0 = zv_count_tsc ? zv_rdtsc() : 0;
		int page0 = zv_proc.platform == ZV_PLAT_ZPOLINE; /* its page 0 is readable: intercept/page0args.c */
		if (zv_check_fds && zv_names_kernel_fd(nr, args + 1))
			r = -EBADF; /* the kernel's fds look closed */
		else if (page0 && zv_page0_before(nr, args + 1))
			r = -EFAULT;
		else
			r = zv_host_call_args(t, args);
		if (page0 && (r == -ENAMETOOLONG || r == -ERANGE))
			r = zv_page0_result(nr, args + 1, r);
		if (c0 && !t->call_cancelled) { /* a cancelled call counts when it is made again */
			if (t->trace.traced)
				zv_count_cycles(nr, 0, zv_rdtsc() - c0);
			zv_entry_count(t, nr, r, 0);
		}
	} else if (kind == ZV_KIND_PID) {
		r = nr == __NR_getpid ? t->pid : t->tid;
	} else {
		r = zv_call_guarded(t, uc, nr, &t->guard_sp);
		t->guard_sp = 0;
		if (r == ZV_NORESULT)
			r = (long)uc->mc.rax;
		zv_entry_count(t, nr, r, zv_vdso_call(ret));
	}
	if (!f->sig_pending)
		t->delivery_mask_set = 0; /* no handler runs with a temporary mask */
	if (zv_proc.stats)
		zv_proc.stat_fast++;
	if (__builtin_expect(!t->sud_off && !zv_sudoff_never, 0))
		zv_sudoff_settle(t);
	return r;
}

/* zpoline: a `call *%rax` through page 0 (intercept/fastentry.S zv_fast_entry). */
__attribute__((hot)) long zv_fast_syscall(struct zv_thread *t)
{
	struct zv_fast *f = &t->fast;
	struct zv_ucontext *uc = &f->uc;
	uint64_t *sp = (uint64_t *)uc->mc.rsp;
	uint64_t ret = *sp; /* the call just wrote it */
	uc->mc.rsp = (uint64_t)(sp + 1);
	if (!from_rewritten_site(f, ret)) {
		/* Not from a rewritten site: a stray call or jump into page 0
		 * (a NULL function pointer). It faults, as natively. */
		f->bounce = ZV_BOUNCE_FAULT;
		zv_sudoff_need(t);
		return 0;
	}
	return fast_call(t, uc, ret); /* rax is below ZV_SLED_END + 5: the sled's end */
}

/* A jump stub (intercept/fastentry.S zv_stub_entry): key points at the address
 * of the `syscall` the stub stands for (intercept/stubs.c). */
__attribute__((hot)) long zv_stub_syscall(struct zv_thread *t, uint64_t key)
{
	return fast_call(t, &t->fast.uc, zv_stub_site(key) + 2);
}

/* The SIGSYS of the entry page's `syscall`: a fast call that needs the
 * frame (uc is the guest's context at the call, rsp above the return
 * address). */
void zv_fast_bounced(struct zv_thread *t, struct zv_ucontext *uc)
{
	int kind = t->fast.bounce;
	t->fast.bounce = 0;
	zv_signals_unhold(t, uc); /* before anything reads or copies the mask (a clone's child) */
	if (zv_proc.stats)
		zv_proc.stat_bounced++;
	if (kind == ZV_BOUNCE_FAULT) {
		/* As the host: the call pushed its return address, then the
		 * fetch at address 0 faulted. */
		zv_siginfo si = { .si_signo = 11, .si_code = 1 /* SEGV_MAPERR */ };
		uc->mc.rip = 0;
		uc->mc.rsp -= 8;
		zv_force_signal(t, uc, &si);
		return;
	}
	uc->mc.rip = t->fast.ret;
	if (kind == ZV_BOUNCE_CALL) {
		zv_frame_syscall(t, uc, (int)uc->mc.rax);
	} else {
		uc->mc.rcx = uc->mc.rip;
		uc->mc.r11 = uc->mc.eflags;
		zv_frame_result(t, uc, t->fast.nr, t->fast.result);
	}
}

/* Reads 8 bytes of guest memory without risking a fault in the kernel. */
static int peek(uint64_t addr, uint64_t *v)
{
	struct { void *base; size_t len; } local = { v, 8 }, remote = { (void *)addr, 8 };
	return zv_sys6(__NR_process_vm_readv, zv_getpid(), (long)&local, 1, (long)&remote, 1, 0) == 8;
}

/* A SIGSEGV in guest code. A rewritten site whose number is beyond the
 * sled jumped to address rax (page 0's hlt, unmapped or non-executable
 * memory), or faulted on the call itself (a non-canonical target): then the
 * call is made here and 1 returned. */
int zv_fast_fault(struct zv_thread *t, struct zv_ucontext *uc)
{
	uint64_t ip = uc->mc.rip, ret, code8;
	if (ip == uc->mc.rax && peek(uc->mc.rsp, &ret) && peek(ret - 8, &code8) && zv_site_ours(ret, code8)) {
		uc->mc.rsp += 8; /* the call's return address */
	} else if (peek(ip - 6, &code8) && zv_site_ours(ip + 2, code8)) {
		ret = ip + 2; /* the call itself faulted */
	} else {
		return 0;
	}
	uc->mc.rip = ret;
	if (zv_proc.stats)
		zv_proc.stat_sigsys++;
	zv_frame_syscall(t, uc, (int)uc->mc.rax);
	return 1;
}

/* The platform's kernel_ip: a fast call about to return (zv_fast_window)
 * leaves through SIGSYS instead, whose frame delivery needs. */
uint64_t zv_fast_kernel_ip(uint64_t ip)
{
	if (ip >= (uint64_t)zv_fast_window && ip < (uint64_t)zv_fast_window_end)
		return (uint64_t)zv_fast_bounce_result;
	return ip;
}
