/* An execve made without leaving the process (sys/exec.c's zv_exec_here):
 * this zvisor unmaps the old image and loads the new one, and does itself
 * what the host's execve does to the process, so that the new program sees
 * what it would see after the host's (DESIGN, "The exec that never leaves
 * the process"). In order:
 *   1. the arguments and environment copied into kernel memory (the old
 *      image, where they live, goes): EFAULT and E2BIG as the host gives
 *      them, before anything changes;
 *   2. the point of no return: deferred signals back to the host, trace's
 *      line and count's row (the exec event), each layer's exec_here;
 *   3. the process's state reset (sys/exec_reset.c), the old image's
 *      memory unmapped: everything but zvisor's window, the vDSO with its
 *      stubs, the platform's pages and the top of [stack];
 *   4. the platform forgets the old code (intercept/inexec.c), the new
 *      program is loaded (image.c), its stack laid out in place at the top
 *      of [stack], and entered through a signal frame that resets the
 *      registers, the FPU state and the mask at once. */
#include "zvisor.h"
#include "image.h"
#include "sys/layer.h"
#include "sys/exec_reset.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/random.h"
#include "lib/fdlist.h"
#include <linux/auxvec.h>
#include <linux/mman.h>

#define TASK_TOP 0x7ffffffff000UL
#define STACK_EXPAND (128UL << 10) /* fs/exec.c: the new stack's room below its strings */
#define ARG_MAX_ (32UL * 4096)     /* the least room execve gives the strings */
#define MAX_ARG_STRLEN_ (32UL * 4096)
#define STK_LIM_ (8UL << 20)
#define SCRATCH 16384              /* arguments up to this size are copied on the kernel stack */
#define MAX_KEEP 24

/* The guest's strings, copied: the new argv and envp point into buf. */
struct args {
	char **argv, **envp;
	char path[ZV_PATH_MAX], execfn[ZV_PATH_MAX]; /* what the guest named (its memory goes) */
	char *buf;
	size_t size;    /* of buf, when it is a mapping of its own */
	size_t strings; /* bytes of all strings, NULs included */
	size_t ptrs;    /* bytes of argv's and envp's pointers */
};

/* The length of the guest's string s with its NUL: read under the fault
 * guard of the call, so a bad pointer is the call's EFAULT. -E2BIG past
 * MAX_ARG_STRLEN, as the host's copy_strings. */
static long string_size(const char *s)
{
	uint64_t a = (uint64_t)s;
	if (zv_bad_guest_ptr(a) || (a >= ZV_KWIN_START && a < ZV_KWIN_END))
		return -EFAULT;
	size_t n = zv_strlen(s) + 1;
	return n > MAX_ARG_STRLEN_ ? -E2BIG : (long)n;
}

/* How much room execve gives the strings and pointers (fs/exec.c
 * bprm_stack_limits): a quarter of RLIMIT_STACK, at most 6 MiB, at least
 * ARG_MAX. Only asked when the strings pass ARG_MAX. */
static size_t arg_limit(void)
{
	struct { uint64_t cur, max; } lim = { STK_LIM_, 0 };
	zv_sys4(__NR_prlimit64, 0, 3 /* RLIMIT_STACK */, NULL, &lim);
	size_t l = STK_LIM_ / 4 * 3;
	if (lim.cur / 4 < l)
		l = lim.cur / 4;
	return l < ARG_MAX_ ? ARG_MAX_ : l;
}

/* Step 1: argv (a #! script's words in front) and envp into x. */
static long copy_args(struct zv_exec_req *q, struct args *x, char *small)
{
	char *const *argv = q->argv, *const *envp = q->envp;
	const struct zv_resolved *r = q->r;
	long envc = zv_exec_count_strings(envp);
	if (envc < 0)
		return envc;
	if (zv_strlcpy(x->path, q->path, sizeof x->path) >= sizeof x->path ||
	    zv_strlcpy(x->execfn, q->execfn, sizeof x->execfn) >= sizeof x->execfn)
		return -ENAMETOOLONG;
	long argc = q->argc;
	/* the final argv: [prefix..., argv[1..]], or "" for an empty argv (the host adds it) */
	long nargs = r->nprefix ? r->nprefix + (argc > 1 ? argc - 1 : 0) : argc ? argc : 1;
	size_t strings = zv_strlen(q->execfn) + 1;
	for (long i = 0; i < envc; i++) {
		long n = string_size(envp[i]);
		if (n < 0)
			return n;
		strings += (size_t)n;
	}
	for (long i = 0; i < nargs; i++) {
		int guest = r->nprefix ? i >= r->nprefix : argc > 0; /* the script's words are the kernel's */
		const char *s = r->nprefix ? (i < r->nprefix ? r->prefix[i] : argv[i - r->nprefix + 1])
					   : argc ? argv[i] : "";
		long n = guest ? string_size(s) : (long)zv_strlen(s) + 1;
		if (n < 0)
			return n;
		strings += (size_t)n;
	}
	size_t ptrs = (size_t)(nargs + envc) * sizeof(char *);
	if (strings + ptrs > ARG_MAX_ && strings + ptrs > arg_limit())
		return -E2BIG;
	size_t size = ptrs + 2 * sizeof(char *) + strings;
	x->size = 0;
	x->buf = small;
	if (size > SCRATCH) {
		x->size = (size + 4095) & ~4095UL;
		x->buf = zv_kmap(x->size > (2UL << 20) ? x->size : (2UL << 20), 4096, -1); /* a mapping of its own */
		if (zv_is_err((long)x->buf))
			return -ENOMEM;
		x->size = x->size > (2UL << 20) ? x->size : (2UL << 20);
	}
	x->argv = (char **)x->buf;
	x->envp = x->argv + nargs + 1;
	char *s = (char *)(x->envp + envc + 1);
	for (long i = 0; i < nargs + envc; i++) {
		const char *from = i >= nargs ? envp[i - nargs]
				   : r->nprefix ? (i < r->nprefix ? r->prefix[i] : argv[i - r->nprefix + 1])
				   : argc ? argv[i] : "";
		size_t n = zv_strlen(from) + 1;
		memcpy(s, from, n);
		if (i < nargs)
			x->argv[i] = s;
		else
			x->envp[i - nargs] = s;
		s += n;
	}
	x->argv[nargs] = NULL;
	x->envp[envc] = NULL;
	x->strings = strings;
	x->ptrs = ptrs + 2 * sizeof(char *);
	return 0;
}

/* ---- step 3: the old image's memory --------------------------------------- */

static void add(uint64_t (*k)[2], int *n, uint64_t lo, uint64_t hi)
{
	if (lo < hi && *n < MAX_KEEP) {
		k[*n][0] = lo & ~4095UL;
		k[*n][1] = (hi + 4095) & ~4095UL;
		(*n)++;
	}
}

/* Unmaps everything below the top of user space but the ranges kept:
 * zvisor's window, the platform's pages (zpoline's page 0 and entry page,
 * the vDSO's stubs), the vDSO and its data, and [stack] from keep_lo up. */
static void unmap_old_image(uint64_t keep_lo)
{
	uint64_t k[MAX_KEEP][2];
	int n = zv_intercept_exec_keep(k, MAX_KEEP - 3);
	add(k, &n, ZV_KWIN_START, ZV_KWIN_END);
	add(k, &n, zv_proc.vdso_lo, zv_proc.vdso_hi);
	add(k, &n, keep_lo, zv_proc.stack_top);
	for (int i = 1; i < n; i++) /* sorted by start */
		for (int j = i; j > 0 && k[j][0] < k[j - 1][0]; j--) {
			uint64_t a = k[j][0], b = k[j][1];
			k[j][0] = k[j - 1][0];
			k[j][1] = k[j - 1][1];
			k[j - 1][0] = a;
			k[j - 1][1] = b;
		}
	uint64_t at = 0;
	for (int i = 0; i <= n; i++) {
		uint64_t end = i < n ? k[i][0] : TASK_TOP;
		if (end > at)
			zv_munmap((void *)at, end - at);
		if (i < n && k[i][1] > at)
			at = k[i][1];
	}
}

/* ---- step 4: into the new image ------------------------------------------- */

struct start_frame {
	uint64_t pretcode;
	struct zv_ucontext uc;
};

/* The guest's first instruction, entered as the host's execve leaves a
 * new image: every general register zero, the FPU and vector state at
 * their initial values (rt_sigreturn of a frame without fpstate resets
 * them), the TLS base 0, the mask kept. */
__attribute__((noreturn)) static void enter(struct zv_thread *t, const struct zv_ucontext *uc, uint64_t sp,
					    uint64_t entry, uint64_t mask)
{
	struct start_frame f = { 0 };
	f.uc.uc_flags = uc->uc_flags & ~0x4UL; /* no UC_STRICT_RESTORE_SS: the host checks ss itself */
	f.uc.mc.cs = uc->mc.cs;
	f.uc.mc.ss = uc->mc.ss;
	f.uc.mc.eflags = 0x202;
	f.uc.mc.rip = entry;
	f.uc.mc.rsp = sp;
	f.uc.uc_sigmask = mask;
	f.uc.uc_stack = zv_kernel_stack(t);
	if (zv_host_fsgsbase())
		asm volatile("wrfsbase %0" : : "r"(0UL));
	else
		zv_sys2(__NR_arch_prctl, 0x1002 /* ARCH_SET_FS */, 0);
	zv_enter_frame(&f.uc);
}

/* The kernel's state of the thread that leaves every kernel frame behind. */
static void leave_kernel_frames(struct zv_thread *t)
{
	t->sys_uc = NULL;
	t->guard_sp = 0;
	t->fast.bounce = 0;
	t->call_cancelled = 0;
	t->host_held = 0;
	t->in_host_vdso = 0;
}

static long exec_here(struct zv_exec_req *q)
{
	struct zv_thread *t = q->t;
	char small[SCRATCH];
	struct args x;
	long e = copy_args(q, &x, small);
	if (e < 0)
		return e;
	int fd_dir = zv_exec_fd_dir();
	if (fd_dir < 0) { /* no /proc (a chroot): the host closes the fds */
		if (x.size)
			zv_kunmap(x.buf, x.size);
		return ZV_EXEC_TO_HOST;
	}
	/* The new stack: the strings at the top of [stack], 128 KiB below
	 * them, as setup_arg_pages leaves it (or what the pointers and auxv
	 * need, more only with a very long argv); what lies below goes. */
	uint64_t top = zv_proc.stack_top;
	uint64_t strings_lo = (top - 8 - x.strings) & ~4095UL;
	uint64_t need = x.ptrs + (2 * ZV_HOST_AUXV + 8) * sizeof(uint64_t) + 4096;
	uint64_t keep_lo = strings_lo - (need > STACK_EXPAND ? ((need + 4095) & ~4095UL) : STACK_EXPAND);

	/* 2. The point of no return. */
	uint64_t host_mask;
	zv_exec_give_back_signals(t, &host_mask);
	zv_exec_frameless_mask(t, q->uc, &host_mask); /* an exec from the fast path: the mask the host had */
	uint64_t guest_mask = zv_guest_mask(t, q->uc), mask = guest_mask & ~zv_kernel_signals();
	zv_event_exec(t, q->nr, q->a); /* trace's line, count's row: the old image's arguments */
	leave_kernel_frames(t); /* a fault from here on is zvisor's: no EFAULT to return to */
	if (zv_proc.nthreads > 1)
		zv_exec_kill_others(t);
	zv_event_exec_here(t);

	/* 3. The process as execve leaves it, the old memory gone; the
	 * close-on-exec fds closed with the load's files (image.c) */
	struct zv_fdlist fds = { 0 };
	zv_load_fds = &fds;
	zv_exec_reset(t, fd_dir, &q->r->files);
	unmap_old_image(keep_lo);
	zv_intercept_exec(x.envp);
	zv_random_reset(); /* a fork child shares its parent's unused random bytes */
	zv_proc.first_image = 0;
	zv_proc.stat_fast = zv_proc.stat_sigsys = zv_proc.stat_bounced = zv_proc.stat_restorers = zv_proc.stat_analysed = 0;
	zv_proc.stat_inexec++;
	zv_proc.nthreads = 1;
	if (zv_proc.sandboxed && !zv_proc.seccomp.mode) { /* the guest's SUD did not survive */
		zv_proc.sandboxed = 0;
		zv_layers_fold();
	}

	/* 4. The new image. */
	struct zv_image img;
	/* an ELF named through a close-on-exec fd is loaded through its copy */
	zv_load_elf_given(&q->r->files); /* the files the resolution opened and read */
	q->r->files = ZV_EXEC_FILES_NONE;
	zv_image_load(t, x.path, q->r->nprefix ? q->r->elf : x.path, x.execfn, &img);
	uint64_t sp = zv_build_stack(NULL, top - keep_lo, top, x.argv, x.envp, &img, x.execfn, zv_proc.host_auxv);
	if (!sp)
		zv_die(126, "%s: %s", x.path, zv_strerror(E2BIG));
	/* what the old image left below its new stack pointer reads as zeros */
	uint64_t sp_page = sp & ~4095UL;
	memset((void *)sp_page, 0, sp - sp_page);
	if (sp_page > keep_lo)
		zv_sys3(__NR_madvise, keep_lo, sp_page - keep_lo, MADV_DONTNEED);
	zv_publish_mm_fields(zv_proc.host_sp, sp, (const void *)sp, top - sp);
	if (x.size)
		zv_kunmap(x.buf, x.size);
	t->kernel_blocked = zv_kernel_blocked(guest_mask);
	t->faults_blocked = (mask & ZV_FAULT_SIGNALS) != 0;
	enter(t, q->uc, sp, img.entry, mask);
}

void zv_inexec_install(void)
{
	zv_exec_here = exec_here;
}
