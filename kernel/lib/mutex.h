/* A lock that sleeps when it stays taken: for locks held across host calls
 * that may block (an mmap waiting for the mm's lock, a write). Spinning
 * there, as zv_lock does, burns the waiters' time slices while the holder
 * waits for a CPU (git status's threads spent 8-13% of their time so).
 * Values: 0 free, 1 held, 2 held with sleepers. A fork child resets it to
 * 0 as it does a spin lock. */
#ifndef ZV_LIB_MUTEX_H
#define ZV_LIB_MUTEX_H
#include "lib/syscall.h"
#include <linux/futex.h>

static inline void zv_mutex_lock(volatile int *l)
{
	int c = 0;
	for (int i = 0; i < 100; i++) {
		c = 0;
		if (__atomic_compare_exchange_n(l, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		asm volatile("pause");
	}
	if (c != 2)
		c = __atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		zv_sys4(__NR_futex, l, FUTEX_WAIT_PRIVATE, 2, 0);
		c = __atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE);
	}
}

static inline void zv_mutex_unlock(volatile int *l)
{
	if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2)
		zv_sys3(__NR_futex, l, FUTEX_WAKE_PRIVATE, 1);
}
#endif
