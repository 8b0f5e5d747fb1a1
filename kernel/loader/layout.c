/* Where the host's execve puts what is mapped anywhere: the mmap area,
 * filled top-down from its base, and above the base the gap it leaves for
 * the stack. Hidden regions (the stubs') go in that gap, where the guest's
 * mappings never go, so the guest's own land where they land natively
 * (intercept/stubs.c). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "loader/loader.h"
#include "loader/vdso.h"
#include <elf.h>

#define GUARD (2UL << 20) /* the host's stack guard gap (1 MiB) and as much again */
#define MIN_GAP (4UL << 20)

void zv_layout_init(const uint64_t *auxv, uint64_t stack_top)
{
	zv_proc.mmap_top = zv_proc.upper_hi = 0;
	uint64_t ehdr = 0;
	for (const uint64_t *a = auxv; a[0] != AT_NULL; a += 2)
		if (a[0] == AT_SYSINFO_EHDR)
			ehdr = a[1];
	/* zvisor is at a fixed address with no interpreter: the host mapped the
	 * vDSO first in the mmap area, right below its base (a kernel that puts
	 * it above the stack instead says nothing of the base) */
	uint64_t size = ehdr ? zv_vdso_image_size((const void *)ehdr) : 0;
	if (!size || ehdr + size >= stack_top)
		return;
	struct { uint64_t cur, max; } lim;
	if (zv_sys4(__NR_prlimit64, 0, 3 /* RLIMIT_STACK */, NULL, &lim) < 0)
		return;
	uint64_t top = ehdr + size;
	/* the stack may grow to its limit: the gap above that (none when
	 * unlimited, or a limit near the gap's size) */
	if (lim.cur >= stack_top - top || stack_top - lim.cur - top < GUARD + MIN_GAP)
		return;
	zv_proc.mmap_top = top;
	zv_proc.upper_hi = (stack_top - lim.cur - GUARD) & ~4095UL;
}
