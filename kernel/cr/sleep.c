/* A relative sleep (nanosleep, clock_nanosleep without TIMER_ABSTIME) that
 * a checkpoint interrupted continues with the time it had left when made
 * again, as after a stop and continue, rather than starting over: the host
 * is always given a rem buffer, and what it leaves there is kept for the
 * call's re-execution (cr/freeze.c restarts it). Other waits restart as the
 * host restarts them after a stop: select, pselect6 and ppoll read the time
 * left, which the host wrote back; epoll_wait starts again. */
#include "zvisor.h"
#include "cr/cr.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include <asm/unistd_64.h>

#define TIMER_ABSTIME 1

struct kts { long s, ns; };

long zv_cr_sys_sleep(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	int nano = c->nr == __NR_nanosleep;
	int req_i = nano ? 0 : 2, rem_i = nano ? 1 : 3;
	if (!nano && (a[1] & TIMER_ABSTIME))
		return zv_host_call(t, c->nr, a[0], a[1], a[2], a[3], 0, 0);
	long b[6] = { a[0], a[1], a[2], a[3], 0, 0 };
	struct kts left, rem = { 0, 0 };
	if (t->cr.sleep_nr == c->nr && t->cr.sleep_req == (uint64_t)a[req_i]) {
		/* the same call, made again after the checkpoint */
		left = (struct kts){ t->cr.sleep_left_s, t->cr.sleep_left_ns };
		b[req_i] = (long)&left;
	}
	t->cr.sleep_nr = 0;
	b[rem_i] = (long)&rem;
	long r = zv_host_call(t, c->nr, b[0], b[1], b[2], b[3], 0, 0);
	if (r == -EINTR) {
		if (zv_cr_restart_call(t)) {
			t->cr.sleep_nr = (int)c->nr;
			t->cr.sleep_req = (uint64_t)a[req_i];
			t->cr.sleep_left_s = rem.s;
			t->cr.sleep_left_ns = rem.ns;
		}
		uint64_t outer = t->guard_sp;
		long e = a[rem_i] ? zv_copy_guarded((void *)a[rem_i], &rem, sizeof rem, &t->guard_sp) : 0;
		t->guard_sp = outer;
		if (e < 0)
			return -EFAULT;
	}
	return r;
}
