/* A restored process keeps its pid and thread ids (getpid and gettid are
 * answered from the kernel's memory, getppid from the image), but the host
 * knows it by new ones. This layer, on only after a restore, translates
 * the process's own ids in the arguments of the calls that name a process
 * or thread, and the sender's pid in signals it sends itself. Other
 * processes' ids pass unchanged. */
#include "zvisor.h"
#include "cr/cr.h"
#include "sys/layer.h"
#include <asm/unistd_64.h>

/* The host's id for the guest's pid or tid x (itself when not ours). */
long zv_cr_host_id(long x)
{
	if (!zv_cr.restored || x <= 0)
		return x;
	if (x == zv_proc.pid)
		return zv_proc.hpid;
	for (int i = 0; i < zv_cr.nthreads && i < ZV_CR_MAX_THREADS; i++) {
		struct zv_thread *t = zv_cr.threads[i];
		if (t && t->tid == x)
			return t->htid;
	}
	return x;
}

/* The guest's id for the host's pid or tid x. */
long zv_cr_guest_id(long x)
{
	if (!zv_cr.restored || x <= 0)
		return x;
	if (x == zv_proc.hpid)
		return zv_proc.pid;
	for (int i = 0; i < zv_cr.nthreads && i < ZV_CR_MAX_THREADS; i++) {
		struct zv_thread *t = zv_cr.threads[i];
		if (t && t->htid == x)
			return t->tid;
	}
	return x;
}

/* The ids in the arguments: the row's pid column (sys/sysent.h). */
static int restored(void) { return zv_cr.restored; }
static int sees(long nr)
{
	return zv_cr.restored && (zv_row(nr)->ppid || zv_row(nr)->pid);
}

static long call(struct zv_call *c)
{
	if (zv_row(c->nr)->ppid)
		return zv_cr.orig_ppid;
	uint8_t m = zv_row(c->nr)->pid;
	if ((m & ZV_PID_WHO_PRIO) && c->a[0] != 0 /* PRIO_PROCESS */)
		return zv_next(c);
	if ((m & ZV_PID_WHO_IOPRIO) && c->a[0] != 1 /* IOPRIO_WHO_PROCESS */)
		return zv_next(c);
	long a[6] = { c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
	for (int i = 0; i < 6; i++)
		if (m & (1u << i))
			a[i] = zv_cr_host_id(a[i]);
	return zv_next_with(c, a);
}

ZV_LAYER(cr_pids, 600) = { .name = "cr-pids", .sees = sees, .active = restored, .call = call, .guest_id = zv_cr_guest_id };
