/* brk for the guest. The host's brk area belongs to zvisor's own image (far
 * from the guest), so the program break is emulated: it starts a random
 * number of pages after the executable, as the host's does, and grows and
 * shrinks with anonymous mappings. */
#include "zvisor.h"
#include "lib/syscall.h"
#include <linux/mman.h>

#define PAGE_UP(x) (((x) + 4095UL) & ~4095UL)

void zv_brk_init(uint64_t start)
{
	uint16_t rnd = 0;
	zv_sys3(__NR_getrandom, &rnd, sizeof rnd, 0);
	zv_proc.brk_start = zv_proc.brk_cur = PAGE_UP(start) + (uint64_t)(rnd & 0x1fff) * 4096;
}

long zv_sys_brk(struct zv_thread *t, struct zv_ucontext *uc, long *a)
{
	uint64_t want = (uint64_t)a[0];
	zv_lock(&zv_proc.lock);
	uint64_t cur = zv_proc.brk_cur;
	if (want >= zv_proc.brk_start && want < 0x7e0000000000UL) {
		uint64_t old_end = PAGE_UP(cur), new_end = PAGE_UP(want);
		int ok = 1;
		if (new_end > old_end) {
			void *p = zv_mmap((void *)old_end, new_end - old_end, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			ok = (uint64_t)p == old_end;
			if (!ok && !zv_is_err((long)p))
				zv_munmap(p, new_end - old_end);
		} else if (new_end < old_end) {
			zv_munmap((void *)new_end, old_end - new_end);
		}
		if (ok)
			zv_proc.brk_cur = cur = want;
	}
	zv_unlock(&zv_proc.lock);
	return (long)cur;
}
