/* An exec made in this process (kernel/inexec.c): what the platform keeps
 * of the old images (the vDSO's stubs and, on zpoline, page 0 and the entry
 * page) and what it forgets (every other stub region, rewritten site,
 * shared copy, and what sudoff learned from their code); the site cache's
 * place is found again in the new environment. */
#include "zvisor.h"
#include "intercept/platform.h"
#include "intercept/stubs.h"
#include "intercept/sites.h"
#include "intercept/sharedtext.h"
#include "intercept/sudoff.h"
#include "intercept/sitecache.h"

int zv_intercept_exec_keep(uint64_t (*r)[2], int max)
{
	if (zv_proc.platform == ZV_PLAT_ZPOLINE)
		return zv_plat->reserved(r, max);
	if (zv_proc.platform == ZV_PLAT_STUBS && zv_proc.vdso_hi)
		return zv_stubs_kept(zv_proc.vdso_lo, zv_proc.vdso_hi, r, max);
	return 0;
}

void zv_intercept_exec(char **envp)
{
	zv_stubs_exec(zv_proc.vdso_lo, zv_proc.vdso_hi);
	zv_sites_exec(zv_proc.vdso_lo, zv_proc.vdso_hi);
	zv_sharedtext_exec();
	zv_sudoff_exec(zv_proc.platform != ZV_PLAT_STUBS || zv_proc.rewrite == ZV_REWRITE_NONE);
	/* the cache's place, from the new environment as a host exec's image
	 * finds it; what the tree knows stays in memory */
	zv_sitecache_init(envp, -1);
}
