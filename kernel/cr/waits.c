/* Waits a checkpoint interrupted go on, when made again after it (as the
 * freeze makes them: cr/freeze.c), with the time they had left rather than
 * their whole timeout; so do those a signal no handler sees interrupted,
 * as the host's restart_syscall does. A layer (always on, for these few calls only):
 * - nanosleep and a relative clock_nanosleep: the host always gets a rem
 *   buffer, and what it leaves there is the time left;
 * - poll, epoll_wait, epoll_pwait (milliseconds), epoll_pwait2 and
 *   FUTEX_WAIT (a relative timespec): the time left is the timeout less the
 *   time spent since the call's start (below).
 * select, pselect6 and ppoll need nothing: the host writes the time left
 * back into their argument. The other futex waits have absolute deadlines,
 * which keep their meaning as they are (the vtime layer converts them where
 * a restore continues the clocks). */
#include "zvisor.h"
#include "cr/cr.h"
#include "sys/layer.h"
#include "sys/calls.h"
#include "lib/syscall.h"
#include "lib/arith.h"
#include "sys/tsc.h"
#include <asm/unistd_64.h>
#include <linux/futex.h>

#define TIMER_ABSTIME 1
#define NSEC 1000000000L

struct kts { long s, ns; };

static long host_mono_ns(void)
{
	struct kts t = { 0, 0 };
	if (zv_host_vdso_call(0, 1 /* CLOCK_MONOTONIC */, (long)&t) < 0)
		zv_sys2(__NR_clock_gettime, 1, &t);
	return t.s * NSEC + t.ns;
}

/* A timed call's start, read cheaply: the TSC (one instruction, where the
 * kernel's clock read can cost a host call, 250 ns on the stubs platform),
 * else MONOTONIC in ns. Turned into the time spent only when a freeze
 * interrupts the call (rare), at the TSC's rate measured then over 200 us
 * of MONOTONIC: no rate is kept, so a restore on another host needs none. */
static uint64_t start_mark(int tsc)
{
	return tsc ? zv_rdtsc() : (uint64_t)host_mono_ns();
}

static long spent_ns(int tsc, uint64_t mark)
{
	if (!tsc)
		return host_mono_ns() - (long)mark;
	uint64_t c0 = zv_rdtsc(), c1;
	long m0 = host_mono_ns(), m1;
	do {
		m1 = host_mono_ns();
		c1 = zv_rdtsc();
	} while (m1 - m0 < 200000);
	uint64_t cycles = c1 - mark;
	return (long)zv_umuldiv(cycles, (uint64_t)(m1 - m0), c1 - c0 ? c1 - c0 : 1, 0);
}

/* Whether this call is the one the freeze interrupted, made again: then
 * the time it had left. */
static int resumed(struct zv_thread *t, long nr, uint64_t key, long *left_ns)
{
	int same = t->cr.sleep_nr == nr && t->cr.sleep_req == key;
	t->cr.sleep_nr = 0;
	if (same)
		*left_ns = t->cr.sleep_left_ns;
	return same;
}

static void note_left(struct zv_thread *t, long nr, uint64_t key, long left_ns)
{
	t->cr.sleep_nr = (int)nr;
	t->cr.sleep_req = key;
	t->cr.sleep_left_ns = left_ns < 0 ? 0 : left_ns;
}

/* Whether an EINTR of call c is made again unseen with the time it had
 * left: a checkpoint's, or one no handler sees of a call natively made
 * again as restart_syscall (ERESTART_RESTARTBLOCK: a sleep, a poll, a
 * futex wait) with what is left of its timeout. A traced process catches
 * every signal, so a SIGCONT or SIGCHLD interrupts its host sleep. */
static int keeps_left(struct zv_call *c)
{
	return zv_cr_restart_call(c->t) ||
	       (zv_sys_restart_code(c->nr, c->a) == 516 && !zv_signal_handler_due(c->t, c->uc));
}

static long sleep_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	int nano = zv_row(c->nr)->resume == ZV_RESUME_SLEEP;
	int req_i = nano ? 0 : 2, rem_i = nano ? 1 : 3;
	if (!nano && (a[1] & TIMER_ABSTIME))
		return zv_next(c);
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] }, left_ns;
	struct kts left, rem = { 0, 0 };
	if (resumed(t, c->nr, (uint64_t)a[req_i], &left_ns)) {
		left = (struct kts){ left_ns / NSEC, left_ns % NSEC };
		b[req_i] = (long)&left;
	}
	b[rem_i] = (long)&rem;
	long r = zv_next_with(c, b);
	if (r == -EINTR) {
		if (keeps_left(c))
			note_left(t, c->nr, (uint64_t)a[req_i], rem.s * NSEC + rem.ns);
		long e = a[rem_i] ? zv_guest_copy((void *)a[rem_i], &rem, sizeof rem, (uint64_t)a[rem_i]) : 0;
		if (e < 0)
			return -EFAULT;
	}
	return r;
}

/* poll, epoll_wait, epoll_pwait: ms in argument i; epoll_pwait2 and
 * FUTEX_WAIT: a timespec. */
static long timed_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	int k = zv_row(c->nr)->resume;
	int i = k == ZV_RESUME_FUTEX ? 3 : zv_arg_index(zv_row(c->nr)->timeout);
	int ts = k != ZV_RESUME_MS;
	long timeout_ns;
	struct kts in, left;
	if (ts) {
		long e = a[i] ? zv_guest_copy(&in, (const void *)a[i], sizeof in, (uint64_t)a[i]) : -1;
		if (e < 0)
			return zv_next(c); /* none (forever), or the host's EFAULT */
		timeout_ns = in.s * NSEC + in.ns;
	} else {
		timeout_ns = (int)a[i] * 1000000L;
	}
	if (timeout_ns <= 0)
		return zv_next(c); /* a poll, or forever: nothing to keep */
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] }, left_ns;
	uint64_t key = (uint64_t)a[0] ^ ((uint64_t)a[1] << 1) ^ ((uint64_t)a[i] << 7);
	if (resumed(t, c->nr, key, &left_ns)) {
		timeout_ns = left_ns;
		if (ts) {
			left = (struct kts){ left_ns / NSEC, left_ns % NSEC };
			b[i] = (long)&left;
		} else {
			b[i] = (left_ns + 999999) / 1000000;
		}
	}
	int tsc = zv_tsc_usable();
	uint64_t mark = start_mark(tsc);
	long r = zv_next_with(c, b);
	if (r == -EINTR && keeps_left(c))
		note_left(t, c->nr, key, timeout_ns - spent_ns(tsc, mark));
	return r;
}

/* The row's resume column (sys/sysent.h); rseq's registration, and
 * inotify watches' files (cr/inotify_notes.c). */
static int sees(long nr)
{
	return zv_row(nr)->resume != ZV_RESUME_NONE || zv_row(nr)->registers || nr == __NR_inotify_add_watch;
}

static long call(struct zv_call *c)
{
	if (c->nr == __NR_inotify_add_watch)
		return zv_cr_sys_inotify_add_watch(c);
	int k = zv_row(c->nr)->resume;
	if (zv_row(c->nr)->registers)
		return zv_cr_sys_rseq(c);
	if (k == ZV_RESUME_SLEEP || k == ZV_RESUME_CLOCK_SLEEP)
		return sleep_call(c);
	if (k == ZV_RESUME_FUTEX && ((c->a[1] & FUTEX_CMD_MASK) != FUTEX_WAIT || !c->a[3]))
		return zv_next(c); /* no timeout, an absolute one, or no wait */
	return timed_call(c);
}

/* The host's execve drops every rseq registration; the new image's
 * memory must not be written as the old one's area. */
static void exec_here(struct zv_thread *t)
{
	if (t->cr.rseq)
		zv_sys4(__NR_rseq, t->cr.rseq, t->cr.rseq_len, 1 /* RSEQ_FLAG_UNREGISTER */, t->cr.rseq_sig);
	t->cr.rseq = 0;
}

static void fork_child(struct zv_thread *t) { zv_cr_inotify_fork_child(); }

ZV_LAYER(cr_waits, 700) = { .name = "cr-waits", .sees = sees, .call = call, .exec_here = exec_here,
			    .fork_child = fork_child };

/* rseq: the host keeps a thread's registration, which no call reads back;
 * the kernel notes it so that a restored thread registers again. */
long zv_cr_sys_rseq(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long r = zv_next(c);
	if (r == 0) {
		int unreg = a[2] & 1; /* RSEQ_FLAG_UNREGISTER */
		t->cr.rseq = unreg ? 0 : (uint64_t)a[0];
		t->cr.rseq_len = (uint32_t)a[1];
		t->cr.rseq_sig = (uint32_t)a[3];
	}
	return r;
}
