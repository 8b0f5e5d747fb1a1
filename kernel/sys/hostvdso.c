/* The kernel's own clock reads through the host's vDSO (found and checked
 * by loader/vdso.c, in zv_proc.host_vdso), and the guest's memory calls
 * that take it away. */
#include "zvisor.h"
#include "lib/syscall.h"

/* A guest memory call over [addr, addr + len): the host's vDSO may be gone. */
void zv_host_vdso_touched(uint64_t addr, uint64_t len)
{
	if (addr < zv_proc.host_vdso.hi && addr + len > zv_proc.host_vdso.lo)
		zv_proc.host_vdso.ok = 0;
}

/* which: 0 clock_gettime(a, b), 1 gettimeofday(a, b), 2 time(a). Only
 * from a handler (under the guard: a bad guest pointer is EFAULT).
 * -ENOSYS when the host's vDSO cannot be used. */
long zv_host_vdso_call(int which, long a, long b)
{
	if (!zv_proc.host_vdso.ok)
		return -ENOSYS;
	struct zv_thread *t = zv_current();
	long r;
	t->in_host_vdso = 1;
	t->sud_selector = 0; /* SYSCALL_DISPATCH_FILTER_ALLOW */
	if (which == 0)
		r = zv_proc.host_vdso.clock_gettime(a, (void *)b);
	else if (which == 1)
		r = zv_proc.host_vdso.gettimeofday((void *)a, (void *)b);
	else
		r = zv_proc.host_vdso.time((void *)a);
	t->sud_selector = 1;
	t->in_host_vdso = 0;
	return r;
}
