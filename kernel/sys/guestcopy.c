/* Copies between the kernel and guest memory for handlers that read or
 * write a guest structure themselves (trace's decoders, procview's reads,
 * execve's argv, the checkpoint's timed waits). */
#include "zvisor.h"
#include "arch/context.h"
#include "lib/kmem.h"
#include "sys/calls.h"
#include <asm-generic/errno.h>

long zv_guest_copy(void *dst, const void *src, size_t n, uint64_t guest)
{
	if (!n)
		return 0;
	/* What the host would refuse with EFAULT is refused before any byte
	 * moves: a range that wraps or leaves user space, page 0 and the low
	 * pages (zv_bad_guest_ptr), and zvisor's window, which is unmapped in a
	 * native process. */
	if (guest + n < guest || guest + n > 0x800000000000UL || zv_bad_guest_ptr(guest) ||
	    (guest + n > ZV_KWIN_START && guest < ZV_KWIN_END))
		return -EFAULT;
	struct zv_thread *t = zv_current();
	uint64_t outer = t->guard_sp; /* a copy inside a guarded region returns to it after */
	long r = zv_copy_guarded(dst, src, n, &t->guard_sp);
	t->guard_sp = outer;
	return r;
}

int zv_peek(void *dst, uint64_t addr, size_t n)
{
	return (int)zv_guest_copy(dst, (const void *)addr, n, addr);
}
