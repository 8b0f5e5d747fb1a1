/* The platform interface: how guest system calls reach the kernel. One
 * implementation per file (intercept/plat_*.c); the rest of the kernel asks
 * the current one (zv_plat) and never names a platform. */
#ifndef ZV_INTERCEPT_PLATFORM_H
#define ZV_INTERCEPT_PLATFORM_H
#include <stdint.h>

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
	/* The vDSO's n stubs `mov $nr, %eax; syscall; ret`, size bytes
	 * apart, still writable. */
	void (*vdso_stubs)(struct zv_thread *t, uint8_t *stubs, int n, int size);
	/* The host's vDSO code at [base, base + size), its functions
	 * fn[0..n) (offset, length; sorted), writable when rewrite: the
	 * platform may make its sites (and must say whether SUD may go off). */
	void (*vdso_code)(struct zv_thread *t, uint8_t *base, uint64_t size, const uint64_t (*fn)[2], int n,
			  int rewrite);
	/* A memory call of the guest (nr, arguments a), before the host makes
	 * it, with h, a copy of a the platform may change (returns what
	 * mm_after is given), and after, with its result r (returns the
	 * call's): a platform that lets threads run without the catch-all
	 * keeps them from code it has not seen (intercept/sudoff_mm.c). */
	int (*mm_before)(struct zv_thread *t, long nr, const long *a, long *h);
	long (*mm_after)(struct zv_thread *t, long nr, const long *a, long r, int later);
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
	unsigned owns_gs : 1;       /* the %gs base is the kernel's: the guest's is virtual */
	unsigned patches_code : 1;  /* guest memory calls wait for its rewriting */
	unsigned host_vdso : 1;     /* the kernel may run the host's vDSO (SUD can let it through) */
};

/* The platforms, indexed by enum zv_platform. */
extern const struct zv_platform_ops zv_plat_sud, zv_plat_seccomp, zv_plat_zpoline, zv_plat_stubs;
extern const struct zv_platform_ops *const zv_platforms[];
#define zv_plat (zv_platforms[zv_proc.platform])

/* intercept/plat_catchall.c: what every platform shares: the SIGSYS
 * handler, SUD for a thread, the seccomp filter. */
long zv_catchall_install(void);
long zv_catchall_arm_thread(struct zv_thread *t);
long zv_fast_arm_thread(struct zv_thread *t, uint64_t bounce_site); /* %gs for a fast entry */
/* By name: the platform whose name is s, or -1. */
int zv_platform_by_name(const char *s);
#endif
