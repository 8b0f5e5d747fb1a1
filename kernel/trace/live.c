/* The traced threads of the process and the call each is in, so that when
 * exit_group or a fatal signal ends them all, the thread that ends the
 * process can print what strace shows for the others: the call each was
 * blocked in ("= ?") and its "+++ exited" line. A slot is claimed by a
 * thread at its first traced call and released at its exit or execve; the
 * table lives in the process's memory (threads and vfork children share
 * it; a fork child forgets the parent's threads). */
#include "zvisor.h"
#include "trace/live.h"
#include "lib/string.h"

#define LIVE 256

static struct live {
	volatile int tid; /* 0: free */
	int pid;
	volatile long nr; /* the call in progress, or -1 */
	long a[6];
} live[LIVE] ZV_COLD_BSS;
static int live_used; /* slots below this were ever claimed */

static struct live *slot_of(struct zv_thread *t)
{
	if (t->trace.slot > 0 && live[t->trace.slot - 1].tid == t->tid)
		return &live[t->trace.slot - 1];
	for (int i = 0; i < LIVE; i++) {
		int free = 0;
		if (__atomic_compare_exchange_n(&live[i].tid, &free, t->tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			live[i].pid = t->pid;
			live[i].nr = -1;
			int used = __atomic_load_n(&live_used, __ATOMIC_RELAXED);
			while (used <= i && !__atomic_compare_exchange_n(&live_used, &used, i + 1, 0, __ATOMIC_ACQ_REL,
									 __ATOMIC_RELAXED))
				;
			t->trace.slot = i + 1;
			return &live[i];
		}
	}
	return NULL; /* more threads than slots: those are not listed */
}

void zv_live_enter(struct zv_thread *t, long nr, const long *a)
{
	struct live *l = slot_of(t);
	if (!l)
		return;
	for (int i = 0; i < 6; i++)
		l->a[i] = a[i];
	__atomic_store_n(&l->nr, nr, __ATOMIC_RELEASE);
}

void zv_live_leave(struct zv_thread *t)
{
	if (t->trace.slot > 0 && live[t->trace.slot - 1].tid == t->tid)
		__atomic_store_n(&live[t->trace.slot - 1].nr, -1, __ATOMIC_RELEASE);
}

void zv_live_release(struct zv_thread *t)
{
	if (t->trace.slot > 0 && live[t->trace.slot - 1].tid == t->tid)
		__atomic_store_n(&live[t->trace.slot - 1].tid, 0, __ATOMIC_RELEASE);
	t->trace.slot = 0;
}

void zv_live_forget(struct zv_thread *self)
{
	/* Only slots ever claimed are read, and only those in use written: in
	 * a fork child each page of the table touched costs a fault, and the
	 * table spans five pages, traced or not. Slots are claimed only when
	 * following traced calls, and live_used's own page is one that only a
	 * fork child would read (a zero-page fault each time) otherwise. */
	if (self->trace.slot) /* written only when set: the field's page is not one every call writes */
		self->trace.slot = 0;
	if (!zv_proc.trace.on || !zv_proc.trace.follow)
		return;
	for (int i = 0; i < live_used; i++)
		if (live[i].tid)
			live[i].tid = 0;
}

long zv_live_call(struct zv_thread *t)
{
	if (t->trace.slot > 0 && live[t->trace.slot - 1].tid == t->tid)
		return live[t->trace.slot - 1].nr;
	return -1;
}

void zv_live_others(struct zv_thread *self, void (*fn)(int pid, int tid, long nr, const long *a))
{
	int used = __atomic_load_n(&live_used, __ATOMIC_ACQUIRE);
	for (int i = 0; i < used; i++) {
		int tid = __atomic_load_n(&live[i].tid, __ATOMIC_ACQUIRE);
		if (tid && tid != self->tid && live[i].pid == self->pid)
			fn(live[i].pid, tid, __atomic_load_n(&live[i].nr, __ATOMIC_ACQUIRE), live[i].a);
	}
}
