/* Per-thread kernel areas: allocation and registration as the host altstack. */
#include "zvisor.h"
#include "sys/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"

/* Blocks of threads that have called exit. A thread cannot unmap the stack
 * it runs on, so its block is reused once the host no longer knows its tid:
 * after the exit syscall the thread never touches user memory again. */
static struct zv_thread *dead_list;
static volatile int dead_lock;

/* The live threads' blocks, found by host tid (zv_thread_find): a thread's
 * view of another's signal mask (sys/procview_status.c). Beyond MAX_KNOWN
 * threads the rest are not found. */
#define MAX_KNOWN 1024
static struct zv_thread *known[MAX_KNOWN];
static int nknown_used; /* known[nknown_used..] were never set: not read (a zero-page fault each) */
static volatile int known_lock;

/* Replaces t (and, with to, any other block of to's tid) by to. */
static void known_swap(struct zv_thread *t, struct zv_thread *to)
{
	zv_lock(&known_lock);
	for (int i = 0; i < nknown_used; i++)
		if (known[i] && (known[i] == t || (to && known[i]->htid == to->htid)))
			known[i] = NULL;
	if (to)
		to->known = 0; /* until listed: a full list leaves it out */
	for (int i = 0; to && i < MAX_KNOWN; i++)
		if (!known[i]) {
			known[i] = to;
			to->known = 1;
			if (i >= nknown_used)
				nknown_used = i + 1;
			break;
		}
	zv_unlock(&known_lock);
}

void zv_thread_known(struct zv_thread *t) { known_swap(t, t); }

int zv_thread_each(int (*fn)(struct zv_thread *t, void *arg), void *arg)
{
	int r = 0;
	zv_lock(&known_lock);
	for (int i = 0; i < nknown_used; i++)
		if (known[i])
			r += fn(known[i], arg);
	zv_unlock(&known_lock);
	return r;
}

struct zv_thread *zv_thread_find(int htid)
{
	struct zv_thread *r = NULL;
	zv_lock(&known_lock);
	for (int i = 0; i < nknown_used && !r; i++)
		if (known[i] && known[i]->htid == htid)
			r = known[i];
	zv_unlock(&known_lock);
	return r;
}

int zv_thread_others(const struct zv_thread *t, int *htids, int max, int *not_threads)
{
	int n = 0;
	*not_threads = 0;
	zv_lock(&known_lock);
	for (int i = 0; i < nknown_used; i++) {
		const struct zv_thread *o = known[i];
		if (!o || o == t)
			continue;
		*not_threads += !o->is_thread;
		if (n < max)
			htids[n++] = o->htid;
	}
	zv_unlock(&known_lock);
	return n;
}

void zv_thread_retire(struct zv_thread *t)
{
	known_swap(t, NULL);
	zv_lock(&dead_lock);
	t->next_dead = dead_list;
	dead_list = t;
	zv_unlock(&dead_lock);
}

static struct zv_thread *reuse_dead(void)
{
	zv_lock(&dead_lock);
	struct zv_thread **pp = &dead_list, *t;
	while ((t = *pp)) {
		if (zv_sys3(__NR_tgkill, zv_proc.hpid, t->htid, 0) == -ESRCH) {
			*pp = t->next_dead;
			break;
		}
		pp = &t->next_dead;
	}
	zv_unlock(&dead_lock);
	return t;
}

/* In a fork child the listed threads do not exist, and the lock may have
 * been held by one of them. */
void zv_thread_forget_dead(void)
{
	if (dead_lock) /* a write would copy the page for nothing */
		dead_lock = 0;
	if (known_lock)
		known_lock = 0;
}

void zv_thread_fork_child(struct zv_thread *t)
{
	if (nknown_used == 1 && known[0] == t)
		return; /* the parent's one thread: as it is (no page copied) */
	for (int i = 0; i < nknown_used; i++)
		known[i] = NULL;
	nknown_used = 0;
	known_swap(t, t);
}

static struct zv_thread *fresh_block(void)
{
	/* Guard page below the stack: a hole, not a PROT_NONE page, which would
	 * be a mapping of its own and one more for every fork to copy. The
	 * first block starts the window's first chunk (lib/kmem.c), so its
	 * guard only moves that mapping's start (no munmap). Nothing maps into
	 * the hole: the window is reserved from the guest, and zv_kmap never
	 * goes back. */
	char *raw = zv_kmap_guarded(ZV_BLOCK_SIZE, ZV_BLOCK_SIZE, ZV_BLOCK_GUARD);
	if (zv_is_err((long)raw))
		return NULL;
	return (struct zv_thread *)(raw + ZV_THREAD_OFF);
}

/* A freed block (a vfork child's, once its parent resumes: the child has
 * exec'd or exited and never touches this memory again), kept for the
 * next child: its pages stay, so neither the free's munmap nor the next
 * block's guard munmap and page faults. */
static struct zv_thread *spare;

struct zv_thread *zv_thread_alloc(void)
{
	struct zv_thread *t = spare ? __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQ_REL) : NULL;
	if (!t)
		t = reuse_dead();
	if (t)
		memset(t, 0, sizeof *t);
	else if (!(t = fresh_block())) /* zero already: zv_kmap never hands a range out twice */
		return NULL;
	t->magic = ZV_THREAD_MAGIC;
	t->sighand = &zv_proc.sighand;
	t->guest_ss.ss_flags = ZV_SS_DISABLE;
	return t;
}

void zv_thread_free(struct zv_thread *t)
{
	known_swap(t, NULL);
	struct zv_thread *none = NULL;
	if (__atomic_compare_exchange_n(&spare, &none, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	zv_kunmap((void *)(zv_block_of(t) + ZV_BLOCK_GUARD), ZV_BLOCK_SIZE - ZV_BLOCK_GUARD);
}

/* Registers the block's stack as this thread's host altstack, where every
 * host signal handler of zvisor runs, and arms the per-thread interception. */
long zv_thread_arm_as(struct zv_thread *t, int tid, int pid)
{
	struct zv_stack ss = zv_kernel_stack(t);
	long r = zv_sys2(__NR_sigaltstack, &ss, NULL);
	if (r < 0)
		return r;
	t->tid = t->htid = tid;
	t->pid = pid;
	known_swap(t, t);
	return zv_plat->arm_thread(t);
}

long zv_thread_arm(struct zv_thread *t)
{
	return zv_thread_arm_as(t, (int)zv_gettid(), (int)zv_getpid());
}
