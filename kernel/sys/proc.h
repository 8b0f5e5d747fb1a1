/* The process: struct zv_proc, one per guest process, copied by fork and
 * rebuilt by execve, and the questions answered from it. */
#ifndef ZV_SYS_PROC_H
#define ZV_SYS_PROC_H
#include <stdint.h>
#include "arch/fast.h"
#include "arch/thread.h"
#include "loader/loader.h"
#include "loader/vdso.h"
#include "sys/seccomp.h"
#include "sys/vtime.h"
#include "trace/trace.h"

enum zv_platform { ZV_PLAT_SUD, ZV_PLAT_SECCOMP, ZV_PLAT_ZPOLINE, ZV_PLAT_STUBS };
enum zv_rewrite { ZV_REWRITE_LAZY, ZV_REWRITE_NONE, ZV_REWRITE_LOAD };

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
	volatile int nthreads;
	uint64_t text_start, text_end;
	enum zv_rewrite rewrite;
	unsigned rewrite_after;  /* a site is rewritten at its n-th SIGSYS */
	int no_cache;            /* --no-cache: the stubs platform keeps no windows on disk */
	int carry_fd;            /* an exec's copy of the fd the file is named through (sys/exec.c) */
	int no_cred_cache;       /* user namespaces changed: ask the host for ids */
	int stats;               /* --stats: counters below, printed at exit */
	unsigned long stat_fast, stat_sigsys, stat_bounced, stat_restorers;
	unsigned long stat_analysed; /* mappings whose code was decoded (no cache entry served them) */
	uint64_t brk_start, brk_cur;
	volatile int lock;       /* guards brk */
	struct zv_sighand sighand;    /* the dispositions of the first thread */
	char exe_path[ZV_PATH_MAX];   /* what /proc/self/exe shows the guest */
	struct zv_seccomp seccomp;
	int seccomp_fd;               /* the filters on their way through execve */
	int tree_fd;                  /* the sites the tree knows, on their way through execve (intercept/treecache.c) */
	struct zv_vtime vt;           /* --time */
	enum zv_vdso_mode vdso_mode;  /* --vdso */
	struct zv_trace trace;        /* zvisor trace, -c */
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
#endif
