/* wait4 and waitid of a tracer: its tracees' stops and exits (from their
 * slots) merged with the host's children, as the host merges a tracer's
 * ptrace children with its own. Every tracee is eligible whatever
 * __WCLONE says, as natively. A wait that must block sleeps on the bell
 * every tracee rings (counted in its sleepers), and the host's SIGCHLD
 * (zvisor catches it while it traces) ends that sleep for the host's
 * children. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/futex.h>

#define WNOHANG 1
#define WNOWAIT 0x01000000
#define WEXITED 4
#define WSTOPPED 2
#define WCONTINUED 8
#define P_ALL 0
#define P_PID 1
#define P_PGID 2
#define CLD_EXITED 1
#define CLD_KILLED 2
#define CLD_DUMPED 3
#define CLD_TRAPPED 4
#define CLD_STOPPED 5
#define CLD_CONTINUED 6

struct want {
	int pid;        /* -1: any; > 0: that one; 0 or < -1: a group (any tracee) */
	int options;
	int *status;
	zv_siginfo *info;
	void *ru;
	int waitid;
};

static int matches(const struct want *w, const struct zv_pt_tracee_ref *r)
{
	return w->pid <= 0 || w->pid == -1 || r->tid == w->pid;
}

/* Fills what the guest asked for with tracee r's event (status). */
static long report(const struct want *w, const struct zv_pt_tracee_ref *r, int status, int stopped)
{
	if (w->ru) /* (a bad pointer: the event is reported all the same) */
		zv_guest_copy(w->ru, r->s->ru, 144, (uint64_t)w->ru);
	if (!w->waitid) {
		if (w->status)
			*w->status = status;
		return r->tid;
	}
	if (w->info) {
		zv_siginfo *i = w->info;
		memset(i, 0, sizeof *i);
		i->si_signo = SIGCHLD_;
		i->kill.pid = r->tid;
		i->kill.uid = zv_sender_uid(zv_current(), r->htid, r->hpid, (uint32_t)zv_sys0(__NR_getuid));
		int code, st;
		if (stopped) {
			code = CLD_TRAPPED;
			st = (status >> 8) & 0xffff;
		} else if ((status & 0x7f) == 0) {
			code = CLD_EXITED;
			st = (status >> 8) & 0xff;
		} else {
			code = status & 0x80 ? CLD_DUMPED : CLD_KILLED;
			st = status & 0x7f;
		}
		i->si_code = code;
		memcpy(i->bytes + 8, &st, 4); /* si_status */
	}
	return 0;
}

/* A tracee died without a word (a SIGKILL; its slot still says it runs
 * or stops): it is reported killed, but for the leader of this process's
 * own child, whose end the host's wait reports, and for a thread whose
 * execve goes on as the leader (natively its tid just ends: the new
 * image's exec stop names it, and its join drops the old threads). */
static int vanished(const struct zv_pt_tracee_ref *r)
{
	if ((r->host_child && r->tid == r->pid) || !r->s ||
	    __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) == ZV_PT_EXITED || zv_pt_alive(r->hpid, r->htid))
		return 0;
	return !__atomic_load_n(&r->s->execing, __ATOMIC_ACQUIRE) || !zv_pt_alive(r->hpid, r->hpid);
}

/* The first event of a matching tracee, reported (and consumed unless
 * WNOWAIT); -1 if none; *any says whether a tracee matched at all. */
static long tracee_event(const struct want *w, int *any, int look_dead)
{
	zv_pt_scan_areas();
	for (int i = 0; i < zv_pt_tracer.n; i++) {
		struct zv_pt_tracee_ref *r = &zv_pt_tracer.tr[i];
		if (!matches(w, r))
			continue;
		*any = 1;
		if (r->pending) {
			long c = zv_pt_complete(r, 0);
			if (c != -EAGAIN)
				return tracee_event(w, any, look_dead); /* the table changed */
			continue;
		}
		struct zv_pt_slot *s = r->s;
		uint32_t stops = __atomic_load_n(&s->stops, __ATOMIC_ACQUIRE);
		int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (look_dead && vanished(r)) {
			long ret = report(w, r, SIGKILL_, 0);
			if (!(w->options & WNOWAIT)) {
				__atomic_store_n(&s->state, ZV_PT_GONE, __ATOMIC_RELEASE);
				zv_pt_drop(r);
			}
			return ret;
		}
		if (stops == r->reported)
			continue;
		if (state == ZV_PT_EXITED) {
			/* the leader of a child of ours: the host's wait reports it */
			if (r->host_child && r->tid == r->pid)
				continue;
			long ret = report(w, r, s->end_status, 0);
			if (!(w->options & WNOWAIT))
				zv_pt_drop(r);
			return ret;
		}
		if (state != ZV_PT_STOPPED || s->listening)
			continue;
		int st = s->status;
		int ev = st >> 16;
		if ((ev == PT_EVENT_FORK || ev == PT_EVENT_VFORK || ev == PT_EVENT_CLONE) && !zv_pt_find((int)s->msg))
			zv_pt_expect((int)s->msg, s); /* its join comes */
		long ret = report(w, r, st, 1);
		if (!(w->options & WNOWAIT))
			r->reported = stops;
		return ret;
	}
	return -1;
}

/* The tracees of process pid are gone with it (the host reaped it). */
static void gone(int pid)
{
	for (int i = zv_pt_tracer.n - 1; i >= 0; i--)
		if (zv_pt_tracer.tr[i].hpid == pid)
			zv_pt_drop(&zv_pt_tracer.tr[i]);
	zv_pt_area_gone(pid);
}

/* Whether a child of ours on the host has traced threads besides its
 * leader: its end must not be reaped before theirs is reported. */
static int child_threads(void)
{
	for (int i = 0; i < zv_pt_tracer.n; i++)
		if (zv_pt_tracer.tr[i].host_child && zv_pt_tracer.tr[i].tid != zv_pt_tracer.tr[i].pid)
			return 1;
	return 0;
}

/* The wait status of what waitid's siginfo si reports. */
static int status_of(const zv_siginfo *si)
{
	int st;
	memcpy(&st, si->bytes + 8, 4);
	switch (si->si_code) {
	case CLD_EXITED:
		return (st & 0xff) << 8;
	case CLD_KILLED:
		return st & 0x7f;
	case CLD_DUMPED:
		return (st & 0x7f) | 0x80;
	case CLD_CONTINUED:
		return 0xffff;
	default: /* CLD_STOPPED, CLD_TRAPPED */
		return (st & 0xff) << 8 | 0x7f;
	}
}

/* The host child the wait would report, seen without reaping it
 * (WNOWAIT), in *si: its pid, 0 if none yet, or -errno. If it ended, its
 * traced threads whose end the tracer has not seen end with it, with the
 * process's status, for the waits to report before its leader (natively
 * every traced thread's end is reported, the leader's last): then
 * -EAGAIN. A thread that started or was resumed while exit_group or a
 * SIGKILL ended the process never wrote its end. */
static long threads_end_first(struct zv_thread *t, struct zv_call *c, const struct want *w, zv_siginfo *si)
{
	const long *a = c->a;
	long idtype = a[0], id = a[1], opts = a[3];
	if (!w->waitid) {
		idtype = w->pid == -1 ? P_ALL : w->pid > 0 ? P_PID : P_PGID;
		id = w->pid < -1 ? -w->pid : w->pid > 0 ? w->pid : 0;
		opts = WEXITED | (w->options & (WSTOPPED | WCONTINUED | 0xe0000000));
	}
	memset(si, 0, sizeof *si);
	long r = zv_sys5(__NR_waitid, idtype, id, (long)si, opts | WNOHANG | WNOWAIT, 0);
	int pid = si->kill.pid;
	if (r < 0 || pid <= 0)
		return r < 0 ? r : 0;
	if (si->si_code < CLD_EXITED || si->si_code > CLD_DUMPED)
		return pid;
	int status = status_of(si);
	zv_pt_scan_areas();
	int ended = 0;
	for (int i = 0; i < zv_pt_tracer.n; i++) {
		struct zv_pt_tracee_ref *q = &zv_pt_tracer.tr[i];
		if (q->hpid != pid || (q->host_child && q->tid == q->pid) || !matches(w, q) || q->pending || !q->s)
			continue;
		ended |= zv_pt_slot_end(q->s, status);
	}
	return ended ? -EAGAIN : pid;
}

/* The report of host child pid that the look without reaping (si) found,
 * and no other: a child that ended since is not reaped before its
 * threads' ends are reported, as a wait for any child would reap it. Made
 * by waitid for wait4 too, for the kind of event seen only (a stopped
 * child ending meanwhile stays unreaped). > 0 its pid, 0 if it is gone
 * (another thread's wait took it), -errno. */
static long host_child_event(struct zv_thread *t, struct zv_call *c, const struct want *w, int pid,
			     const zv_siginfo *seen)
{
	const long *a = c->a;
	int code = seen->si_code;
	long kind = code == CLD_CONTINUED ? WCONTINUED : code >= CLD_EXITED && code <= CLD_DUMPED ? WEXITED : WSTOPPED;
	zv_siginfo si, *i = w->waitid && w->info ? w->info : &si;
	memset(&si, 0, sizeof si);
	if (i != &si)
		i->kill.pid = 0;
	long opts = kind | WNOHANG | (w->waitid ? a[3] & (WNOWAIT | 0xe0000000) : w->options & 0xe0000000);
	long r = zv_sys5(__NR_waitid, P_PID, pid, (long)i, opts, (long)w->ru);
	if (r < 0)
		return r;
	if (i->kill.pid != pid)
		return 0;
	if (w->waitid) {
		i->kill.uid = zv_sender_uid(t, pid, 0, i->kill.uid); /* (the child's uid as the guest knows it) */
	} else if (w->status) {
		int st = status_of(i);
		if (zv_guest_copy(w->status, &st, sizeof st, (uint64_t)w->status) < 0)
			r = -EFAULT; /* (reaped all the same, as natively) */
	}
	if (kind == WEXITED && !(opts & WNOWAIT))
		gone(pid);
	return r < 0 ? r : pid;
}

/* The host's children, without blocking: > 0 a pid reported, 0 nothing
 * yet, -EAGAIN tracees to report first, -errno. */
static long host_event(struct zv_thread *t, struct zv_call *c, const struct want *w)
{
	const long *a = c->a;
	long r;
	/* (each never blocking, so made with a signal deferred too: cancelled,
	 * it would make a wait the signal ended look never begun, made again
	 * after the handler instead of EINTR) */
	if (child_threads()) {
		zv_siginfo si;
		r = threads_end_first(t, c, w, &si);
		return r > 0 ? host_child_event(t, c, w, (int)r, &si) : r;
	}
	if (!w->waitid) {
		r = zv_sys4(__NR_wait4, a[0], a[1], a[2] | WNOHANG, a[3]);
	} else {
		if (w->info)
			w->info->kill.pid = 0;
		r = zv_sys5(__NR_waitid, a[0], a[1], a[2], a[3] | WNOHANG, a[4]);
		if (r == 0)
			r = w->info ? w->info->kill.pid : 0;
		if (r > 0 && w->info) /* (the child's uid as the guest knows it) */
			w->info->kill.uid = zv_sender_uid(t, (int)r, 0, w->info->kill.uid);
	}
	if (r > 0 && !(w->options & WNOWAIT))
		gone((int)r);
	return r;
}

static void update_bell(struct zv_thread *t, const struct want *w)
{
	struct zv_pt_bell *b = zv_pt_tracer.bell;
	if (!b)
		return;
	zv_pt_bell_handles(t);
	if (b->rusage != (w->ru != NULL))
		b->rusage = w->ru != NULL;
}

long zv_pt_wait(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	struct want w = { 0 };
	if (c->nr == __NR_wait4) {
		w.pid = (int)a[0];
		w.status = (int *)a[1];
		w.options = (int)a[2];
		w.ru = (void *)a[3];
		if (w.options & ~(WNOHANG | 2 | WCONTINUED | 0x20000000 | 0x40000000 | 0x80000000))
			return zv_next(c); /* the host's EINVAL */
	} else {
		w.waitid = 1;
		w.info = (zv_siginfo *)a[2];
		w.options = (int)a[3];
		w.ru = (void *)a[4];
		if (a[0] == P_ALL)
			w.pid = -1;
		else if (a[0] == P_PID)
			w.pid = (int)a[1];
		else if (a[0] == P_PGID)
			w.pid = 0;
		else
			return zv_next(c); /* P_PIDFD: the host's */
		if (!(w.options & (WEXITED | WSTOPPED | WCONTINUED)) || (w.pid == 0 && a[0] == P_PID))
			return zv_next(c); /* the host's EINVAL or ECHILD */
	}
	update_bell(t, &w);
	int look_dead = 0;
	for (;;) {
		uint32_t ring = zv_pt_tracer.bell ? __atomic_load_n(&zv_pt_tracer.bell->ring, __ATOMIC_ACQUIRE) : 0;
		int any = 0;
		long r = tracee_event(&w, &any, look_dead);
		if (r >= 0)
			return r;
		r = host_event(t, c, &w);
		if (r > 0)
			return w.waitid ? 0 : r;
		if (r == -EAGAIN)
			continue;
		if (r < 0 && r != -ECHILD)
			return r;
		if (r == -ECHILD && !any && !zv_pt_expected(w.pid))
			return -ECHILD;
		if (w.options & WNOHANG)
			return 0;
		/* Non-child tracees and pending attaches are looked at again in
		 * a while; a tracee's stop rings the bell, a child's exit ends
		 * the wait with the host's SIGCHLD. */
		int poll = 0, ending = 0;
		for (int i = 0; i < zv_pt_tracer.n; i++) {
			const struct zv_pt_tracee_ref *q = &zv_pt_tracer.tr[i];
			poll |= !(q->host_child && q->tid == q->pid) || q->pending;
			ending |= q->host_child && q->tid == q->pid && q->s &&
				  __atomic_load_n(&q->s->state, __ATOMIC_ACQUIRE) == ZV_PT_EXITED;
		}
		poll |= zv_pt_expected(w.pid);
		/* The guest blocks SIGCHLD (the host's mask is its): no signal
		 * ends the sleep at a child's end, which is looked for now and
		 * then, often once a tracee wrote its end (its exit follows). */
		uint64_t mask = 0;
		zv_sys4(__NR_rt_sigprocmask, 0 /* SIG_BLOCK */, NULL, &mask, 8);
		int held = (mask >> (SIGCHLD_ - 1)) & 1;
		poll |= held;
		struct zv_pt_bell *b = zv_pt_tracer.bell;
		struct { long s, ns; } ts = { 0, held && ending ? 2000000L : 100000000L };
		long f;
		if (b) {
			__atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST); /* (zv_pt_sleep's protocol) */
			f = zv_host_call(t, __NR_futex, (long)&b->ring, FUTEX_WAIT, ring, poll ? (long)&ts : 0, 0, 0);
			__atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
		} else {
			f = zv_host_call(t, __NR_futex, (long)&ring, FUTEX_WAIT, ring, (long)&ts, 0, 0);
		}
		look_dead = f == -ETIMEDOUT; /* non-child tracees that died silently, after a while */
		if (f == -EINTR) { /* a signal: perhaps a child's end (its SIGCHLD) */
			any = 0;
			r = tracee_event(&w, &any, 1);
			if (r >= 0)
				return r;
			r = host_event(t, c, &w);
			if (r > 0)
				return w.waitid ? 0 : r;
			if (r == -EAGAIN)
				continue;
			return -EINTR;
		}
	}
}
