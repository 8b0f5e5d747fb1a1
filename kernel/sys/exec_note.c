/* What execve resets that the host keeps no list of for zvisor: noted as
 * the guest sets it, so that an exec made in this process (kernel/inexec.c)
 * undoes it as the host's execve would, or knows that it cannot and leaves
 * the exec to the host (zv_proc.exec_needs_host). Each row of sys/sysent.c
 * that names zv_sys_exec_note runs on the host unchanged; its result is
 * noted here. A fork child starts with none of it (zv_exec_note_fork_child):
 * the host gives a child no timers, aio contexts, robust list or locked memory. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/exec_reset.h"
#include "sys/fdflags.h"
#include "lib/syscall.h"
#include <linux/sched.h>

#define RLIMIT_STACK_ 3
#define MEMBARRIER_REGISTER_ANY 0x1e8 /* the REGISTER_* commands: bits 3, 5, 6, 7, 8 */

void zv_exec_needs_host(unsigned why)
{
	__atomic_fetch_or(&zv_proc.exec_needs_host, why, __ATOMIC_RELAXED);
}

static void note_aio(uint64_t ctx)
{
	zv_lock(&zv_proc.lock);
	if (zv_proc.naio < ZV_MAX_AIO)
		zv_proc.aio[zv_proc.naio++] = ctx;
	else
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_AIO);
	zv_unlock(&zv_proc.lock);
}

static void forget_aio(uint64_t ctx)
{
	zv_lock(&zv_proc.lock);
	for (int i = 0; i < zv_proc.naio; i++)
		if (zv_proc.aio[i] == ctx) {
			zv_proc.aio[i] = zv_proc.aio[--zv_proc.naio];
			break;
		}
	zv_unlock(&zv_proc.lock);
}

long zv_sys_exec_note(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	long r = zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (r < 0 && r > -4096)
		return r;
	switch (nr) {
	case __NR_set_robust_list:
		t->robust_head = (uint64_t)a[0];
		break;
	case __NR_set_tid_address:
		t->clear_tid_set = a[0] != 0;
		break;
	case __NR_timer_create:
		zv_proc.timers_made = 1;
		break;
	case __NR_io_setup: {
		uint64_t ctx = 0;
		if (zv_guest_copy(&ctx, (const void *)a[1], sizeof ctx, (uint64_t)a[1]) == 0 && ctx)
			note_aio(ctx);
		break;
	}
	case __NR_io_destroy:
		forget_aio((uint64_t)a[0]);
		break;
	case __NR_mlockall: /* execve's new mm has nothing locked, zvisor's window included */
		zv_proc.mlocked = 1;
		break;
	case __NR_munlockall:
		zv_proc.mlocked = 0;
		break;
	case __NR_personality:
		/* a query (0xffffffff) changes nothing; any other value may move
		 * the next image's addresses (ADDR_NO_RANDOMIZE, the legacy
		 * layout), which the host picks at execve */
		if ((uint32_t)a[0] != 0xffffffffU && (uint32_t)a[0] != (uint32_t)r)
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_LAYOUT);
		break;
	case __NR_setrlimit:
		if (a[0] == RLIMIT_STACK_)
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_LAYOUT);
		break;
	case __NR_prlimit64:
		if (a[1] == RLIMIT_STACK_ && a[2] && (!a[0] || a[0] == zv_proc.hpid))
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_LAYOUT);
		break;
	case __NR_capset:
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_CREDS);
		break;
	case __NR_membarrier:
		if (a[0] & MEMBARRIER_REGISTER_ANY)
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_MM);
		break;
	case __NR_modify_ldt:
		if (a[0] == 1 || a[0] == 0x11)
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_MM);
		break;
	case __NR_io_uring_setup:
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_MM);
		break;
	}
	return r;
}

/* prctl options that execve undoes or recomputes (sys/sandbox.c's
 * handler, after the host took the call). */
void zv_exec_note_prctl(const long *a)
{
	long option = a[0], arg = a[1];
	switch (option) {
	case 4: /* PR_SET_DUMPABLE: execve makes the process dumpable again */
		zv_proc.dumpable_set = 1;
		break;
	case 8:  /* PR_SET_KEEPCAPS: execve clears it and recomputes the capabilities */
	case 24: /* PR_CAPBSET_DROP */
	case 28: /* PR_SET_SECUREBITS */
	case 47: /* PR_CAP_AMBIENT */
		if (option != 47 || arg != 1 /* PR_CAP_AMBIENT_IS_SET */)
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_CREDS);
		break;
	case 53: /* PR_SET_SPECULATION_CTRL: PR_SPEC_DISABLE_NOEXEC ends at execve */
		if (a[2] == 16)
			zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_MM);
		break;
	}
}

/* Ids set (setuid & co.), or a namespace entered: execve recomputes the
 * capabilities and enters the time namespace for children. */
void zv_exec_note_creds(long nr, long flags)
{
	if (nr == __NR_unshare && !(flags & (CLONE_NEWUSER | CLONE_NEWTIME)))
		return;
	zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_CREDS);
}

/* A task made by clone: what the parent's next exec must know of it. */
void zv_exec_note_clone(uint64_t flags)
{
	if ((flags & CLONE_VM) && !(flags & (CLONE_THREAD | CLONE_VFORK)))
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_SHARED);
	if ((flags & CLONE_FILES) && !(flags & CLONE_THREAD))
		zv_proc.files_shared = 1;
	/* another task on this memory notes its calls too, perhaps out of
	 * order with ours; a pidfd is close-on-exec (sys/fdflags.c) */
	if ((flags & CLONE_PIDFD) || ((flags & CLONE_VM) && !(flags & CLONE_VFORK)))
		zv_fdflags_lose();
}

/* In a fork child (flags: its clone's): none of the parent's timers, aio
 * contexts, robust list or locked memory; its own clear_child_tid. */
void zv_exec_note_fork_child(struct zv_thread *t, uint64_t flags)
{
	if (zv_proc.timers_made)
		zv_proc.timers_made = 0;
	if (zv_proc.naio)
		zv_proc.naio = 0;
	if (zv_proc.mlocked)
		zv_proc.mlocked = 0;
	if (flags & CLONE_FILES) /* the parent's table: its closes are not noted here */
		zv_proc.files_shared = 1;
	else if (zv_proc.files_shared)
		zv_proc.files_shared = 0;
	/* the CLONE_VM child shares the parent's memory, not this one */
	if (zv_proc.exec_needs_host & (ZV_EXEC_NEEDS_HOST_SHARED | ZV_EXEC_NEEDS_HOST_AIO))
		zv_proc.exec_needs_host &= ~(ZV_EXEC_NEEDS_HOST_SHARED | ZV_EXEC_NEEDS_HOST_AIO);
	if (t->robust_head)
		t->robust_head = 0;
	if (t->clear_tid_set != ((flags & CLONE_CHILD_CLEARTID) != 0))
		t->clear_tid_set = (flags & CLONE_CHILD_CLEARTID) != 0;
}
