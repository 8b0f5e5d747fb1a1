/* The shared area of a traced address space, its slots, and the tracer's
 * bell (ptrace/area.h explains both); this process's state as a tracee. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "ptrace/ptrace.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include <linux/futex.h>

struct zv_pt_tracee zv_pt_me;

long zv_pt_futex_wait(volatile uint32_t *w, uint32_t v, long ms)
{
	struct { long s, ns; } ts = { ms / 1000, (ms % 1000) * 1000000L };
	return zv_sys4(__NR_futex, w, FUTEX_WAIT, v, ms >= 0 ? &ts : NULL);
}

void zv_pt_futex_wake(volatile uint32_t *w)
{
	zv_sys3(__NR_futex, w, FUTEX_WAKE, 0x7fffffff);
}

/* A futex sleep on *w while it is v, counted in *sleepers. The count's
 * increment and the waker's change of *w are both sequentially consistent
 * read-modify-writes: either the waker sees the count and wakes, or its
 * change came first and the futex, which compares *w with v under its
 * lock, does not sleep. */
long zv_pt_sleep(volatile uint32_t *w, uint32_t v, volatile uint32_t *sleepers, long ms)
{
	__atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
	long r = zv_pt_futex_wait(w, v, ms);
	__atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
	return r;
}

void zv_pt_wake_sleepers(volatile uint32_t *w, volatile uint32_t *sleepers)
{
	if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST))
		zv_pt_futex_wake(w);
}

long zv_pt_area_new(int *fdp)
{
	long fd = zv_sys2(__NR_memfd_create, "zvisor-ptrace", 1 /* MFD_CLOEXEC */);
	if (fd < 0)
		return fd;
	long r = zv_sys2(__NR_ftruncate, fd, ZV_PT_AREA_BYTES);
	struct zv_pt_area *a = r < 0 ? (void *)r : zv_kmap(ZV_PT_AREA_BYTES, 4096, (int)fd);
	if (zv_is_err((long)a)) {
		zv_close((int)fd);
		return (long)a;
	}
	a->magic = ZV_PT_MAGIC;
	a->hpid = (int)zv_getpid();
	a->pid = zv_proc.pid;
	zv_strlcpy(a->exe, zv_proc.exe_path, sizeof a->exe);
	zv_pt_me.area = a;
	*fdp = (int)fd;
	return 0;
}

struct zv_pt_slot *zv_pt_slot_take(struct zv_thread *x)
{
	struct zv_pt_area *a = zv_pt_me.area;
	if (!a)
		return NULL;
	struct zv_pt_slot *s = NULL;
	zv_lock(&a->lock);
	for (int i = 0; i < ZV_PT_SLOTS && !s; i++) {
		struct zv_pt_slot *c = zv_pt_slot_at(a, i);
		if (c->tid)
			continue;
		s = c;
		memset(s, 0, ZV_PT_HEAD_BYTES);
		s->pid = x->pid;
		s->htid = x->htid;
		s->hpid = (int)zv_getpid();
		__atomic_store_n(&s->tid, x->tid, __ATOMIC_RELEASE);
		if (i + 1 > a->nslots)
			__atomic_store_n(&a->nslots, i + 1, __ATOMIC_RELEASE);
	}
	zv_unlock(&a->lock);
	return s;
}

/* The end of a thread that exit_group or a fatal signal ended, written
 * by another thread or the tracer: a stop the tracer saw stays readable
 * (its registers, siginfo and syscall info) until its end is reported,
 * as natively the tracer reads them before the kill lands. */
int zv_pt_slot_end(struct zv_pt_slot *s, int status)
{
	uint32_t was = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (was == ZV_PT_EXITED)
		return 0;
	s->end_status = status;
	s->listening = 0;
	do { /* (against the thread's own stop, which may come at the same time: ptrace/stop.c) */
		if (was == ZV_PT_EXITED)
			return 0;
		s->ended_in_stop = was == ZV_PT_STOPPED;
	} while (!__atomic_compare_exchange_n(&s->state, &was, ZV_PT_EXITED, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE));
	__atomic_add_fetch(&s->stops, 1, __ATOMIC_RELEASE);
	return 1;
}

/* Every signal goes through zvisor first while a thread is traced (the
 * tracer sees them all), and the tracer's SIGCHLD wakes its waits. */
static void catch_all(int on)
{
	if (zv_proc.catch_signals == on)
		return;
	zv_proc.catch_signals = on;
	zv_signals_reinstall(zv_current()->sighand);
}

void zv_pt_set_bounce(struct zv_thread *t)
{
	struct zv_pt_slot *s = t->pt.slot;
	int m = t->pt.mode;
	/* Syscall stops and the events that need a frame take the SIGSYS
	 * path; a thread resumed with PTRACE_CONT keeps the fast path. */
	t->bounce_all = s && (m == ZV_PT_SYSCALL || m == ZV_PT_SYSEMU || m == ZV_PT_SYSEMU_STEP || t->pt.step_syscall ||
			      (s->options & (PT_O_TRACEFORK | PT_O_TRACEEXIT | PT_O_TRACEVFORK | PT_O_TRACECLONE)));
}

void zv_pt_traced(struct zv_thread *x, struct zv_pt_slot *s, int tracer_pid)
{
	x->pt.slot = s;
	x->pt.mode = ZV_PT_CONT;
	x->pt.again_nr = -1;
	x->pt.block_nr = -1;
	x->pt.orig_rax = -1; /* no call of its own seen yet */
	x->tracer_pid = tracer_pid;
	s->tracer_pid = tracer_pid;
	__atomic_add_fetch(&zv_pt_me.traced, 1, __ATOMIC_ACQ_REL);
	/* its exec stop comes from the host's execve, as before the exec
	 * in this process existed (DESIGN, "The guest's ptrace") */
	zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_PTRACE);
	catch_all(1);
	zv_layers_fold();
	zv_pt_set_bounce(x);
}

void zv_pt_untraced(struct zv_thread *x)
{
	struct zv_pt_slot *s = x->pt.slot;
	if (!s)
		return;
	zv_pt_debugreg_drop(x);
	x->pt.slot = NULL;
	x->pt.want = 0;
	x->pt.stepping = 0;
	x->pt.step_syscall = 0;
	x->tracer_pid = 0;
	x->bounce_all = 0;
	__atomic_store_n(&s->state, ZV_PT_GONE, __ATOMIC_RELEASE);
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
	if (__atomic_sub_fetch(&zv_pt_me.traced, 1, __ATOMIC_ACQ_REL) == 0) {
		catch_all(zv_pt_tracing());
		zv_layers_fold();
	}
}

void zv_pt_ring(struct zv_pt_bell *b)
{
	if (!b)
		return;
	__atomic_add_fetch(&b->ring, 1, __ATOMIC_SEQ_CST);
	zv_pt_wake_sleepers(&b->ring, &b->sleepers);
}

/* A stop (or end, or continue) the tracer's guest would learn of by
 * SIGCHLD: the bell, then a queued SIGCHLD to the tracer's process
 * carrying the tracee's tid, the si_code and si_status, which its kernel
 * turns into the CLD_* it stands for (ptrace/layer.c). (The SIGCHLD first
 * would be as natively, where it is sent before the wait wakes, but its
 * handler then slows the tracer's reaping: a traced shell's own SIGCHLD
 * from a child's end came after its wait instead of before it, in strace
 * -f of tests/guests/signals.c.) */
void zv_pt_bell_notify(struct zv_thread *t, int code, int status)
{
	struct zv_pt_bell *b = zv_pt_me.bell;
	zv_pt_ring(b);
	if (b && __atomic_load_n(&b->notify, __ATOMIC_ACQUIRE)) {
		zv_siginfo si = { .si_signo = SIGCHLD_, .si_code = -1 /* SI_QUEUE */ };
		si.kill.pid = (int32_t)zv_getpid();
		si.kill.uid = (uint32_t)zv_sys0(__NR_getuid);
		uint64_t v = (ZV_PT_SIG_MAGIC << 40) | ((uint64_t)ZV_PT_SIG_NOTIFY << 32) | (uint32_t)t->tid;
		memcpy(si.bytes + 8, &v, 8);
		memcpy(si.bytes + 16, &code, 4);
		memcpy(si.bytes + 20, &status, 4);
		zv_sys3(__NR_rt_sigqueueinfo, b->tracer_hpid, SIGCHLD_, &si);
	}
}

/* Whether the tracer still lives: its bell says it ended, or its pid is gone. */
int zv_pt_tracer_alive(void)
{
	struct zv_pt_bell *b = zv_pt_me.bell;
	if (!b || __atomic_load_n(&b->gone, __ATOMIC_ACQUIRE))
		return 0;
	/* A tracer killed before it could say so is gone, or a zombie its
	 * parent has not reaped (which may be waiting for this tracee). A
	 * read of its memory says ESRCH for both, and for nothing else (it
	 * may fail otherwise: EFAULT, or EPERM under Yama); unlike a /proc
	 * read it takes no fd, which another guest thread would see. */
	char c;
	struct { void *base; uint64_t len; } mine = { &c, 1 }, its = { (void *)4096, 1 };
	return zv_sys6(__NR_process_vm_readv, b->tracer_hpid, (long)&mine, 1, (long)&its, 1, 0) != -ESRCH;
}

/* A queued SIGSYS to host thread hpid/htid: it looks at what it is asked
 * (pt.want, its slot's want), at once in guest code or on its way out.
 * The host drops it when a SIGSYS is pending for the thread already (a
 * standard signal is queued once): a call's trap on sud and seccomp. So
 * what is asked is never in the signal; every call of a traced thread
 * and every way out with work looks too (layer.c want_due). */
static long wake(int hpid, int htid)
{
	zv_siginfo si = { .si_signo = 31, .si_code = -1 /* SI_QUEUE: the host refuses others from outside */ };
	si.kill.pid = (int32_t)zv_getpid();
	uint64_t v = (ZV_PT_SIG_MAGIC << 40) | ((uint64_t)ZV_PT_SIG_WAKE << 32);
	memcpy(si.bytes + 8, &v, 8);
	return zv_sys4(__NR_rt_tgsigqueueinfo, hpid, htid, 31, &si);
}

/* Another thread x of this process must look at pt.want. */
void zv_pt_wake_thread(struct zv_thread *x, int want)
{
	__atomic_or_fetch(&x->pt.want, want, __ATOMIC_SEQ_CST);
	wake((int)zv_getpid(), x->htid);
}

/* (a wait of its that a word for it interrupted looks again: jobstop.c) */
void zv_pt_wake_htid(int htid)
{
	wake((int)zv_getpid(), htid);
}

/* The tracer's: its tracee r must look at its slot's want. */
long zv_pt_wake_tracee(struct zv_pt_tracee_ref *r, int want)
{
	__atomic_or_fetch(&r->s->want, want, __ATOMIC_SEQ_CST);
	return wake(r->hpid, r->htid);
}

/* A fork child, or a thread of a process that is no tracee now: the
 * parent's area and bell stay mapped (they are shared) but are not its. */
void zv_pt_forget(void)
{
	zv_pt_me.area = NULL;
	zv_pt_me.bell = NULL;
	zv_pt_me.traced = 0;
	zv_pt_me.lock = 0;
	zv_pt_me.ending = 0;
	zv_pt_me.group_stop = 0;
}
