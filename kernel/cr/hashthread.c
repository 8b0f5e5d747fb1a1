/* The pages' hash on a second host thread. The checkpointing thread queues
 * each range it writes to pages.bin, before the write, and this thread
 * hashes the ranges in the same order while the host copies them into the
 * file: on two CPUs the hash leaves the write's path. Every guest thread is
 * parked meanwhile, so the memory does not change between the write and
 * the hash (the checkpointing thread's own stack, which does, is queued as
 * a copy: cr/memory.c).
 *
 * The thread is a bare host thread (clone with CLONE_THREAD, no TLS, every
 * signal blocked), not a guest thread: no struct zv_thread, never listed
 * by the kernel, and gone (joined through CLONE_CHILD_CLEARTID) before the
 * checkpoint's section is recorded, so before any guest code runs again.
 * Its block (this struct, the queue, its stack) is the checkpoint's own
 * memory, left out of the image, and mapped before the dump reads the
 * mappings (cr/memory.c). */
#include "zvisor.h"
#include "cr/hashthread.h"
#include "lib/string.h"
#include "sys/calls.h"
#include "lib/syscall.h"
#include <linux/futex.h>
#include <linux/sched.h>

#define QBLOCK ZV_CR_HASHQ_BLOCK /* this struct at its start, the stack above */
#define QLEN 1024              /* ranges queued at most */
#define WAKE_BYTES (1UL << 20) /* an idle thread is woken for this much, or half the queue */

struct range {
	const void *p;
	uint64_t len;                  /* 0 with p NULL: the end */
};

struct zv_cr_hashq {
	struct zv_cr_hasher h;         /* the thread's alone until joined */
	volatile int head;             /* ranges queued (the writer's) */
	volatile int tail;             /* ranges hashed (the thread's) */
	volatile int idle;             /* the thread waits on head */
	volatile int waiting;          /* the writer waits on tail */
	volatile int tid;              /* the thread's; 0 once it is gone */
	uint64_t unwoken;              /* bytes queued since the last wake (the writer's) */
	struct range ring[QLEN];
};
_Static_assert(sizeof(struct zv_cr_hashq) < QBLOCK / 2, "the hash thread's stack");

static void futex(volatile int *w, int op, int val)
{
	zv_sys4(__NR_futex, w, op, val, NULL);
}

static struct zv_cr_hashq *self(void)
{
	uintptr_t sp;
	asm volatile("mov %%rsp, %0" : "=r"(sp));
	return (struct zv_cr_hashq *)(sp & ~(QBLOCK - 1));
}

/* The thread: the queue's ranges in order until the end. The writer
 * reads idle after it bumps head, this thread head after it sets idle
 * (both sequentially consistent), so one of them sees the other. */
__attribute__((noreturn)) static void hash_loop(void)
{
	struct zv_cr_hashq *q = self();
	for (;;) {
		int t = q->tail;
		if (__atomic_load_n(&q->head, __ATOMIC_SEQ_CST) == t) {
			__atomic_store_n(&q->idle, 1, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&q->head, __ATOMIC_SEQ_CST) == t)
				futex(&q->head, FUTEX_WAIT_PRIVATE, t);
			__atomic_store_n(&q->idle, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		struct range r = q->ring[t % QLEN];
		if (!r.p && !r.len)
			break;
		zv_cr_hash_update(&q->h, r.p, r.len);
		__atomic_store_n(&q->tail, t + 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&q->waiting, __ATOMIC_SEQ_CST))
			futex(&q->tail, FUTEX_WAKE_PRIVATE, 1);
	}
	for (;;)
		zv_sys1(__NR_exit, 0); /* this thread only; the host clears and wakes tid */
}

struct zv_cr_hashq *zv_cr_hashq_start(void *block, const struct zv_cr_hasher *from)
{
	struct zv_cr_hashq *q = block;
	memset(q, 0, sizeof *q);
	q->h = *from;
	uint64_t old;
	zv_host_set_mask(~0UL, &old); /* the thread starts with every signal blocked */
	long tid = zv_clone_raw(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
					CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
				(char *)q + QBLOCK, (void *)&q->tid, (void *)&q->tid, 0, hash_loop);
	zv_host_set_mask(old, NULL);
	return tid < 0 ? NULL : q;
}

static void wake(struct zv_cr_hashq *q)
{
	q->unwoken = 0;
	futex(&q->head, FUTEX_WAKE_PRIVATE, 1);
}

/* Waits until at most `below` queued ranges are left to hash. */
static void wait_below(struct zv_cr_hashq *q, int below)
{
	for (;;) {
		__atomic_store_n(&q->waiting, 1, __ATOMIC_SEQ_CST);
		int t = __atomic_load_n(&q->tail, __ATOMIC_SEQ_CST);
		if (q->head - t <= below)
			break;
		if (__atomic_load_n(&q->idle, __ATOMIC_SEQ_CST))
			wake(q);
		futex(&q->tail, FUTEX_WAIT_PRIVATE, t);
	}
	__atomic_store_n(&q->waiting, 0, __ATOMIC_SEQ_CST);
}

static void put(struct zv_cr_hashq *q, const void *p, uint64_t len, int now)
{
	if (q->head - __atomic_load_n(&q->tail, __ATOMIC_SEQ_CST) >= QLEN)
		wait_below(q, QLEN - 1);
	q->ring[q->head % QLEN] = (struct range){ p, len };
	__atomic_store_n(&q->head, q->head + 1, __ATOMIC_SEQ_CST);
	q->unwoken += len;
	if (__atomic_load_n(&q->idle, __ATOMIC_SEQ_CST) &&
	    (now || q->unwoken >= WAKE_BYTES || q->head - q->tail >= QLEN / 2))
		wake(q);
}

void zv_cr_hashq_add(struct zv_cr_hashq *q, const void *p, uint64_t len)
{
	if (len)
		put(q, p, len, 0);
}

void zv_cr_hashq_drain(struct zv_cr_hashq *q)
{
	wait_below(q, 0);
}

void zv_cr_hashq_join(struct zv_cr_hashq *q, struct zv_cr_hasher *to)
{
	put(q, NULL, 0, 1);
	for (int tid; (tid = __atomic_load_n(&q->tid, __ATOMIC_ACQUIRE)) != 0;)
		futex(&q->tid, FUTEX_WAIT, tid); /* CLONE_CHILD_CLEARTID wakes it shared */
	*to = q->h;
}
