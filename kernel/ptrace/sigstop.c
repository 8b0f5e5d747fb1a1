/* SIGSTOP sent to a tracee by a process that is not its tracer (a shell's
 * kill -STOP of its traced child, a third process's of a process strace -p
 * follows): the host would stop the tracee for real, unseen by its tracer,
 * where natively the tracer sees a signal-delivery stop first. A process
 * that maps a ptrace area is asked with a queued SIGSYS instead; its kernel
 * makes the stop, or stops for real when no thread of it is traced. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "sys/calls.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/procfs.h"
#include <linux/fcntl.h>

#define SI_TKILL (-6)

/* Whether host process hpid maps a ptrace area: a tracee's (or its fork
 * child's, not joined yet) or a tracer's, of its tracees. */
static int maps_area(int hpid)
{
	static const char name[] = "/memfd:zvisor-ptrace (deleted)\n";
	char path[40], b[4096];
	zv_snprintf(path, sizeof path, "/proc/%d/maps", hpid);
	long fd = zv_openat(-100, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	size_t keep = 0;
	int found = 0;
	for (;;) {
		long n = zv_read((int)fd, b + keep, sizeof b - 1 - keep);
		if (n <= 0)
			break;
		size_t len = keep + (size_t)n;
		b[len] = 0;
		for (size_t i = 0; !found && i + sizeof name - 1 <= len; i++)
			found = b[i] == '/' && !memcmp(b + i, name, sizeof name - 1);
		if (found)
			break;
		keep = len < sizeof name - 1 ? len : sizeof name - 1; /* a name across two reads */
		memmove(b, b + len - keep, keep);
	}
	zv_close((int)fd);
	return found;
}

int zv_pt_stop_other(struct zv_thread *t, long nr, int pid, int tid, long *ret)
{
	int hpid = nr == __NR_tkill ? (int)zv_procfs_status_field(tid, "Tgid", 0) : pid;
	if (hpid <= 0 || hpid == (int)zv_getpid() || !maps_area(hpid))
		return 0;
	if (tid && (*ret = zv_sys3(__NR_tgkill, hpid, tid, 0)) < 0)
		return 1; /* (no such thread there, or not allowed) */
	zv_siginfo q = { .si_signo = 31, .si_code = -1 /* SI_QUEUE: the host refuses others from outside */ };
	q.kill.pid = t->pid;
	q.kill.uid = (uint32_t)zv_sys0(__NR_getuid);
	uint64_t v = (ZV_PT_SIG_MAGIC << 40) | ((uint64_t)ZV_PT_SIG_STOP << 32) |
		     (uint32_t)(nr == __NR_kill ? 0 /* SI_USER */ : SI_TKILL);
	memcpy(q.bytes + 8, &v, 8);
	memcpy(q.bytes + 16, &tid, 4);
	/* To the process, naming the thread: one queued to the thread
	 * would be dropped by the host while a SIGSYS is pending there, as
	 * a call's trap is on sud and seccomp; the process's queue holds no
	 * trap, and the thread that takes it passes it on in memory. */
	*ret = zv_sys3(__NR_rt_sigqueueinfo, hpid, 31, &q);
	return 1;
}

/* The slot of traced thread htid of this process (any, when 0), or NULL:
 * read without a lock, as a signal handler may. */
static struct zv_pt_slot *traced_slot(int htid)
{
	struct zv_pt_area *a = zv_pt_me.area;
	int me = (int)zv_getpid();
	for (int i = 0; a && i < a->nslots; i++) {
		struct zv_pt_slot *s = zv_pt_slot_at(a, i);
		if (s->tid > 0 && s->hpid == me && (!htid || s->htid == htid) &&
		    __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) < ZV_PT_EXITED)
			return s;
	}
	return NULL;
}

/* The stop asked in traced thread s's slot, then its wake (t's own: on
 * its way out). Another thread's wake may be dropped as the sender's
 * was; it looks at its slot at every call (layer.c want_due). */
static void ask(struct zv_thread *t, struct zv_pt_slot *s, int code, const zv_siginfo *si, struct zv_ucontext *uc)
{
	s->stop_code = code;
	s->stop_pid = si->kill.pid;
	s->stop_uid = si->kill.uid;
	__atomic_or_fetch(&s->want, ZV_PT_WANT_STOP_FROM, __ATOMIC_SEQ_CST);
	if (s == t->pt.slot)
		zv_kwork_request(t, uc);
	else
		zv_pt_wake_htid(s->htid);
}

void zv_pt_stop_arrived(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc)
{
	uint64_t v;
	int tid;
	memcpy(&v, si->bytes + 8, 8);
	memcpy(&tid, si->bytes + 16, 4);
	int code = (int)(uint32_t)v;
	/* a fork child before its set-up (its slot is its parent's), or
	 * joining its tracer: its own, for its first stop (pt_fork_child) */
	int child = t->forking && (int)zv_getpid() != t->forking;
	struct zv_pt_slot *s = child ? NULL : !tid || tid == t->htid ? t->pt.slot : traced_slot(tid);
	if (s) {
		ask(t, s, code, si, uc);
		return;
	}
	if (child || zv_pt_me.joining) {
		zv_pt_me.held = (struct zv_pt_held_stop){ code, si->kill.pid, si->kill.uid, 1 };
		return;
	}
	s = code == SI_TKILL ? NULL : traced_slot(0);
	if (s) { /* the process's: one of its traced threads takes it */
		ask(t, s, code, si, uc);
		return;
	}
	zv_sys2(__NR_kill, zv_getpid(), SIGSTOP_); /* not traced: the host's stop */
}

void zv_pt_stop_post(struct zv_thread *t, int code, int pid, uint32_t uid)
{
	zv_siginfo si = { .si_signo = SIGSTOP_, .si_code = code };
	si.kill.pid = pid;
	si.kill.uid = uid;
	zv_signal_post(t, &si);
}
