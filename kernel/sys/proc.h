/* The process: struct zv_proc, one per guest process, copied by fork and
 * rebuilt by execve, and the questions answered from it. */
#ifndef ZV_SYS_PROC_H
#define ZV_SYS_PROC_H
#include <stdint.h>
#include "arch/fast.h"
#include "arch/thread.h"
#include "sys/exec.h"
#include "sys/seccomp.h"
#include "sys/vtime.h"
#include "trace/state.h"

enum zv_platform { ZV_PLAT_SUD, ZV_PLAT_SECCOMP, ZV_PLAT_ZPOLINE, ZV_PLAT_STUBS };
/* What the guest is shown as its vDSO (--vdso: loader/vdso.c). */
enum zv_vdso_mode { ZV_VDSO_AUTO, ZV_VDSO_KERNEL, ZV_VDSO_NONE };
#define ZV_VDSO_STUB_AREA 64
enum zv_rewrite { ZV_REWRITE_LAZY, ZV_REWRITE_NONE, ZV_REWRITE_LOAD };
/* --exec: how a guest execve replaces the image (sys/exec.c). */
enum zv_exec_mode { ZV_EXEC_INPROCESS, ZV_EXEC_HOST };
#define ZV_CLOEXEC_FDS 1024 /* fds whose close-on-exec flag the bitmap follows */
#define ZV_VVAR_PARTS 3 /* [vvar*] mappings below the vDSO (6.18 has two) */
#define ZV_HOST_AUXV 48 /* pairs of the host's auxv kept for in-process execs */

/* What the guest did that an in-process exec could not undo, so the next
 * execve of this image goes through the host's (sys/exec_note.c). */
enum {
	ZV_EXEC_NEEDS_HOST_CREDS = 1 << 0,  /* ids or capabilities changed: execve recomputes them */
	ZV_EXEC_NEEDS_HOST_LAYOUT = 1 << 1, /* personality or RLIMIT_STACK: the host picks the layout at execve */
	ZV_EXEC_NEEDS_HOST_MM = 1 << 2,     /* mm state an exec drops with the mm: LDT, membarrier, io_uring */
	ZV_EXEC_NEEDS_HOST_SHARED = 1 << 3, /* a CLONE_VM child that is not a thread may live on this memory */
	ZV_EXEC_NEEDS_HOST_AIO = 1 << 4,    /* more aio contexts than the kernel keeps track of */
	ZV_EXEC_NEEDS_HOST_RESTORED = 1 << 5, /* a restored process (cr/restore.c) */
	ZV_EXEC_NEEDS_HOST_PTRACE = 1 << 6,   /* a tracee or tracer of the guest's ptrace (ptrace/area.c) */
};
#define ZV_MAX_AIO 16

struct zv_proc {
	enum zv_platform platform;
	int pid;                 /* the guest's pid: the host's, cached, unless restored (cr/) */
	int hpid;                /* the host's; both refreshed by fork */
	int count_fd, err_fd;    /* hidden kernel fds, -1 when unused */
	int self_fd;             /* hidden: zvisor's own executable, opened before a chroot (exec.c) */
	int leader_pid;          /* the first guest process: prints reports */
	int first_image;         /* zvisor run/trace's own image, not an exec'd one */
	int seccomp_installed;
	int sandboxed;           /* the guest turned on its own SUD or seccomp (sys/sandbox.c's layer) */
	int catch_signals;       /* a feature sees every signal first (the guest's ptrace): zvisor catches all */
	int exec_stop;           /* a layer looks at a new image's first instruction (exec_start) */
	volatile int nthreads;
	uint64_t text_start, text_end;
	enum zv_rewrite rewrite;
	unsigned rewrite_after;  /* a site is rewritten at its n-th SIGSYS */
	int no_cache;            /* --no-cache: the stubs platform keeps no windows on disk */
	int carry_fd;            /* an exec's copy of the fd the file is named through (sys/exec.c) */
	int no_cred_cache;       /* user namespaces changed: ask the host for ids */
	int cred_virtual;        /* each thread's cred is virtual, never the host's (sys/id.c) */
	int stats;               /* --stats: counters below, printed at exit */
	unsigned long stat_fast, stat_sigsys, stat_bounced, stat_restorers;
	unsigned long stat_analysed; /* mappings whose code was decoded (no cache entry served them) */
	unsigned long stat_inexec;    /* execs made in this process since its fork (not reset by them; a parent's setpgid reads it: sys/proc.c) */
	uint64_t brk_start, brk_cur;
	volatile int lock;       /* guards brk */
	volatile int fold_lock;  /* one zv_layers_fold at a time (sys/layers.c) */
	struct zv_sighand sighand;    /* the dispositions of the first thread */
	char exe_path[ZV_PATH_MAX];   /* what /proc/self/exe shows the guest */
	struct zv_seccomp seccomp;
	int seccomp_fd;               /* the filters on their way through execve */
	int tree_fd;                  /* the sites the tree knows, on their way through execve (intercept/treecache.c) */
	struct zv_vtime vt;           /* --time */
	enum zv_vdso_mode vdso_mode;  /* --vdso */
	struct zv_trace trace;        /* zvisor trace, -c */
	uint64_t vdso_stubs;          /* the vDSO's stubs into the kernel, 0 if none */
	/* In-process execs (sys/exec.c, kernel/inexec.c): what the host gave
	 * zvisor's first image, kept for the images that replace it here. */
	enum zv_exec_mode exec_mode;  /* --exec */
	uint64_t host_auxv[2 * ZV_HOST_AUXV]; /* the host's pairs (AT_PLATFORM into host_platform) */
	char host_platform[16];
	uint64_t host_sp;             /* the stack pointer the host started zvisor with (start_stack) */
	uint64_t stack_top;           /* the top of [stack], where each image's strings end */
	uint64_t vvar_size;           /* bytes of [vvar*] right below the vDSO (the same in every image) */
	uint64_t vvar_part[ZV_VVAR_PARTS]; /* their mappings' sizes, low to high (loader/vdso.c) */
	int vvar_parts;               /* how many; 0: unknown */
	uint64_t vdso_lo, vdso_hi;    /* [vvar*] and [vdso], as the host mapped them; 0: none or unknown */
	uint64_t rlim_stack;          /* RLIMIT_STACK's soft limit at the image's start (execve's E2BIG) */
	uint64_t mmap_top, upper_hi;  /* the host's mmap base and, above it, where the stack never grows (loader/layout.c); 0: unknown */
	unsigned exec_needs_host;     /* ZV_EXEC_NEEDS_HOST_* */
	int files_shared;             /* a CLONE_FILES child that is not a thread: execve unshares the table */
	uint32_t fd_gen;              /* moves at each guest call that may close or replace an fd (sys/fdflags.c) */
	int cloexec_exact;            /* cloexec_fds says which guest fds are close-on-exec (sys/fdflags.c) */
	uint64_t cloexec_fds[ZV_CLOEXEC_FDS / 64];
	int dumpable_set;             /* PR_SET_DUMPABLE was called: execve sets it back */
	int mlocked;                  /* mlockall was called: execve's new mm has nothing locked */
	int timers_made;              /* timer_create succeeded: execve deletes the POSIX timers */
	int naio;                     /* io_setup's contexts, which execve destroys */
	uint64_t aio[ZV_MAX_AIO];
	struct {                      /* the host's vDSO functions, for the kernel's own clock reads */
		volatile int ok;      /* mapped and usable: cleared when the guest touches them */
		uint64_t lo, hi;      /* [vvar*] and [vdso] */
		long (*clock_gettime)(long clk, void *ts);
		long (*gettimeofday)(void *tv, void *tz);
		long (*time)(void *tloc);
	} host_vdso;
};

extern struct zv_proc zv_proc;

/* The host signals that are the kernel's: SIGSYS and those features take
 * for themselves (the layers' signals, folded by zv_layers_fold). */
extern uint64_t zv_kernel_sigs;
static inline uint64_t zv_kernel_signals(void) { return zv_kernel_sigs; }
/* Of a guest mask m, the kernel's signals other than SIGSYS (which has its
 * own hold: sys/signal.c): the host never blocks them, but the guest's
 * view of its mask keeps them as it set them (t->kernel_blocked). */
static inline uint64_t zv_kernel_blocked(uint64_t m)
{
	return m & zv_kernel_signals() & ~(1UL << 30);
}

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

/* The fd of zvisor's own executable that execve goes through after a
 * chroot: a CLONE_VM child (vfork, Go's exec helper) keeps its own, since
 * zv_proc is its parent's memory and the fd is in its own table. */
static inline int zv_self_fd(struct zv_thread *t)
{
	return t && t->own_self_fd ? t->own_self_fd - 1 : zv_proc.self_fd;
}

/* Whether ret, a call's return address, is in the vDSO's stubs (loader/vdso.c). */
static inline int zv_vdso_call(uint64_t ret)
{
	return zv_proc.vdso_stubs && ret - zv_proc.vdso_stubs <= ZV_VDSO_STUB_AREA;
}
/* The host lets user code use rdfsbase/wrfsbase (HWCAP2_FSGSBASE). */
int zv_host_fsgsbase(void);
#endif
