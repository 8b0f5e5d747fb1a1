/* Kernel-wide state: the process (one per guest process, copied by fork and
 * rebuilt by execve) and the per-thread kernel area. */
#ifndef ZV_ZVISOR_H
#define ZV_ZVISOR_H
#include <stdint.h>
#include <stddef.h>
#include "arch/context.h"
#include "arch/fast.h"
#include "loader/loader.h"
#include "trace/trace.h"
#include "sys/sysent.h"

#define ZV_VERSION "0.1.0"

enum zv_platform { ZV_PLAT_SUD, ZV_PLAT_SECCOMP, ZV_PLAT_ZPOLINE, ZV_PLAT_STUBS };
enum zv_rewrite { ZV_REWRITE_LAZY, ZV_REWRITE_NONE, ZV_REWRITE_LOAD };

/* Per-thread kernel area: one naturally aligned block per guest thread. The
 * block's first pages hold this struct, a guard page follows, and the rest is
 * the thread's kernel stack, registered as the host sigaltstack, so every
 * kernel entry that is a host signal runs on it and finds this struct by
 * masking rsp. The fast entry (zpoline) finds it through %gs and switches to
 * the same stack. */
#define ZV_BLOCK_SIZE (256UL * 1024)
#define ZV_THREAD_BYTES 12288UL /* room for struct zv_thread */
#define ZV_BLOCK_HEAD (ZV_THREAD_BYTES + 4096UL) /* struct + guard page */

/* The guest's signal dispositions: shared by threads made with
 * CLONE_SIGHAND, copied for a CLONE_VM child without it (vfork), which may
 * change its own before it execs. */
struct zv_sighand {
	volatile int lock;
	struct zv_ksigaction act[65];
};

struct zv_thread {
	struct zv_fast fast;           /* first: the fast entry addresses it through %gs */
	uint64_t magic;
	struct zv_sighand *sighand;    /* the dispositions this thread sees */
	struct zv_sighand own_sighand; /* storage when they are not shared */
	int tid;
	int pid;                       /* of this thread's process (a vfork child has its own) */
	int call_cancelled;            /* the current call's host syscall never started */
	int cred_valid;                /* uid..egid below are the host's */
	uint32_t uid, euid, gid, egid;
	uint64_t guest_gs;             /* the guest's %gs base (zpoline: %gs is the kernel's) */
	uint64_t pending_set;          /* bit per deferred signal */
	zv_siginfo pending_info[65];
	struct zv_stack guest_ss;      /* the guest's sigaltstack (virtual) */
	int sigsys_blocked;            /* the guest believes SIGSYS is blocked */
	int sigsys_held;               /* a SIGSYS sent while it was: pending (sys/signal.c) */
	zv_siginfo sigsys_info;
	int faults_blocked;            /* the guest blocks SIGSEGV or SIGBUS (see zv_unblock_faults) */
	uint64_t delivery_mask_set;    /* set while sigsuspend & co. apply a temporary mask */
	uint64_t delivery_mask;
	struct zv_ucontext *sys_uc;    /* guest context of the current kernel entry */
	struct zv_thread *next_dead;   /* list of blocks whose thread called exit */
	uint64_t guard_sp;             /* nonzero while a syscall may fault on guest memory */
	int is_thread;                 /* made with CLONE_THREAD (or the first thread): counted, reusable */
	int own_self_fd;               /* a CLONE_VM child's own zvisor fd after chroot, + 1 (sys/fs.c) */
	volatile char sud_selector;    /* SUD's selector: ALLOW only while the kernel runs the host's vDSO */
	volatile int in_host_vdso;     /* it does: its code counts as kernel code for signals */
	int traced;                    /* zvisor trace shows this thread's calls */
	int trace_injected;            /* the current call's result was injected */
	int trace_fd;                  /* -y: the fd whose path was read before the call (close) */
	int trace_slot;                /* trace/live.c: this thread's slot + 1, or 0 */
	char trace_fd_path[256];
	struct {                       /* the guest's own Syscall User Dispatch */
		int on;
		uint64_t offset, len;
		const volatile char *selector;
	} gsud;
};

#define ZV_THREAD_MAGIC 0x7a76746872656164UL
_Static_assert(sizeof(struct zv_thread) <= ZV_THREAD_BYTES, "struct zv_thread outgrew its pages");

static inline struct zv_thread *zv_current(void)
{
	uintptr_t sp;
	asm volatile("mov %%rsp, %0" : "=r"(sp));
	return (struct zv_thread *)(sp & ~(ZV_BLOCK_SIZE - 1));
}

/* The guest's own seccomp state (sys/seccomp.c). */
struct sock_filter;
#define ZV_MAX_FILTERS 64
struct zv_seccomp {
	int mode; /* 0, SECCOMP_MODE_STRICT or SECCOMP_MODE_FILTER */
	int nfilters;
	unsigned total;
	unsigned len[ZV_MAX_FILTERS];
	struct sock_filter *filter[ZV_MAX_FILTERS];
};

/* Virtual time (sys/vtime.c): per clock family, virtual = virt0 + (real -
 * real0) * num / den, or virt0 while frozen. */
enum { ZV_CLK_RT, ZV_CLK_MONO, ZV_CLK_BOOT, ZV_NCLK };
struct zv_vclock {
	int64_t real0, virt0; /* ns */
	int frozen;
};
struct zv_vtime {
	int on;
	int64_t num, den; /* the rate */
	struct zv_vclock clk[ZV_NCLK];
};

/* What the guest is shown as its vDSO (loader/vdso.c). */
enum zv_vdso_mode { ZV_VDSO_AUTO, ZV_VDSO_KERNEL, ZV_VDSO_NONE };
#define ZV_VDSO_STUB_AREA 64

struct zv_proc {
	enum zv_platform platform;
	int pid;                 /* cached host pid; refreshed by fork */
	int count_fd, err_fd;    /* hidden kernel fds, -1 when unused */
	int self_fd;             /* hidden: zvisor's own executable, opened before a chroot (exec.c) */
	int leader_pid;          /* the first guest process: prints reports */
	int seccomp_installed;
	int sandboxed;           /* the guest turned on its own SUD or seccomp (sys/sandbox.c's layer) */
	volatile int nthreads;
	uint64_t text_start, text_end;
	enum zv_rewrite rewrite;
	unsigned rewrite_after;  /* a site is rewritten at its n-th SIGSYS */
	int no_cache;            /* --no-cache: the stubs platform keeps no windows on disk */
	int carry_fd;            /* an exec's copy of the fd the file is named through (sys/exec.c) */
	int no_cred_cache;       /* user namespaces changed: ask the host for ids */
	int stats;               /* --stats: counters below, printed at exit */
	unsigned long stat_fast, stat_sigsys, stat_bounced;
	uint64_t brk_start, brk_cur;
	volatile int lock;       /* guards brk */
	struct zv_sighand sighand;    /* the dispositions of the first thread */
	char exe_path[ZV_PATH_MAX];   /* what /proc/self/exe shows the guest */
	struct zv_seccomp seccomp;
	int seccomp_fd;               /* the filters on their way through execve */
	struct zv_vtime vt;           /* --time */
	enum zv_vdso_mode vdso_mode;  /* --vdso */
	struct zv_trace trace;        /* zvisor trace, -c */
	int trace_exec_traced;        /* the exec'ing thread was traced */
	uint64_t vdso_stubs;          /* the vDSO's stubs into the kernel, 0 if none */
	struct {                      /* the host's vDSO functions, for the kernel's own clock reads */
		volatile int ok;      /* mapped and usable: cleared when the guest touches them */
		uint64_t lo, hi;      /* [vvar*] and [vdso] */
		long (*clock_gettime)(long clk, void *ts);
		long (*gettimeofday)(void *tv, void *tz);
		long (*time)(void *tloc);
	} host_vdso;
};

extern struct zv_proc zv_proc;

/* Small spin lock; reset in a fork child since its holder may not exist. */
static inline void zv_lock(volatile int *l)
{
	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		asm volatile("pause");
}
static inline void zv_unlock(volatile int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

static inline int zv_in_kernel_text(uint64_t ip)
{
	return ip >= zv_proc.text_start && ip < zv_proc.text_end;
}

/* Page 0 and the entry page: kernel code that is not kernel text. */
static inline int zv_in_trampoline(uint64_t ip)
{
	return zv_proc.platform == ZV_PLAT_ZPOLINE &&
	       (ip < 4096 || (ip >= (uint64_t)ZV_ENTRY_PAGE && ip < (uint64_t)ZV_ENTRY_PAGE + 4096));
}

/* Whether the guest cannot read the byte at p (sys/mm.c). */
int zv_guest_unreadable(uint64_t p);

/* The fd of zvisor's own executable that execve goes through after a
 * chroot: a CLONE_VM child (vfork, Go's exec helper) keeps its own, since
 * zv_proc is its parent's memory and the fd is in its own table. */
static inline int zv_self_fd(struct zv_thread *t)
{
	return t && t->own_self_fd ? t->own_self_fd - 1 : zv_proc.self_fd;
}

/* A guest pointer the kernel must not read: page 0 and the entry page are
 * unmapped for the guest (readable on CPUs without protection keys), and a
 * pointer into the lowest 64 KiB (NULL plus a field's offset) is checked,
 * so that a handler reading a guest structure returns EFAULT for it, as the
 * host would, before anything else. */
static inline int zv_bad_guest_ptr(uint64_t p)
{
	return zv_in_trampoline(p) || (p < 65536 && zv_guest_unreadable(p));
}

/* Fatal error inside zvisor: one line, exit status 126 or as given. */
__attribute__((noreturn)) void zv_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* arch/thread.c */
struct zv_thread *zv_thread_alloc(void);
void zv_thread_free(struct zv_thread *t);
void zv_thread_retire(struct zv_thread *t); /* its thread is about to exit */
void zv_thread_forget_dead(void);            /* in a fork child */
long zv_thread_arm(struct zv_thread *t); /* sigaltstack + per-thread platform setup */

/* intercept/platform.c */
long zv_platform_install(void);          /* once per process image */
long zv_platform_arm_thread(struct zv_thread *t); /* SUD (and %gs) for the calling thread */
void zv_sigsys_handler(int sig, zv_siginfo *si, void *uc);

/* arch/trampoline.c, intercept/fastpath.c, intercept/redzone.c */
long zv_trampoline_map(void);
long zv_fast_syscall(struct zv_thread *t);
void zv_fast_bounced(struct zv_thread *t, struct zv_ucontext *uc);
int zv_fast_fault(struct zv_thread *t, struct zv_ucontext *uc);
int zv_site_safe(uint64_t site, void *uc);

/* sys/id.c: calls answered from kernel state */
long zv_sys_getpid(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_gettid(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_id_get(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_id_set(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_arch_prctl(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
void zv_ids_after_clone(struct zv_thread *t, uint64_t flags);

/* loader/vdso.c */
int zv_vdso_wanted(void);
void zv_vdso_setup(uint64_t *auxv);
static inline int zv_vdso_call(uint64_t ret) /* ret: a call's return address */
{
	return zv_proc.vdso_stubs && ret - zv_proc.vdso_stubs <= ZV_VDSO_STUB_AREA;
}

long zv_host_vdso_call(int which, long a, long b); /* 0 clock_gettime, 1 gettimeofday, 2 time */
void zv_host_vdso_touched(uint64_t addr, uint64_t len);

/* sys/vtime.c (its hooks: sys/vtime.h) */
int zv_time_setup(const char *spec, char *why, size_t n);
int zv_time_format(char *buf, size_t n);
const char *zv_time_restore(const char *s);

/* sys/entry.c: every platform's way into the kernel and out */
enum { ZV_KIND_HOST, ZV_KIND_HANDLER, ZV_KIND_FRAME, ZV_KIND_PID /* getpid, gettid: no layer on */ };
extern uint8_t zv_call_kind[512]; /* sys/layers.c */
extern int zv_check_fds;          /* sys/layers.c: the fast path's host calls check for hidden fds */
#define ZV_NORESULT (-4096L - 1) /* handler set the guest's registers itself */
#define ZV_FAULT_SIGNALS (ZV_SIGBIT(11) | ZV_SIGBIT(7)) /* SIGSEGV, SIGBUS: see zv_unblock_faults */
#define ZV_CANCELLED (-4096L - 3) /* zv_sc_cancellable: a deferred signal stopped the call before it began */
long zv_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr);
void zv_frame_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr);
void zv_frame_result(struct zv_thread *t, struct zv_ucontext *uc, long nr, long r);
void zv_entry_count(struct zv_thread *t, long nr, long r, int vdso);
void zv_layers_fold(void); /* sys/layers.c */
long zv_host_call(struct zv_thread *t, long nr, long a, long b, long c, long d, long e, long f);
long zv_host_call_args(struct zv_thread *t, const long args[7]);

/* sys/signal.c */
void zv_signals_init(struct zv_sighand *sh);
void zv_host_sighandler(int sig, zv_siginfo *si, void *uc);
void zv_signals_on_exit(struct zv_thread *t, struct zv_ucontext *uc);
int zv_restart_on_eintr(struct zv_thread *t, long nr, struct zv_ucontext *uc);
long zv_sys_rt_sigaction(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_rt_sigprocmask(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_rt_sigreturn(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_sigaltstack(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_rt_sigsuspend(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_masked_wait(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_sigmask_arg(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_rt_sigpending(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
uint64_t zv_guest_mask(struct zv_thread *t, struct zv_ucontext *uc);
void zv_unblock_faults(struct zv_thread *t, struct zv_ucontext *uc);
void zv_host_set_mask(uint64_t mask, uint64_t *old);
__attribute__((noreturn)) void zv_die_by_signal(int sig);
void zv_clear_handlers(struct zv_sighand *sh);
void zv_force_signal(struct zv_thread *t, struct zv_ucontext *uc, const zv_siginfo *si);

/* sys/proc.c */
long zv_sys_clone(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_clone3(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_fork(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_vfork(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_exit(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_exit_group(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
void zv_report_at_exit(void);

/* sys/exec.c */
long zv_sys_execve(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_execveat(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);

/* sys/fs.c */
const char *zv_translate_path(const char *path);
long zv_sys_path_call(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_close(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_close_range(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_dup2(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_getdents64(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
int zv_hide_fd(int fd);
int zv_is_kernel_fd(int fd);
int zv_names_kernel_fd(long nr, const long *a);
int zv_hidden_fds_exist(void);
extern int zv_check_fds;
long zv_sys_chroot(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);

/* sys/sandbox.c */
long zv_sys_prctl(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_seccomp(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_ptrace(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
int zv_guest_sud_traps(struct zv_thread *t, struct zv_ucontext *uc, long nr);
void zv_sandbox_on(void); /* the guest turned on its SUD or seccomp */

/* sys/seccomp.c */
#define ZV_SECCOMP_GO (-4096L - 2) /* seccomp lets the call run */
long zv_seccomp_check(struct zv_thread *t, struct zv_ucontext *uc, long nr, const long *a);
long zv_prctl_seccomp(long mode, long arg);
int zv_seccomp_save(void);
void zv_seccomp_restore(int fd);

/* sys/mm.c */
void zv_brk_init(uint64_t start);
long zv_sys_brk(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);
long zv_sys_mm_call(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr);

/* loader/mm_fields.c */
void zv_publish_mm_fields(uint64_t sp, const void *img, size_t len);

/* main.c: the options an exec'd image inherits */
struct zv_state_opts;
int zv_format_state(char *buf, size_t n, uint64_t guest_mask, int sigsys_blocked);
#endif
