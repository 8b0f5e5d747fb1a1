/* The platform interface: how guest system calls reach the kernel. The
 * core holds the current platform (zv_plat) and calls its ops; each
 * platform fills them in its own file (intercept/plat_*.c) and attaches
 * with ZV_PLATFORM, so the core never names one. */
#ifndef ZV_SYS_PLATFORM_H
#define ZV_SYS_PLATFORM_H
#include <stdint.h>
#include <stddef.h>

struct zv_thread;
struct zv_ucontext;

struct zv_platform_ops {
	const char *name;
	/* Once per process image, before the guest runs; may fall back to
	 * another platform (sets zv_proc.platform) and say so. */
	long (*install)(void);
	/* The calling thread's part: its %gs area, its SUD selector. */
	long (*arm_thread)(struct zv_thread *t);
	/* A call that arrived through the SIGSYS catch-all from the guest's
	 * `syscall` at uc's rip - 2: the platform may rewrite that site. */
	void (*arrived)(struct zv_thread *t, struct zv_ucontext *uc);
	/* Code of a file just mapped privately at [addr, addr + len) from
	 * offset off with protection prot (the loader's images and the
	 * guest's mmap): the platform may rewrite its sites now. */
	void (*code_mapped)(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags);
	/* The loader's code segment, not mapped yet (NULL: it is mapped,
	 * then code_mapped): mapped as code_mapped would leave it, a
	 * rewritten copy in its place where there is one. addr or -errno. */
	long (*map_code)(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags);
	/* The vDSO's n stubs `mov $nr, %eax; syscall; ret`, size bytes
	 * apart, still writable. */
	void (*vdso_stubs)(struct zv_thread *t, uint8_t *stubs, int n, int size);
	/* The host's vDSO code at [base, base + size), its functions
	 * fn[0..n) (offset, length; sorted), writable when rewrite: the
	 * platform may make its sites (and must say whether SUD may go off). */
	void (*vdso_code)(struct zv_thread *t, uint8_t *base, uint64_t size, const uint64_t (*fn)[2], int n,
			  int rewrite);
	/* Whether vdso_code is worth its cost in this image (NULL: yes). */
	int (*vdso_code_wanted)(void);
	/* A SIGSEGV in guest code that is the platform's own doing: handled
	 * (1) or the guest's (0). */
	int (*fault)(struct zv_thread *t, struct zv_ucontext *uc);
	/* Memory the guest must not see, in address order: up to max
	 * [start, end) pairs. */
	int (*reserved)(uint64_t (*r)[2], int max);
	/* Code the platform moved: the rip the guest is shown for ip (rcx:
	 * the thread's rcx there), and where a guest rip resumes. */
	uint64_t (*guest_ip)(uint64_t ip, uint64_t rcx);
	uint64_t (*resume_ip)(uint64_t ip);
	/* A host signal interrupted the platform's own kernel code at ip on
	 * its way back to the guest: where it resumes instead (ip: there). */
	uint64_t (*kernel_ip)(uint64_t ip);
	/* Around a guest memory call (mmap, mprotect, ...): the platform's
	 * rewriting waits (NULL: it never patches code). */
	void (*mm_lock)(void);
	void (*mm_unlock)(void);
	/* Before the host makes that call (nr, arguments a), with h, a copy
	 * of a the platform may change (returns what mm_after is given), and
	 * after, with its result r (returns the call's): a platform that lets
	 * threads run without the catch-all keeps them from code it has not
	 * seen (intercept/sudoff_mm.c). shmat, which takes no lock, too. */
	int (*mm_before)(struct zv_thread *t, long nr, const long *a, long *h);
	long (*mm_after)(struct zv_thread *t, long nr, const long *a, long r, int later);
	/* A tracer's view of code the platform rewrote (the guest's ptrace):
	 * the original bytes laid over buf, which holds [addr, addr + n) of
	 * memory; and the original code put back there (writes through memfd,
	 * /proc/self/mem) before a tracer writes over it. */
	void (*show_original)(uint64_t addr, uint8_t *buf, size_t n);
	int (*restore_original)(uint64_t addr, size_t n, int memfd);
	/* Common to every platform (ZV_PLATFORM_COMMON, intercept/platform.h). */
	/* A fork child's one thread, after the core refreshed its state. */
	void (*fork_child)(struct zv_thread *t);
	/* A second task on this memory that is neither a thread nor a vfork. */
	void (*shared_vm)(void);
	/* A child with memory of its own is about to be made (optional). */
	void (*before_fork)(void);
	/* The calling thread must catch every syscall now (a bounce, a
	 * deferred signal, a guest handler about to run). */
	void (*need_catchall)(struct zv_thread *t);
	/* --stats: sites rewritten, syscall bytes found uncovered, and why
	 * the catch-all stays armed (0: it need not). */
	void (*stats)(unsigned long *rewritten, unsigned long *uncovered, int *taint);
	unsigned owns_gs : 1;       /* the %gs base is the kernel's: the guest's is virtual */
	unsigned patches_code : 1;  /* guest memory calls wait for its rewriting */
	unsigned host_vdso : 1;     /* the kernel may run the host's vDSO (SUD can let it through) */
};

/* A platform: ZV_PLATFORM(name, index) = { ... }; defines zv_plat_<name>
 * as entry index (its enum zv_platform value, sys/proc.h) of zv_platforms,
 * which the linker lays out (kernel/zvisor.ld). */
#define ZV_PLATFORM(name, index) \
	extern const struct zv_platform_ops zv_plat_##name; \
	__attribute__((used, section(".zv_platforms." #index))) \
	static const struct zv_platform_ops *const zv_platform_entry_##name = &zv_plat_##name; \
	const struct zv_platform_ops zv_plat_##name
extern const struct zv_platform_ops *const zv_platforms[], *const zv_platforms_end[];
#define zv_plat (zv_platforms[zv_proc.platform])
#endif
