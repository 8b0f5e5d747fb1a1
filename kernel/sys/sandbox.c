/* The guest's own interception and tracing: each would take the kernel's
 * place (a seccomp filter also filters the kernel's own calls, a tracer sees
 * the kernel's SIGSYS as ptrace stops), so they are refused with EINVAL, as
 * docs/DESIGN.md documents. */
#include "zvisor.h"
#include "lib/syscall.h"
#include <linux/prctl.h>

long zv_sys_prctl(struct zv_thread *t, struct zv_ucontext *uc, long *a)
{
	if (a[0] == 59 /* PR_SET_SYSCALL_USER_DISPATCH */ || a[0] == PR_SET_SECCOMP)
		return -EINVAL;
	if (a[0] == PR_GET_SECCOMP)
		return 0; /* the seccomp platform's filter is the kernel's, not the guest's */
	return zv_host_call(t, __NR_prctl, a[0], a[1], a[2], a[3], a[4], 0);
}

long zv_sys_seccomp(struct zv_thread *t, struct zv_ucontext *uc, long *a)
{
	if (a[0] == 0 /* SECCOMP_SET_MODE_STRICT */ || a[0] == 1 /* SECCOMP_SET_MODE_FILTER */)
		return -EINVAL;
	return zv_host_call(t, __NR_seccomp, a[0], a[1], a[2], 0, 0, 0);
}

/* Becoming a tracee (TRACEME) or taking one (ATTACH, SEIZE) is refused; the
 * other requests fail on the host as there is no tracee. */
long zv_sys_ptrace(struct zv_thread *t, struct zv_ucontext *uc, long *a)
{
	if (a[0] == 0 /* PTRACE_TRACEME */ || a[0] == 16 /* PTRACE_ATTACH */ || a[0] == 0x4206 /* SEIZE */)
		return -EINVAL;
	return zv_host_call(t, __NR_ptrace, a[0], a[1], a[2], a[3], 0, 0);
}
