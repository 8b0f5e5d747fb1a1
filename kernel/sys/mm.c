/* brk for the guest. The host's brk area belongs to zvisor's own image (far
 * from the guest), so the program break is emulated: it starts a random
 * number of pages after the executable, as the host's does, and grows and
 * shrinks with anonymous mappings. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
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
	if (want >= zv_proc.brk_start && want < ZV_KWIN_START) {
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

/* The kernel's window (its image, stacks and data) does not exist for the
 * guest: memory calls that would touch it fail as on unmapped memory, and
 * munmap leaves it out. */
long zv_sys_mm_call(struct zv_thread *t, struct zv_ucontext *uc, long *a, long nr)
{
	uint64_t addr = (uint64_t)a[0], len = (uint64_t)a[1];
	switch (nr) {
	case __NR_mmap:
		if (zv_in_kwin(addr, len ? len : 1)) {
			if (a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE))
				return -ENOMEM;
			a[0] = 0; /* a hint only: let the host choose */
		}
		break;
	case __NR_munmap:
		if (zv_in_kwin(addr, len)) {
			long r = 0;
			if (addr < ZV_KWIN_START)
				r = zv_host_call(t, nr, addr, ZV_KWIN_START - addr, 0, 0, 0, 0);
			if (r == 0 && addr + len > ZV_KWIN_END)
				r = zv_host_call(t, nr, ZV_KWIN_END, addr + len - ZV_KWIN_END, 0, 0, 0, 0);
			return r;
		}
		break;
	case __NR_mremap:
		if (zv_in_kwin(addr, len) ||
		    ((a[3] & MREMAP_FIXED) && zv_in_kwin((uint64_t)a[4], (uint64_t)a[2])))
			return -EFAULT;
		break;
	default: /* mprotect, pkey_mprotect, madvise */
		if (zv_in_kwin(addr, len)) {
			/* As on a hole in the address space: the part below it
			 * is changed, then the call fails. */
			long r = 0;
			if (addr < ZV_KWIN_START)
				r = zv_host_call(t, nr, addr, ZV_KWIN_START - addr, a[2], a[3], 0, 0);
			return r < 0 ? r : -ENOMEM;
		}
	}
	return zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
