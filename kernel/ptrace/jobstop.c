/* A traced process's group stop as its real parent sees it. Natively
 * (do_notify_parent_cldstop) a tracee whose tracer is not its parent
 * notifies both: the parent gets a CLD_STOPPED SIGCHLD when the group stop
 * is complete and a CLD_CONTINUED one after a SIGCONT, and its waits with
 * WUNTRACED or WCONTINUED report them. Here the stop is the tracee's
 * kernel's, unseen by the host, so the tracee tells the parent's kernel
 * with a queued SIGSYS; the parent's kernel keeps the last word per child
 * for its waits and gives its guest the SIGCHLD. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"

#define WNOHANG 1
#define WUNTRACED 2
#define WEXITED 4
#define WCONTINUED 8
#define WNOWAIT 0x01000000
#define WCLONE_ 0x80000000
#define WALL_ 0x40000000
#define P_ALL 0
#define P_PID 1
#define P_PGID 2
#define CLD_STOPPED 5
#define CLD_CONTINUED 6
#define SIGCONT_ 18
#define SA_NOCLDSTOP_ 1

/* The tracee's side: tells its parent, when that is not its tracer (whose
 * own stop report covers it) and is hosted (a SIGSYS would end another). */
static void tell_parent(int code, int sig)
{
	int ppid = (int)zv_sys0(__NR_getppid);
	if (ppid <= 1 || ppid == zv_pt_me.tracer_hpid || zv_peer_hosted(ppid) != 1)
		return;
	zv_siginfo q = { .si_signo = 31, .si_code = -1 /* SI_QUEUE */ };
	q.kill.pid = zv_proc.pid;
	q.kill.uid = (uint32_t)zv_sys0(__NR_getuid);
	uint64_t v = (ZV_PT_SIG_MAGIC << 40) | ((uint64_t)ZV_PT_SIG_JOB << 32) | (uint32_t)(code << 8 | sig);
	memcpy(q.bytes + 8, &v, 8);
	int hpid = (int)zv_getpid();
	memcpy(q.bytes + 16, &hpid, 4);
	zv_sys3(__NR_rt_sigqueueinfo, ppid, 31, &q);
}

void zv_pt_job_stop(struct zv_thread *t, int sig)
{
	(void)t;
	if (sig < 19 || sig > 22 || __atomic_exchange_n(&zv_pt_me.group_stop, sig, __ATOMIC_ACQ_REL))
		return;
	tell_parent(CLD_STOPPED, sig);
}

void zv_pt_job_cont(struct zv_thread *t)
{
	if (!__atomic_exchange_n(&zv_pt_me.group_stop, 0, __ATOMIC_ACQ_REL))
		return;
	tell_parent(CLD_CONTINUED, SIGCONT_);
	zv_pt_bell_notify(t, CLD_CONTINUED, SIGCONT_); /* the tracer's too */
}

/* The parent's side: the last word of each child, a word per entry
 * (guest pid << 32 | code << 8 | signal; 0: free, 1: being written)
 * changed with atomics, since it arrives in a signal handler, and the
 * child's host pid. */
#define JOBS 32
static struct {
	uint64_t word;
	int hpid;
} jobs[JOBS];

static volatile int waiter; /* a thread blocked in a wait that may report one */

/* Child pid's entry: its own, else a free one, taken (1); -1 if full. */
static int take(int pid)
{
	for (int i = 0; i < JOBS; i++) {
		uint64_t w = __atomic_load_n(&jobs[i].word, __ATOMIC_ACQUIRE);
		if (w > 1 && (int)(w >> 32) == pid &&
		    __atomic_compare_exchange_n(&jobs[i].word, &w, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return i;
	}
	for (int i = 0; i < JOBS; i++) {
		uint64_t w = 0;
		if (__atomic_compare_exchange_n(&jobs[i].word, &w, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return i;
	}
	return -1;
}

void zv_pt_job_arrived(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc)
{
	uint64_t v;
	int hpid;
	memcpy(&v, si->bytes + 8, 8);
	memcpy(&hpid, si->bytes + 16, 4);
	int code = (int)(v >> 8) & 0xff, sig = (int)v & 0xff, pid = si->kill.pid;
	int i = take(pid);
	if (i >= 0) {
		jobs[i].hpid = hpid;
		__atomic_store_n(&jobs[i].word, (uint64_t)(uint32_t)pid << 32 | (uint32_t)(code << 8 | sig), __ATOMIC_RELEASE);
	}
	const struct zv_ksigaction *a = &t->sighand->act[SIGCHLD_];
	if (a->handler > 1 /* SIG_IGN */ && !(a->flags & SA_NOCLDSTOP_)) {
		zv_siginfo cld = { .si_signo = SIGCHLD_, .si_code = code };
		cld.kill.pid = pid;
		cld.kill.uid = si->kill.uid;
		memcpy(cld.bytes + 8, &sig, 4); /* si_status */
		zv_signal_post(t, &cld);
	}
	int w = waiter;
	if (w && w != t->htid) /* the waiting thread looks again */
		zv_pt_wake_htid(w);
	zv_kwork_request(t, uc); /* a wait it interrupted is made again */
}

struct jobwait {
	int pid;     /* > 0: that child; -1: any; 0: group pgid's */
	long pgid;
	int options; /* WUNTRACED (WSTOPPED), WCONTINUED, WNOWAIT, WNOHANG */
	int waitid;
};

/* Whether child hpid is still a living child of this process (not a
 * zombie: its end is the host wait's to report). */
static int living_child(int hpid)
{
	zv_siginfo si;
	memset(&si, 0, sizeof si);
	return zv_sys5(__NR_waitid, P_PID, hpid, (long)&si, WEXITED | WNOHANG | WNOWAIT, 0) == 0 && si.kill.pid == 0;
}

static int matches(const struct jobwait *w, int pid, int hpid)
{
	if (w->pid > 0)
		return w->pid == pid;
	if (w->pid == -1)
		return 1;
	return zv_sys1(__NR_getpgid, hpid) == w->pgid;
}

/* A matching child's word, reported as wait4 or waitid does (and consumed
 * unless WNOWAIT): 1 and *ret, or 0. */
static int report(struct zv_call *c, const struct jobwait *w, long *ret)
{
	for (int i = 0; i < JOBS; i++) {
		uint64_t word = __atomic_load_n(&jobs[i].word, __ATOMIC_ACQUIRE);
		if (word <= 1)
			continue;
		int pid = (int)(word >> 32), code = (int)(word >> 8) & 0xff, sig = (int)word & 0xff;
		int hpid = jobs[i].hpid;
		if (!living_child(hpid)) {
			__atomic_compare_exchange_n(&jobs[i].word, &word, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			continue;
		}
		if (!(w->options & (code == CLD_STOPPED ? WUNTRACED : WCONTINUED)) || !matches(w, pid, hpid))
			continue;
		if (!(w->options & WNOWAIT) &&
		    !__atomic_compare_exchange_n(&jobs[i].word, &word, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return report(c, w, ret); /* a newer word came */
		if (!w->waitid) {
			if (c->a[1])
				*(int *)c->a[1] = code == CLD_STOPPED ? sig << 8 | 0x7f : 0xffff;
			if (c->a[3])
				memset((void *)c->a[3], 0, 144); /* (the host's rusage of the child is not known here) */
			*ret = pid;
			return 1;
		}
		if (c->a[2]) {
			zv_siginfo *si = (zv_siginfo *)c->a[2];
			memset(si, 0, sizeof *si);
			si->si_signo = SIGCHLD_;
			si->si_code = code;
			si->kill.pid = pid;
			si->kill.uid = (uint32_t)zv_sys0(__NR_getuid);
			memcpy(si->bytes + 8, &sig, 4); /* si_status */
		}
		*ret = 0;
		return 1;
	}
	return 0;
}

static int any_job(void)
{
	for (int i = 0; i < JOBS; i++)
		if (__atomic_load_n(&jobs[i].word, __ATOMIC_ACQUIRE) > 1)
			return 1;
	return 0;
}

/* A saved stop or continue wait w reports (report), if any child has one:
 * the caller's group asked for only then. */
static int report_saved(struct zv_call *c, struct jobwait *w, long *ret)
{
	if (!any_job())
		return 0;
	if (w->pid == 0 && !w->pgid)
		w->pgid = zv_sys1(__NR_getpgid, 0); /* (the caller's group) */
	return report(c, w, ret);
}

long zv_pt_job_wait(struct zv_call *c, long (*next)(struct zv_call *))
{
	const long *a = c->a;
	struct jobwait w = { 0 };
	if (c->nr == __NR_wait4) {
		w.pid = (int)a[0] < -1 ? 0 : (int)a[0];
		w.pgid = (int)a[0] < -1 ? -(int)a[0] : 0;
		w.options = (int)a[2];
	} else {
		w.waitid = 1;
		w.options = (int)a[3];
		if ((a[0] != P_ALL && a[0] != P_PID && a[0] != P_PGID) || (a[0] == P_PID && (int)a[1] <= 0) ||
		    !(w.options & (WEXITED | WUNTRACED | WCONTINUED)))
			return next(c); /* (P_PIDFD, or the host's EINVAL) */
		w.pid = a[0] == P_ALL ? -1 : a[0] == P_PID ? (int)a[1] : 0;
		w.pgid = a[0] == P_PGID ? (int)a[1] : 0;
	}
	if (!(w.options & (WUNTRACED | WCONTINUED)) || ((w.options & WCLONE_) && !(w.options & WALL_)))
		return next(c);
	long r;
	if (report_saved(c, &w, &r))
		return r;
	int me = zv_current()->htid;
	if (!(w.options & WNOHANG))
		waiter = me;
	r = next(c);
	if (waiter == me)
		waiter = 0;
	/* (a word that came during the wait interrupted it) */
	long j;
	if (r == -EINTR && report_saved(c, &w, &j))
		return j;
	return r;
}
