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

/* Which arguments are ids: bit i for argument i; bit 7: only when
 * argument 0 says "a process" (getpriority's PRIO_PROCESS 0,
 * ioprio's IOPRIO_WHO_PROCESS 1). */
static uint8_t id_args(long nr)
{
	switch (nr) {
	case __NR_kill: case __NR_tkill: case __NR_rt_sigqueueinfo: case __NR_sched_setaffinity:
	case __NR_sched_getaffinity: case __NR_sched_setparam: case __NR_sched_getparam:
	case __NR_sched_setscheduler: case __NR_sched_getscheduler: case __NR_sched_rr_get_interval:
	case __NR_sched_setattr: case __NR_sched_getattr: case __NR_prlimit64: case __NR_getpgid:
	case __NR_getsid: case __NR_setpgid: case __NR_pidfd_open: case __NR_process_vm_readv:
	case __NR_process_vm_writev: case __NR_get_robust_list: case __NR_migrate_pages:
	case __NR_move_pages: case __NR_process_madvise:
		return 1;
	case __NR_tgkill: case __NR_rt_tgsigqueueinfo: case __NR_kcmp:
		return 3;
	case __NR_getpriority: case __NR_setpriority:
		return 0x80 | 2;
	case __NR_ioprio_get: case __NR_ioprio_set:
		return 0x40 | 2;
	default:
		return 0;
	}
}

static int restored(void) { return zv_cr.restored; }
static int sees(long nr)
{
	return zv_cr.restored && (nr == __NR_getppid || id_args(nr));
}

static long call(struct zv_call *c)
{
	if (c->nr == __NR_getppid)
		return zv_cr.orig_ppid;
	uint8_t m = id_args(c->nr);
	if ((m & 0x80) && c->a[0] != 0 /* PRIO_PROCESS */)
		return zv_next(c);
	if ((m & 0x40) && c->a[0] != 1 /* IOPRIO_WHO_PROCESS */)
		return zv_next(c);
	long a[6] = { c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
	for (int i = 0; i < 6; i++)
		if (m & (1u << i))
			a[i] = zv_cr_host_id(a[i]);
	return zv_next_with(c, a);
}

const struct zv_layer zv_cr_pids_layer = { .name = "cr-pids", .sees = sees, .active = restored, .call = call };
