/* The per-thread kernel area (arch/thread.c): struct zv_thread, found by
 * masking the stack pointer, and the guest's signal dispositions it points
 * to. */
#ifndef ZV_ARCH_THREAD_H
#define ZV_ARCH_THREAD_H
#include <stdint.h>
#include "arch/context.h"
#include "arch/fast.h"
#include "trace/trace.h"
#include "cr/cr.h"

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
	int tid;                       /* the guest's: the host's, unless restored (cr/) */
	int htid;                      /* the host's */
	int pid;                       /* of this thread's process (a vfork child has its own) */
	int call_cancelled;            /* the current call's host syscall never started */
	int cred_valid;                /* uid..egid below are the host's */
	uint32_t uid, euid, gid, egid;
	uint64_t guest_gs;             /* the guest's %gs base (zpoline: %gs is the kernel's) */
	uint64_t pending_set;          /* bit per deferred signal */
	uint64_t host_held;            /* deferred signals the host keeps blocked until delivery (sys/signal.c) */
	struct zv_stack guest_ss;      /* the guest's sigaltstack (virtual) */
	int sigsys_blocked;            /* the guest believes SIGSYS is blocked */
	uint64_t kernel_blocked;       /* the other kernel signals (--checkpoint-on's) it believes blocked */
	int sigsys_held;               /* a SIGSYS sent while it was: pending in sigsys_info (sys/signal.c) */
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
	int sud_off;                   /* SUD is off in this thread (intercept/sudoff.c) */
	int sud_remake;                /* a host call interrupted only to arm it is made again */
	int exec_seen_done;            /* the last fault run again after code was made executable: */
	uint64_t exec_seen_ip;         /* intercept/sudoff_mm.c's count of such calls then, and where */
	int known;                     /* listed for zv_thread_each (intercept/sudoff.c arms every thread) */
	int handler_depth;             /* guest handler frames built and not returned from */
	struct {                       /* the guest's own Syscall User Dispatch */
		int on;
		uint64_t offset, len;
		const volatile char *selector;
	} gsud;
	/* Last, the large and rarely written: the fields above, which every
	 * call may write, then share one page, which a fork copies once. */
	struct zv_cr_thread cr;        /* checkpoint/restore (cr/cr.h) */
	struct zv_trace_thread trace;  /* zvisor trace's state of this thread (trace/trace.h) */
	zv_siginfo pending_info[65];
	zv_siginfo sigsys_info;
};

#define ZV_THREAD_MAGIC 0x7a76746872656164UL
_Static_assert(sizeof(struct zv_thread) <= ZV_THREAD_BYTES, "struct zv_thread outgrew its pages");

static inline struct zv_thread *zv_current(void)
{
	uintptr_t sp;
	asm volatile("mov %%rsp, %0" : "=r"(sp));
	return (struct zv_thread *)(sp & ~(ZV_BLOCK_SIZE - 1));
}

/* arch/thread.c */
struct zv_thread *zv_thread_alloc(void);
/* The block of this process's live thread with host tid htid, or NULL. */
struct zv_thread *zv_thread_find(int htid);
void zv_thread_known(struct zv_thread *t); /* registers t under its htid (a restored thread) */
/* Calls fn for each live thread's block, under the list's lock; returns
 * the sum of what fn returned. */
int zv_thread_each(int (*fn)(struct zv_thread *t, void *arg), void *arg);
void zv_thread_free(struct zv_thread *t);
void zv_thread_retire(struct zv_thread *t); /* its thread is about to exit */
void zv_thread_forget_dead(void);            /* in a fork child */
void zv_thread_fork_child(struct zv_thread *t); /* in a fork child, once its ids are set: t is its one thread */
long zv_thread_arm(struct zv_thread *t); /* sigaltstack + per-thread platform setup */
/* The same for a thread whose ids are known (a new image's first: both are zv_proc.pid). */
long zv_thread_arm_as(struct zv_thread *t, int tid, int pid);
#endif
