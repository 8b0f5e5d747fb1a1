/* The syscall table: one handler per number. Calls without an entry run on
 * the host unchanged, from kernel text, cancellable by a deferred signal. */
#include "zvisor.h"
#include "trace/count.h"
#include "lib/syscall.h"

typedef long (*zv_handler)(struct zv_thread *t, struct zv_ucontext *uc, long *a);

/* A host call for the guest (args: number, then arguments) that a deferred
 * signal may stop before it begins: then -EINTR, with call_cancelled set
 * so that the call is made again after the handler (zv_frame_result), as
 * natively the handler would have run before it. */
long zv_host_call_args(struct zv_thread *t, const long args[7])
{
	long r = zv_sc_cancellable(args, &t->fast.sig_pending);
	if (r != ZV_CANCELLED)
		return r;
	t->call_cancelled = 1;
	return -EINTR;
}

long zv_host_call(struct zv_thread *t, long nr, long a, long b, long c, long d, long e, long f)
{
	long args[7] = { nr, a, b, c, d, e, f };
	return zv_host_call_args(t, args);
}

#define WITH_NR(fn, n) \
	static long fn##_##n(struct zv_thread *t, struct zv_ucontext *uc, long *a) { return fn(t, uc, a, n); }

WITH_NR(zv_sys_path_call, __NR_open)
WITH_NR(zv_sys_path_call, __NR_openat)
WITH_NR(zv_sys_path_call, __NR_openat2)
WITH_NR(zv_sys_path_call, __NR_readlink)
WITH_NR(zv_sys_path_call, __NR_readlinkat)
WITH_NR(zv_sys_path_call, __NR_stat)
WITH_NR(zv_sys_path_call, __NR_lstat)
WITH_NR(zv_sys_path_call, __NR_newfstatat)
WITH_NR(zv_sys_path_call, __NR_statx)
WITH_NR(zv_sys_path_call, __NR_access)
WITH_NR(zv_sys_path_call, __NR_faccessat)
WITH_NR(zv_sys_path_call, __NR_faccessat2)
WITH_NR(zv_sys_mm_call, __NR_mmap)
WITH_NR(zv_sys_mm_call, __NR_munmap)
WITH_NR(zv_sys_mm_call, __NR_mprotect)
WITH_NR(zv_sys_mm_call, __NR_pkey_mprotect)
WITH_NR(zv_sys_mm_call, __NR_madvise)
WITH_NR(zv_sys_mm_call, __NR_mremap)
WITH_NR(zv_sys_dup2, __NR_dup2)
WITH_NR(zv_sys_dup2, __NR_dup3)
WITH_NR(zv_sys_masked_wait, __NR_ppoll)
WITH_NR(zv_sys_masked_wait, __NR_pselect6)
WITH_NR(zv_sys_masked_wait, __NR_epoll_pwait)
WITH_NR(zv_sys_masked_wait, __NR_epoll_pwait2)
WITH_NR(zv_sys_sigmask_arg, __NR_signalfd)
WITH_NR(zv_sys_sigmask_arg, __NR_signalfd4)
WITH_NR(zv_sys_sigmask_arg, __NR_rt_sigtimedwait)
WITH_NR(zv_sys_id_get, __NR_getuid)
WITH_NR(zv_sys_id_get, __NR_geteuid)
WITH_NR(zv_sys_id_get, __NR_getgid)
WITH_NR(zv_sys_id_get, __NR_getegid)
WITH_NR(zv_sys_id_set, __NR_setuid)
WITH_NR(zv_sys_id_set, __NR_setgid)
WITH_NR(zv_sys_id_set, __NR_setreuid)
WITH_NR(zv_sys_id_set, __NR_setregid)
WITH_NR(zv_sys_id_set, __NR_setresuid)
WITH_NR(zv_sys_id_set, __NR_setresgid)
WITH_NR(zv_sys_id_set, __NR_setfsuid)
WITH_NR(zv_sys_id_set, __NR_setfsgid)
WITH_NR(zv_sys_id_set, __NR_unshare)
WITH_NR(zv_sys_id_set, __NR_setns)

static const zv_handler table[512] = {
	[__NR_rt_sigaction] = zv_sys_rt_sigaction,
	[__NR_rt_sigprocmask] = zv_sys_rt_sigprocmask,
	[__NR_rt_sigreturn] = zv_sys_rt_sigreturn,
	[__NR_sigaltstack] = zv_sys_sigaltstack,
	[__NR_rt_sigsuspend] = zv_sys_rt_sigsuspend,
	[__NR_ppoll] = zv_sys_masked_wait___NR_ppoll,
	[__NR_pselect6] = zv_sys_masked_wait___NR_pselect6,
	[__NR_epoll_pwait] = zv_sys_masked_wait___NR_epoll_pwait,
	[__NR_epoll_pwait2] = zv_sys_masked_wait___NR_epoll_pwait2,
	[__NR_signalfd] = zv_sys_sigmask_arg___NR_signalfd,
	[__NR_signalfd4] = zv_sys_sigmask_arg___NR_signalfd4,
	[__NR_rt_sigtimedwait] = zv_sys_sigmask_arg___NR_rt_sigtimedwait,
	[__NR_clone] = zv_sys_clone,
	[__NR_clone3] = zv_sys_clone3,
	[__NR_fork] = zv_sys_fork,
	[__NR_vfork] = zv_sys_vfork,
	[__NR_exit] = zv_sys_exit,
	[__NR_exit_group] = zv_sys_exit_group,
	[__NR_execve] = zv_sys_execve,
	[__NR_execveat] = zv_sys_execveat,
	[__NR_brk] = zv_sys_brk,
	[__NR_mmap] = zv_sys_mm_call___NR_mmap,
	[__NR_munmap] = zv_sys_mm_call___NR_munmap,
	[__NR_mprotect] = zv_sys_mm_call___NR_mprotect,
	[__NR_pkey_mprotect] = zv_sys_mm_call___NR_pkey_mprotect,
	[__NR_madvise] = zv_sys_mm_call___NR_madvise,
	[__NR_mremap] = zv_sys_mm_call___NR_mremap,
	[__NR_open] = zv_sys_path_call___NR_open,
	[__NR_openat] = zv_sys_path_call___NR_openat,
	[__NR_openat2] = zv_sys_path_call___NR_openat2,
	[__NR_readlink] = zv_sys_path_call___NR_readlink,
	[__NR_readlinkat] = zv_sys_path_call___NR_readlinkat,
	[__NR_stat] = zv_sys_path_call___NR_stat,
	[__NR_lstat] = zv_sys_path_call___NR_lstat,
	[__NR_newfstatat] = zv_sys_path_call___NR_newfstatat,
	[__NR_statx] = zv_sys_path_call___NR_statx,
	[__NR_access] = zv_sys_path_call___NR_access,
	[__NR_faccessat] = zv_sys_path_call___NR_faccessat,
	[__NR_faccessat2] = zv_sys_path_call___NR_faccessat2,
	[__NR_close] = zv_sys_close,
	[__NR_chroot] = zv_sys_chroot,
	[__NR_close_range] = zv_sys_close_range,
	[__NR_dup2] = zv_sys_dup2___NR_dup2,
	[__NR_dup3] = zv_sys_dup2___NR_dup3,
	[__NR_getdents64] = zv_sys_getdents64,
	[__NR_prctl] = zv_sys_prctl,
	[__NR_seccomp] = zv_sys_seccomp,
	[__NR_ptrace] = zv_sys_ptrace,
	[__NR_getpid] = zv_sys_getpid,
	[__NR_gettid] = zv_sys_gettid,
	[__NR_getuid] = zv_sys_id_get___NR_getuid,
	[__NR_geteuid] = zv_sys_id_get___NR_geteuid,
	[__NR_getgid] = zv_sys_id_get___NR_getgid,
	[__NR_getegid] = zv_sys_id_get___NR_getegid,
	[__NR_setuid] = zv_sys_id_set___NR_setuid,
	[__NR_setgid] = zv_sys_id_set___NR_setgid,
	[__NR_setreuid] = zv_sys_id_set___NR_setreuid,
	[__NR_setregid] = zv_sys_id_set___NR_setregid,
	[__NR_setresuid] = zv_sys_id_set___NR_setresuid,
	[__NR_setresgid] = zv_sys_id_set___NR_setresgid,
	[__NR_setfsuid] = zv_sys_id_set___NR_setfsuid,
	[__NR_setfsgid] = zv_sys_id_set___NR_setfsgid,
	[__NR_unshare] = zv_sys_id_set___NR_unshare,
	[__NR_setns] = zv_sys_id_set___NR_setns,
	[__NR_arch_prctl] = zv_sys_arch_prctl,
};

/* How the fast path treats each number: the host runs it (no handler), a
 * handler runs it, or it needs a full signal frame (the host's, with the
 * xsave image and the mask) because it changes the signal mask or the
 * context the guest resumes, starts tasks or images, or changes
 * interception; those bounce to the SIGSYS path. Filled from the table. */
uint8_t zv_call_kind[512] __attribute__((aligned(64)));
/* Hidden fds exist: the fast path's direct host calls check their fds. */
int zv_check_fds;
static const uint16_t frame_calls[] = {
	__NR_rt_sigprocmask, __NR_rt_sigreturn, __NR_clone, __NR_clone3, __NR_fork, __NR_vfork,
	__NR_execve, __NR_execveat, __NR_prctl, __NR_seccomp, __NR_ptrace,
};

void zv_dispatch_init(void)
{
	zv_check_fds = zv_hidden_fds_exist();
	for (int nr = 0; nr < 512; nr++)
		zv_call_kind[nr] = table[nr] ? ZV_KIND_HANDLER : ZV_KIND_HOST;
	for (size_t i = 0; i < sizeof frame_calls / sizeof frame_calls[0]; i++)
		zv_call_kind[frame_calls[i]] = ZV_KIND_FRAME;
	/* -c alone with the TSC: the fast path times host calls itself */
	int traced = zv_proc.trace.on || zv_proc.trace.inject || (zv_proc.trace.summary && !zv_count_tsc);
	for (int nr = 0; nr < 512; nr++)
		if ((traced || zv_time_hooked(nr)) && zv_call_kind[nr] == ZV_KIND_HOST)
			zv_call_kind[nr] = ZV_KIND_HANDLER; /* through zv_syscall: the layers see it */
	if (!traced && zv_proc.count_fd < 0)
		zv_call_kind[__NR_getpid] = zv_call_kind[__NR_gettid] = ZV_KIND_PID; /* sys/id.c's answers, inline */
}

long zv_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr)
{
	long a[6] = {
		(long)uc->mc.rdi, (long)uc->mc.rsi, (long)uc->mc.rdx,
		(long)uc->mc.r10, (long)uc->mc.r8, (long)uc->mc.r9,
	};
	if (zv_proc.trace.on || zv_proc.trace.summary || zv_proc.trace.inject)
		return zv_trace_call(t, uc, nr, a); /* which calls zv_dispatch_rest */
	return zv_dispatch_rest(t, uc, nr, a);
}

/* Everything below the trace layer: the guest's own filters, the kernel's
 * fds, virtual time, the handler or the host. */
long zv_dispatch_rest(struct zv_thread *t, struct zv_ucontext *uc, long nr, long *a)
{
	/* A vDSO entry is no system call natively: the guest's own SUD and
	 * seccomp never see it. */
	int guest_filters = (t->gsud.on || zv_proc.seccomp.mode) && !zv_vdso_call(uc->mc.rip);
	if (guest_filters && t->gsud.on && zv_guest_sud_traps(t, uc, nr))
		return nr; /* not made: rax keeps the number, as the host leaves it */
	if (guest_filters && zv_proc.seccomp.mode) {
		long r = zv_seccomp_check(t, uc, nr, a);
		if (r != ZV_SECCOMP_GO)
			return r;
	}
	if (zv_hidden_fds_exist() && zv_names_kernel_fd(nr, a))
		return -EBADF;
	if ((zv_proc.vt.on || zv_proc.host_vdso.ok) && zv_time_hooked(nr))
		return zv_time_call(t, uc, nr, a); /* which calls zv_call_args */
	return zv_call_args(t, uc, nr, a);
}

/* The call's own handler, or the host, with arguments a (which a layer such
 * as virtual time may have replaced). */
long zv_call_args(struct zv_thread *t, struct zv_ucontext *uc, long nr, long *a)
{
	if ((unsigned long)nr < 512 && table[nr])
		return table[nr](t, uc, a);
	return zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
