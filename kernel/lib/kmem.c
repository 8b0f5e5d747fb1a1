#include "lib/kmem.h"
#include "lib/syscall.h"
#include <linux/mman.h>

/* A bump pointer over the window, past the image; holes left by unmapping
 * are not reused (the window is a terabyte). A fork child inherits it. */
static uint64_t next = ZV_KWIN_START + 0x1000000000UL;

void *zv_kmap(size_t size, size_t align, int fd)
{
	size = (size + 4095) & ~4095UL;
	for (int tries = 0; tries < 16; tries++) {
		uint64_t cur = __atomic_load_n(&next, __ATOMIC_RELAXED), at;
		do {
			at = (cur + align - 1) & ~(align - 1);
		} while (!__atomic_compare_exchange_n(&next, &cur, at + size, 0, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED));
		if (at + size > ZV_KWIN_END)
			break;
		int flags = (fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS) | MAP_FIXED_NOREPLACE | MAP_NORESERVE;
		void *p = zv_mmap((void *)at, size, PROT_READ | PROT_WRITE, flags, fd, 0);
		if ((uint64_t)p == at)
			return p;
		if (!zv_is_err((long)p))
			zv_munmap(p, size); /* an old kernel ignoring NOREPLACE */
		else if (p != (void *)-EEXIST)
			return p;
	}
	return (void *)-ENOMEM;
}

void zv_kunmap(void *p, size_t size)
{
	zv_munmap(p, (size + 4095) & ~4095UL);
}
