/* The calls the kernel handles itself (the handlers sys/sysent.c's rows
 * name) and what their files offer the rest of the kernel, by file. */
#ifndef ZV_SYS_CALLS_H
#define ZV_SYS_CALLS_H
#include <stdint.h>
#include "arch/context.h"
#include "sys/proc.h"

struct zv_call; /* sys/layer.h */

/* sys/kernrel.c: --kernel-release */
extern char zv_kernel_release[65];
int zv_kernel_release_set(const char *s); /* -1: empty, too long or with a comma */
long zv_sys_uname(struct zv_call *c);

/* sys/id.c: calls answered from kernel state */
long zv_sys_getpid(struct zv_call *c);
long zv_sys_gettid(struct zv_call *c);
long zv_sys_id_get(struct zv_call *c);
long zv_sys_id_set(struct zv_call *c);
long zv_sys_arch_prctl(struct zv_call *c);
void zv_ids_after_clone(struct zv_thread *t, const struct zv_thread *parent, uint64_t flags);
/* From now on each thread's cred is the answer (a feature keeps it). */
void zv_ids_make_virtual(void);
/* Called, when set, for each line of /proc/.../status procview does not
 * rewrite itself ("Key:\tvalue", the key keylen bytes long with its colon)
 * of a thread whose credentials are c: the line rewritten into buf and its
 * length, or 0 to keep it (the ids and capabilities of virtual
 * credentials). */
extern int (*zv_ids_status_hook)(const struct zv_creds *c, const char *line, size_t keylen, char *buf, size_t size);
/* Set with it where other processes' ids are virtual too: the
 * credentials of thread tid of another process, whose host status text is
 * raw (len bytes): 1 and *c, or 0 to keep its lines. */
extern int (*zv_ids_other_hook)(int tid, const char *raw, size_t len, struct zv_creds *c);
/* Set with them: the real uid the guest sees for host thread tid (pid 0:
 * of a process not known) of host process pid, whose host real uid is
 * huid, asked by self: a signal's sender, a SIGCHLD's or wait's child. */
extern uint32_t (*zv_ids_sender_hook)(const struct zv_thread *self, int tid, int pid, uint32_t huid);
static inline uint32_t zv_sender_uid(const struct zv_thread *self, int tid, int pid, uint32_t huid)
{
	return zv_ids_sender_hook ? zv_ids_sender_hook(self, tid, pid, huid) : huid;
}
/* Whether the kernel wrote the sender's real uid into a siginfo of sig
 * with code (si_uid, and si_pid the sender's): kill's, tkill's and a
 * message queue's notification, and a SIGCHLD's child's. sigqueue's is
 * the sender's own word. */
static inline int zv_si_names_uid(int sig, int code)
{
	return code == 0 /* SI_USER */ || code == -6 /* SI_TKILL */ || code == -3 /* SI_MESGQ */ ||
	       (sig == 17 /* SIGCHLD */ && code >= 1 && code <= 6 /* CLD_* */);
}

/* sys/signal.c */
void zv_signals_init(struct zv_sighand *sh, const uint64_t *ignored);
void zv_signals_exec(struct zv_thread *t);
void zv_signals_leave_kernel(struct zv_thread *t, struct zv_ucontext *uc);
uint64_t zv_signals_ignored(const struct zv_sighand *sh);
void zv_signals_reinstall(struct zv_sighand *sh);
void zv_host_sighandler(int sig, zv_siginfo *si, void *uc); /* sys/hostsig.c */
void zv_kernel_interrupted(struct zv_ucontext *uc);                        /* sys/hostsig.c */
int zv_interrupted_kernel(struct zv_thread *t, struct zv_ucontext *uc);   /* sys/hostsig.c */
/* What sys/hostsig.c hands to sys/signal.c. */
int zv_signal_is_fault(int sig, const zv_siginfo *si);
void zv_signal_defer_held(struct zv_thread *t, int sig, const zv_siginfo *si, struct zv_ucontext *uc);
void zv_signals_unhold(struct zv_thread *t, struct zv_ucontext *uc);
void zv_signal_from_guest(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc);
void zv_signals_on_exit(struct zv_thread *t, struct zv_ucontext *uc);
int zv_restart_on_eintr(struct zv_thread *t, long nr, struct zv_ucontext *uc);
/* Whether a deferred signal the guest does not block will run its handler. */
int zv_signal_handler_due(struct zv_thread *t, struct zv_ucontext *uc);
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
int zv_open_faults(struct zv_thread *t);
uint64_t zv_close_faults_in(struct zv_thread *t, struct zv_ucontext *uc);
int zv_blocked_fault(struct zv_thread *t, int sig, const zv_siginfo *si);
void zv_host_set_mask(uint64_t mask, uint64_t *old);
__attribute__((noreturn)) void zv_die_by_signal(int sig);
void zv_clear_handlers(struct zv_sighand *sh);
void zv_force_signal(struct zv_thread *t, struct zv_ucontext *uc, const zv_siginfo *si);
void zv_force_death(struct zv_thread *t, const zv_siginfo *si);
void zv_kwork_request(struct zv_thread *t, struct zv_ucontext *uc);
void zv_signal_post(struct zv_thread *t, const zv_siginfo *si);
void zv_signal_set_mask(struct zv_thread *t, struct zv_ucontext *uc, uint64_t m);

/* sys/proc.c */
long zv_sys_clone(struct zv_call *c);
long zv_sys_clone3(struct zv_call *c);
long zv_sys_fork(struct zv_call *c);
int zv_sys_plain_fork(long nr, const struct zv_ucontext *uc);
/* Whether call nr is an execve the fast path makes itself, without the
 * SIGSYS bounce that gives it a frame: one that will most likely load the
 * new image in this process (sys/exec.c). uc (the fast path's) is then
 * given what the image is entered with, and ZV_MASK_UNKNOWN for a mask. */
int zv_exec_without_frame(struct zv_thread *t, long nr, struct zv_ucontext *uc);
#define ZV_MASK_UNKNOWN (~0UL) /* no real mask: SIGKILL and SIGSTOP are never blocked */
long zv_sys_vfork(struct zv_call *c);
long zv_sys_exit(struct zv_call *c);
long zv_sys_exit_group(struct zv_call *c);
long zv_sys_setpgid(struct zv_call *c); /* EACCES for a child that made an in-process exec */
void zv_report_at_exit(void);

/* sys/exec.c */
long zv_sys_execve(struct zv_call *c);
long zv_sys_execveat(struct zv_call *c);
/* An execve to be made in this process (kernel/inexec.c sets the hook):
 * the file resolved (r) and checked, argv counted. */
struct zv_resolved;
struct zv_exec_req {
	struct zv_thread *t;
	struct zv_ucontext *uc;   /* the guest's context at the call */
	const char *path;         /* what to load (translated, or an fd's name) */
	const char *execfn;       /* AT_EXECFN: what the guest named */
	char *const *argv, *const *envp; /* the guest's */
	long argc;
	struct zv_resolved *r;
	long nr;
	const long *a;
};
/* Returns -errno (an argument's EFAULT or E2BIG, before the point of no
 * return), ZV_EXEC_TO_HOST to leave it to the host's execve, or never. */
extern long (*zv_exec_here)(struct zv_exec_req *q);
#define ZV_EXEC_TO_HOST 1L
void zv_exec_give_back_signals(struct zv_thread *t, uint64_t *saved);
void zv_exec_frameless_mask(struct zv_thread *t, struct zv_ucontext *uc, const uint64_t *host);
/* The guest's argv or envp has n pointers before its NULL, or -EFAULT. */
long zv_exec_count_strings(char *const *v);

/* sys/fs.c */
const char *zv_translate_path(const char *path);
long zv_sys_path_call(struct zv_call *c);
long zv_sys_close(struct zv_call *c);
long zv_sys_close_range(struct zv_call *c);
long zv_sys_dup2(struct zv_call *c);
long zv_sys_getdents64(struct zv_call *c);
int zv_hide_fd(int fd);
int zv_hide_fd_flags(int fd, int flags); /* O_CLOEXEC: not carried by a host exec */
long zv_hidden_fd_top(void); /* where hidden fds go: below min(fd limit, 1024) */
int zv_is_kernel_fd(int fd);
int zv_names_kernel_fd(long nr, const long *a);
int zv_hidden_fds_exist(void);
/* A feature's hidden fd (already moved by zv_hide_fd): *keeper holds its
 * number, which the kernel updates when the guest takes that number. */
int zv_keep_hidden_fd(int *keeper);
void zv_forget_hidden_fd(int *keeper);
int zv_hidden_fd_list(int *out, int n); /* the hidden fds, at most n */
long zv_sys_chroot(struct zv_call *c);

/* sys/sandbox.c */
long zv_sys_prctl(struct zv_call *c);
long zv_sys_seccomp(struct zv_call *c);
int zv_guest_sud_traps(struct zv_thread *t, struct zv_ucontext *uc, long nr);
void zv_sandbox_on(void); /* the guest turned on its SUD or seccomp */

/* sys/mm.c */
/* A restored stack [lo, hi) is shown as [stack] (cr/restore.c; procview). */
void zv_procview_stack(uint64_t lo, uint64_t hi);
/* The restored stack's range (lo, returned, and *hi), or 0. */
uint64_t zv_pv_stack(uint64_t *hi);
void zv_brk_init(uint64_t start);
/* The host's personality, asked once: a guest that changes it has its
 * next exec made by the host (sys/exec_note.c), in a new zvisor. */
long zv_personality(void);
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
/* Reads n bytes of guest memory at addr: 0, or -EFAULT (never faults). */
int zv_peek(void *dst, uint64_t addr, size_t n);
#endif
