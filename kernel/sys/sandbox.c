/* The guest's own interception. Its Syscall User Dispatch is emulated:
 * every guest call passes through the dispatcher, which applies the
 * guest's range and selector as the host would (its seccomp is emulated in
 * seccomp.c; its ptrace in kernel/ptrace/). */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "sys/layer.h"
#include "sys/tsc.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/prctl.h>
#include <linux/audit.h>

#define PR_SET_SYSCALL_USER_DISPATCH 59
#define SUD_OFF 0
#define SUD_ON 1
#define SUD_ALLOW 0
#define SUD_BLOCK 1

static long set_guest_sud(struct zv_thread *t, long mode, uint64_t off, uint64_t len, uint64_t sel)
{
	switch (mode) {
	case SUD_OFF:
		if (off || len || sel)
			return -EINVAL;
		t->gsud.on = 0;
		return 0;
	case SUD_ON:
		if (off && off + len <= off)
			return -EINVAL;
		if (sel >= 0x800000000000UL)
			return -EFAULT;
		t->gsud.on = 1;
		zv_sandbox_on();
		t->gsud.offset = off;
		t->gsud.len = len;
		t->gsud.selector = (const volatile char *)sel;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Whether the guest's own dispatch takes this call: then the call is not
 * made, rax keeps its number, and SIGSYS (SYS_USER_DISPATCH) is raised. */
int zv_guest_sud_traps(struct zv_thread *t, struct zv_ucontext *uc, long nr)
{
	uint64_t ip = uc->mc.rip;
	if (ip - t->gsud.offset < t->gsud.len)
		return 0;
	if (t->gsud.selector) {
		char s = *t->gsud.selector;
		if (s == SUD_ALLOW)
			return 0;
		if (s != SUD_BLOCK)
			zv_die_by_signal(31);
	}
	zv_siginfo si = { .si_signo = 31, .si_code = 2 /* SYS_USER_DISPATCH */ };
	si.sys.call_addr = ip;
	si.sys.syscall = (int)nr;
	si.sys.arch = AUDIT_ARCH_X86_64;
	zv_force_signal(t, uc, &si);
	return 1;
}

long zv_sys_prctl(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	if (a[0] == PR_SET_SYSCALL_USER_DISPATCH)
		return set_guest_sud(t, a[1], a[2], a[3], a[4]);
	if (a[0] == PR_SET_SECCOMP)
		return zv_prctl_seccomp(a[1], a[2]);
	if (a[0] == PR_GET_SECCOMP)
		return zv_proc.seccomp.mode; /* the seccomp platform's filter is the kernel's */
	if (a[0] == PR_SET_TSC && a[1] != PR_TSC_ENABLE)
		zv_count_tsc_off(); /* the kernel's own reads would fault too */
	long r = zv_host_call(t, __NR_prctl, a[0], a[1], a[2], a[3], a[4], 0);
	if (r >= 0)
		zv_exec_note_prctl(a);
	return r;
}

/* The layer: once the guest has turned on its own SUD or seccomp, every
 * call passes the guest's dispatch, then its filters, in the host's order.
 * A vDSO entry is no system call natively: neither sees it. */
void zv_sandbox_on(void)
{
	if (!zv_proc.sandboxed) {
		zv_proc.sandboxed = 1;
		zv_layers_fold();
	}
}

static int sandbox_on(void) { return zv_proc.sandboxed; }
static int sandbox_sees(long nr) { return sandbox_on(); }

static long sandbox_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	if ((t->gsud.on || zv_proc.seccomp.mode) && !zv_vdso_call(c->uc->mc.rip)) {
		if (t->gsud.on && zv_guest_sud_traps(t, c->uc, c->nr))
			return c->nr; /* not made: rax keeps the number, as the host leaves it */
		if (zv_proc.seccomp.mode) {
			long nr = c->nr, a[6];
			memcpy(a, c->a, sizeof a);
			long r = zv_seccomp_check(t, c->uc, &nr, a);
			if (r != ZV_SECCOMP_GO)
				return r;
			if (nr != c->nr || memcmp(a, c->a, sizeof a))
				return zv_next_as(c, nr, a); /* as its tracer changed it */
		}
	}
	return zv_next(c);
}

ZV_LAYER(sandbox, 300) = { .name = "sandbox", .sees = sandbox_sees, .active = sandbox_on, .call = sandbox_call };
