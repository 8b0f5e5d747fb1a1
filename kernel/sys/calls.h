/* The calls the kernel handles itself (the handlers sys/sysent.c's rows
 * name) and what their files offer the rest of the kernel, by file. */
#ifndef ZV_SYS_CALLS_H
#define ZV_SYS_CALLS_H
#include <stdint.h>
#include "arch/context.h"
#include "sys/proc.h"

struct zv_call; /* sys/layer.h */

/* sys/id.c: calls answered from kernel state */
long zv_sys_getpid(struct zv_call *c);
long zv_sys_gettid(struct zv_call *c);
long zv_sys_id_get(struct zv_call *c);
long zv_sys_id_set(struct zv_call *c);
long zv_sys_arch_prctl(struct zv_call *c);
void zv_ids_after_clone(struct zv_thread *t, uint64_t flags);

/* sys/signal.c */
void zv_signals_init(struct zv_sighand *sh, const uint64_t *ignored);
uint64_t zv_signals_ignored(const struct zv_sighand *sh);
void zv_signals_reinstall(struct zv_sighand *sh);
void zv_host_sighandler(int sig, zv_siginfo *si, void *uc); /* arch/hostsig.c */
void zv_kernel_interrupted(struct zv_ucontext *uc);                        /* arch/hostsig.c */
int zv_interrupted_kernel(struct zv_thread *t, struct zv_ucontext *uc);   /* arch/hostsig.c */
/* What arch/hostsig.c hands to sys/signal.c. */
int zv_signal_is_fault(int sig, const zv_siginfo *si);
void zv_signal_defer_held(struct zv_thread *t, int sig, const zv_siginfo *si, struct zv_ucontext *uc);
void zv_signals_unhold(struct zv_thread *t, struct zv_ucontext *uc);
void zv_signal_from_guest(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc);
void zv_signals_on_exit(struct zv_thread *t, struct zv_ucontext *uc);
int zv_restart_on_eintr(struct zv_thread *t, long nr, struct zv_ucontext *uc);
long zv_sys_rt_sigaction(struct zv_call *c);
long zv_sys_rt_sigprocmask(struct zv_call *c);
long zv_sys_rt_sigreturn(struct zv_call *c);
long zv_sys_sigaltstack(struct zv_call *c);
long zv_sys_rt_sigsuspend(struct zv_call *c);
long zv_sys_masked_wait(struct zv_call *c);
long zv_sys_sigmask_arg(struct zv_call *c);
long zv_sys_rt_sigpending(struct zv_call *c);
uint64_t zv_guest_mask(struct zv_thread *t, struct zv_ucontext *uc);
void zv_unblock_faults(struct zv_thread *t, struct zv_ucontext *uc);
void zv_host_set_mask(uint64_t mask, uint64_t *old);
__attribute__((noreturn)) void zv_die_by_signal(int sig);
void zv_clear_handlers(struct zv_sighand *sh);
void zv_force_signal(struct zv_thread *t, struct zv_ucontext *uc, const zv_siginfo *si);

/* sys/proc.c */
long zv_sys_clone(struct zv_call *c);
long zv_sys_clone3(struct zv_call *c);
long zv_sys_fork(struct zv_call *c);
int zv_sys_plain_fork(long nr, const struct zv_ucontext *uc);
long zv_sys_vfork(struct zv_call *c);
long zv_sys_exit(struct zv_call *c);
long zv_sys_exit_group(struct zv_call *c);
void zv_report_at_exit(void);

/* sys/exec.c */
long zv_sys_execve(struct zv_call *c);
long zv_sys_execveat(struct zv_call *c);

/* sys/fs.c */
const char *zv_translate_path(const char *path);
long zv_sys_path_call(struct zv_call *c);
long zv_sys_close(struct zv_call *c);
long zv_sys_close_range(struct zv_call *c);
long zv_sys_dup2(struct zv_call *c);
long zv_sys_getdents64(struct zv_call *c);
int zv_hide_fd(int fd);
int zv_is_kernel_fd(int fd);
int zv_names_kernel_fd(long nr, const long *a);
int zv_hidden_fds_exist(void);
long zv_sys_chroot(struct zv_call *c);

/* sys/sandbox.c */
long zv_sys_prctl(struct zv_call *c);
long zv_sys_seccomp(struct zv_call *c);
long zv_sys_ptrace(struct zv_call *c);
int zv_guest_sud_traps(struct zv_thread *t, struct zv_ucontext *uc, long nr);
void zv_sandbox_on(void); /* the guest turned on its SUD or seccomp */

/* sys/mm.c */
void zv_brk_init(uint64_t start);
long zv_sys_brk(struct zv_call *c);
long zv_sys_mm_call(struct zv_call *c);
long zv_sys_shmat(struct zv_call *c);
int zv_guest_unreadable(uint64_t p); /* the guest cannot read the byte at p */

/* A guest pointer the kernel must not read: page 0 and the entry page are
 * unmapped for the guest (readable on CPUs without protection keys), and a
 * pointer into the lowest 64 KiB (NULL plus a field's offset) is checked,
 * so that a handler reading a guest structure returns EFAULT for it, as the
 * host would, before anything else. */
static inline int zv_bad_guest_ptr(uint64_t p)
{
	return zv_in_trampoline(p) || (p < 65536 && zv_guest_unreadable(p));
}

/* sys/guestcopy.c: n bytes from src to dst, one of them the guest's
 * address guest; 0, or -EFAULT where the host would give it. */
long zv_guest_copy(void *dst, const void *src, size_t n, uint64_t guest);
#endif
