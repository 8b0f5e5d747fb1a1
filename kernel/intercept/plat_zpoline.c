/* The zpoline platform (opt-in: --platform=zpoline): rewritten sites become
 * `call *%rax` into page 0 (intercept/trampoline.c, intercept/fastpath.c), at
 * their first SIGSYS (lazy, intercept/sites.c) or when their code is mapped
 * (--rewrite=load, intercept/loadsites.c). It needs page 0, which only root
 * (CAP_SYS_RAWIO) or vm.mmap_min_addr=0 allows; without it the default
 * jump-stub platform takes over. */
#include "zvisor.h"
#include "intercept/sudoff.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "intercept/platform.h"
#include "intercept/sites.h"

static long install(void)
{
	long r = zv_trampoline_map();
	if (r < 0) {
		/* Said once, by zvisor run: an exec'd image that lost page 0 (a
		 * new user namespace drops CAP_SYS_RAWIO) must not write into
		 * the guest's stderr. */
		if (zv_proc.first_image)
			zv_dprintf(zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2,
				   "zvisor: cannot map page 0 for the zpoline platform (%s): using the stubs platform; "
				   "'sysctl -w vm.mmap_min_addr=0' or CAP_SYS_RAWIO enables it\n", zv_strerror((int)-r));
		zv_proc.platform = ZV_PLAT_STUBS;
		return zv_plat->install ? zv_plat->install() : 0;
	}
	return 0;
}

static long arm_thread(struct zv_thread *t)
{
	long r = zv_fast_arm_thread(t, ZV_BOUNCE_SITE);
	return r < 0 ? r : zv_catchall_arm_thread(t);
}

static void arrived(struct zv_thread *t, struct zv_ucontext *uc)
{
	(void)t;
	if (zv_proc.rewrite != ZV_REWRITE_NONE)
		zv_site_seen(uc->mc.rip - 2, zv_proc.rewrite_after, zv_site_safe, uc);
}

static void code_mapped(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags)
{
	(void)flags;
	if (zv_proc.rewrite == ZV_REWRITE_LOAD)
		zv_sites_load(t, fd, addr, len, off, prot, NULL);
}

/* Rewritten now: the lazy rewrite's mprotect of one page fails on the vDSO
 * (the host will not split it). */
static void vdso_stubs(struct zv_thread *t, uint8_t *stubs, int n, int size)
{
	(void)t;
	if (zv_proc.rewrite == ZV_REWRITE_NONE)
		return;
	for (int k = 0; k < n; k++) {
		uint8_t *s = stubs + k * size;
		s[5] = 0xff; /* call *%rax over the syscall */
		s[6] = 0xd0;
		zv_site_add_rewritten((uint64_t)s + 5);
	}
}

static int reserved(uint64_t (*r)[2], int max)
{
	if (max < 2)
		return 0;
	r[0][0] = 0;
	r[0][1] = 4096;
	r[1][0] = ZV_ENTRY_PAGE;
	r[1][1] = ZV_ENTRY_PAGE + 4096;
	return 2;
}

ZV_PLATFORM(zpoline, 2) = {
	.name = "zpoline",
	ZV_PLATFORM_COMMON,
	ZV_PLATFORM_FAST,
	.install = install,
	.arm_thread = arm_thread,
	.arrived = arrived,
	.code_mapped = code_mapped,
	.vdso_stubs = vdso_stubs,
	.fault = zv_fast_fault,
	.reserved = reserved,
};
