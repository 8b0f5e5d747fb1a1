/* The per-thread kernel area (sys/thread.c): struct zv_thread, found by
 * masking the stack pointer, and the guest's signal dispositions it points
 * to. */
#ifndef ZV_ARCH_THREAD_H
#define ZV_ARCH_THREAD_H
#include "arch/fast.h"

/* Per-thread kernel area: one naturally aligned block per guest thread: a
 * guard page (unmapped: a hole, which for the first thread is the one below
 * the window's first chunk, so its block adds no mapping), the thread's
 * kernel stack, and this struct at the top, where the stack ends. The
 * stack is registered as the host sigaltstack, so every kernel entry that
 * is a host signal runs on it and finds this struct by masking rsp; the fast
 * entries find it through %gs and switch to the same stack. The struct
 * starts ZV_THREAD_SKEW bytes into a page: the stack's top bytes and the
 * struct's first fields, which every call writes, share that page (a fork
 * copies one page per side, not two). */
#ifdef __ASSEMBLER__
#define ZV_UL(n) n
#else
#define ZV_UL(n) n##UL
#endif
#define ZV_BLOCK_SIZE (ZV_UL(256) * 1024)
#define ZV_BLOCK_GUARD ZV_UL(4096)
#define ZV_THREAD_SKEW ZV_UL(3072)
#define ZV_THREAD_OFF (ZV_BLOCK_SIZE - ZV_UL(16384) + ZV_THREAD_SKEW) /* the struct, and the stack's top */

#ifndef __ASSEMBLER__ /* (the numbers above serve intercept/sigsysret.S too) */
#include <stdint.h>
#include "arch/context.h"
#include "trace/state.h" /* the features' state in the block */
#include "cr/state.h"
#include "ptrace/state.h"

/* A thread's credentials as the guest sees them: the host's, cached by
 * sys/id.c, or virtual ones that a feature keeps (zv_proc.cred_virtual:
 * --fake-root, --ids), which no host call changes and which the getuid
 * family answers from alone. */
/* Supplementary groups a virtual identity can hold (the host's limit,
 * NGROUPS_MAX, is 65536: a longer list is refused with EINVAL). */
#define ZV_CRED_GROUPS 32

struct zv_creds {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	/* the rest is kept for virtual credentials only */
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	uint32_t securebits;
	uint32_t ngroups;
	uint32_t groups[ZV_CRED_GROUPS]; /* sorted, as the host keeps them */
};

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
	int tid;                       /* the guest's: the host's, unless restored (cr/) */
	int htid;                      /* the host's */
	int pid;                       /* of this thread's process (a vfork child has its own) */
	int call_cancelled;            /* the current call's host syscall never started */
	int cred_valid;                /* cred holds the ids (sys/id.c) */
	uint64_t guest_gs;             /* the guest's %gs base (zpoline: %gs is the kernel's) */
	uint64_t pending_set;          /* bit per deferred signal */
	uint64_t host_held;            /* deferred signals the host keeps blocked until delivery (sys/signal.c) */
	int forking;                   /* the pid of the process that forks, until its child is set up (sys/proc.c) */
	int exec_exit;                 /* another thread execs: exit on the way out (sys/exec_reset.c) */
	int exit_alone;                /* its exit(2) ends this thread only, not the process (its exit event) */
	uint64_t fork_own;             /* signals deferred in that child meanwhile */
	int fork_pid;                  /* where the host writes a fork child's pid (CLONE_CHILD_SETTID) */
	struct zv_stack guest_ss;      /* the guest's sigaltstack (virtual) */
	int sigsys_blocked;            /* the guest believes SIGSYS is blocked */
	uint64_t kernel_blocked;       /* the other kernel signals (--checkpoint-on's) it believes blocked */
	int sigsys_held;               /* a SIGSYS sent while it was: pending in sigsys_info (sys/signal.c) */
	int faults_blocked;            /* the guest blocks SIGSEGV or SIGBUS (see zv_unblock_faults) */
	uint64_t faults_open;          /* those of them a fast call opened on the host (zv_open_faults) */
	uint64_t delivery_mask_set;    /* set while sigsuspend & co. apply a temporary mask */
	uint64_t delivery_mask;
	struct zv_ucontext *sys_uc;    /* guest context of the current kernel entry */
	struct zv_thread *next_dead;   /* list of blocks whose thread called exit */
	uint64_t guard_sp;             /* nonzero while a syscall may fault on guest memory */
	int is_thread;                 /* made with CLONE_THREAD (or the first thread): counted, reusable */
	int vfork_child;               /* not a thread, made with CLONE_VM|CLONE_VFORK: its parent waits */
	int files_shared;              /* not a thread, made with CLONE_FILES: its fd table is another's too */
	int own_self_fd;               /* a CLONE_VM child's own zvisor fd after chroot, + 1 (sys/fs.c) */
	volatile char sud_selector;    /* SUD's selector: ALLOW only while the kernel runs the host's vDSO */
	volatile int in_host_vdso;     /* it does: its code counts as kernel code for signals */
	int sud_off;                   /* SUD is off in this thread (intercept/sudoff.c) */
	int sud_remake;                /* a host call interrupted only to arm it is made again */
	int exec_seen_done;            /* the last fault run again after code was made executable: */
	uint64_t exec_seen_ip;         /* intercept/sudoff_mm.c's count of such calls then, and where */
	int known;                     /* listed for zv_thread_each (intercept/sudoff.c arms every thread) */
	int handler_depth;             /* guest handler frames built and not returned from */
	int dying;                     /* the signal it dies by at its return to the guest (sys/sigdeath.c) */
	int death_due;                 /* a forced death by death_info, on the way out */
	volatile char kwork;           /* a feature's work waits for the way out (zv_kwork_request) */
	char bounce_all;               /* every call takes the frame path (a tracer's syscall stops) */
	int tracer_pid;                /* the guest's ptrace: its tracer's pid, 0 if none (status' TracerPid) */
	uint64_t ret_rip, ret_rax;     /* where the last SIGSYS entry returned the guest, and with what (lost_trap) */
	int restarted;                 /* the call of this frame is made again (rip back on it: zv_frame_result) */
	uint64_t restart_rip;          /* (where rip went back to, and the number in rax) */
	long restart_nr;
	uint64_t robust_head;          /* the guest's set_robust_list, which execve walks (sys/exec_note.c) */
	int clear_tid_set;             /* the host has a clear_child_tid for this thread */
	struct {                       /* the guest's own Syscall User Dispatch */
		int on;
		uint64_t offset, len;
		const volatile char *selector;
	} gsud;
	/* Last, the large and rarely written: the fields above, which every
	 * call may write, then share one page, which a fork copies once. */
	struct zv_sighand own_sighand; /* the dispositions when they are not shared (vfork) */
	struct zv_creds cred;           /* its ids: the host's, cached, or virtual (above) */
	struct zv_cr_thread cr;        /* checkpoint/restore (cr/cr.h) */
	struct zv_trace_thread trace;  /* zvisor trace's state of this thread (trace/trace.h) */
	struct zv_pt_thread pt;        /* the guest's ptrace, this thread as a tracee (ptrace/state.h) */
	zv_siginfo pending_info[65];
	zv_siginfo sigsys_info;
	zv_siginfo death_info;
};

#define ZV_THREAD_MAGIC 0x7a76746872656164UL
_Static_assert(sizeof(struct zv_thread) <= ZV_BLOCK_SIZE - ZV_THREAD_OFF, "struct zv_thread outgrew its pages");

static inline struct zv_thread *zv_current(void)
{
	uintptr_t sp;
	asm volatile("mov %%rsp, %0" : "=r"(sp));
	return (struct zv_thread *)((sp & ~(ZV_BLOCK_SIZE - 1)) + ZV_THREAD_OFF);
}

/* The block of t, and its kernel stack [lo, t) as the host's altstack. */
static inline uint64_t zv_block_of(const struct zv_thread *t) { return (uint64_t)t - ZV_THREAD_OFF; }
static inline struct zv_stack zv_kernel_stack(const struct zv_thread *t)
{
	return (struct zv_stack){ zv_block_of(t) + ZV_BLOCK_GUARD, 0, 0, ZV_THREAD_OFF - ZV_BLOCK_GUARD };
}

/* sys/thread.c */
struct zv_thread *zv_thread_alloc(void);
/* The block of this process's live thread with host tid htid, or NULL. */
struct zv_thread *zv_thread_find(int htid);
void zv_thread_known(struct zv_thread *t); /* registers t under its htid (a restored thread) */
/* Calls fn for each live thread's block, under the list's lock; returns
 * the sum of what fn returned. */
int zv_thread_each(int (*fn)(struct zv_thread *t, void *arg), void *arg);
void zv_thread_free(struct zv_thread *t);
void zv_thread_retire(struct zv_thread *t); /* its thread is about to exit */
/* The host tids of the live blocks but t's (up to max; returns how many
 * were found), and how many of them are not threads (a vfork child). */
int zv_thread_others(const struct zv_thread *t, int *htids, int max, int *not_threads);
void zv_thread_forget_dead(void);            /* in a fork child */
void zv_thread_fork_child(struct zv_thread *t); /* in a fork child, once its ids are set: t is its one thread */
long zv_thread_arm(struct zv_thread *t); /* sigaltstack + per-thread platform setup */
/* The same for a thread whose ids are known (a new image's first: both are zv_proc.pid). */
long zv_thread_arm_as(struct zv_thread *t, int tid, int pid);
#endif /* __ASSEMBLER__ */
#endif
