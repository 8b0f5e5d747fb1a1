/* Becoming a tracee or a tracer: the rendezvous over the peer channel and
 * the host's rules. TRACEME and an auto-attached child or a new image
 * join their tracer (the tracee asks, sending its area; the tracer answers
 * with its bell); ATTACH and SEIZE go the other way (the tracer asks,
 * sending its bell; the tracee answers with its area and a slot). Only a
 * zvisor-hosted process of this same zvisor image can be asked: the ask
 * is a SIGSYS. One tracer per traced process. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "peer/peer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/procfs.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>

struct join_req {
	struct zv_peer_hdr h;
	int reason, pid, tid, htid, hpid, slot, parent;
};
struct join_ans {
	int err, tracer_pid, seized;
	uint32_t options;
};
struct attach_req {
	struct zv_peer_hdr h;
	int tid, seize, tracer_pid, may, interrupt;
	uint64_t options;
};
struct attach_ans {
	int err, slot, pid, htid, hpid, same_area;
};

static int parent_of(int pid)
{
	return (int)zv_procfs_status_field(pid, "PPid", 0);
}

static int yama_scope(void)
{
	char b[8] = "";
	long fd = zv_openat(-100, "/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	long n = zv_read((int)fd, b, sizeof b - 1);
	zv_close((int)fd);
	return n > 0 ? b[0] - '0' : 0;
}

static int has_cap_ptrace(void)
{
	char buf[2048];
	long err;
	const char *q = zv_procfs_status_line(0, "CapEff", buf, sizeof buf, &err);
	if (!q)
		return 0;
	while (*q == ' ' || *q == '\t')
		q++;
	const char *e;
	return (zv_parse_hex(q, &e) >> 19) & 1; /* CAP_SYS_PTRACE */
}

/* The host's rules for attaching to hpid (its thread htid): the same user
 * (every uid and gid of it the caller's real ones) or CAP_SYS_PTRACE, and
 * Yama's ptrace_scope. Returns 0, or 1 when the tracee must also allow
 * it (Yama 1 without ancestry: PR_SET_PTRACER), or -EPERM. */
int zv_pt_may_attach(int hpid, int htid)
{
	int cap = has_cap_ptrace();
	uint32_t uid = (uint32_t)zv_sys0(__NR_getuid), gid = (uint32_t)zv_sys0(__NR_getgid);
	if (!cap) {
		for (int i = 0; i < 4; i++)
			if (zv_procfs_status_field(htid, "Uid", i) != uid || zv_procfs_status_field(htid, "Gid", i) != gid)
				return -EPERM;
	}
	int scope = yama_scope();
	if (scope == 3 || (scope == 2 && !cap))
		return -EPERM;
	if (scope == 1 && !cap) {
		for (int p = hpid, n = 0; p > 1 && n < 4096; p = parent_of(p), n++)
			if (p == zv_proc.hpid)
				return 0;
		return 1;
	}
	return 0;
}

static void *map_fd(int fd, size_t size)
{
	void *m = zv_kmap(size, 4096, fd);
	zv_close(fd);
	return zv_is_err((long)m) ? NULL : m;
}

/* The tracee's side of TRACEME, a child's and a new image's join. */
long zv_pt_join(struct zv_thread *t, int reason, int parent)
{
	int tracer = reason == ZV_PT_JOIN_TRACEME ? (int)zv_sys0(__NR_getppid) : zv_pt_me.tracer_hpid;
	if (reason == ZV_PT_JOIN_TRACEME && zv_peer_hosted(tracer) != 1)
		return -EPERM; /* a parent outside zvisor cannot be emulated a tracer */
	int afd = -1;
	if (!zv_pt_me.area && zv_pt_area_new(&afd) < 0)
		return -ENOMEM;
	struct zv_pt_slot *s = zv_pt_slot_take(t);
	if (!s) {
		if (afd >= 0)
			zv_close(afd);
		return -EPERM;
	}
	struct join_req q = { .reason = reason, .pid = t->pid, .tid = t->tid, .htid = t->htid,
			      .hpid = (int)zv_getpid(), .parent = parent };
	q.slot = (int)(((char *)s - (char *)zv_pt_me.area) / ZV_PT_SLOT_BYTES) - 1;
	struct join_ans a = { .err = -EPERM };
	int bfd = -1, nb = 0;
	long fd = zv_peer_open(tracer, 5000);
	long r = fd < 0 ? fd
			: zv_peer_request((int)fd, ZV_PEER_PTRACE_JOIN, &q, sizeof q, &afd, afd >= 0, &a, sizeof a,
					  &bfd, 1, &nb);
	if (fd >= 0)
		zv_close((int)fd);
	if (afd >= 0)
		zv_close(afd);
	struct zv_pt_bell *b = nb && r == (long)sizeof a && !a.err ? map_fd(bfd, ZV_PT_BELL_BYTES)
							    : (nb ? (zv_close(bfd), NULL) : NULL);
	if (!b && !(r == (long)sizeof a && !a.err && zv_pt_me.bell)) {
		__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
		return r < 0 || r != (long)sizeof a ? -EPERM : a.err ? a.err : -EPERM;
	}
	if (b)
		zv_pt_me.bell = b;
	zv_pt_me.tracer_hpid = tracer;
	zv_pt_me.tracer_pid = a.tracer_pid;
	s->options = a.options;
	s->seized = a.seized;
	zv_pt_traced(t, s, a.tracer_pid);
	t->pt.dr6 = 0xffff0ff0UL;
	return 0;
}

/* A vfork child shares its parent's memory, zv_pt_me too, and its parent
 * (the tracer) waits in vfork, not answering a join until the child execs
 * or exits: the child's TRACEME is noted in its own block and its new
 * image joins (ptrace/layer.c pt_encode), as gdb's and posix_spawn's
 * children TRACEME then exec. So its stops begin at the exec's SIGTRAP. */
long zv_pt_traceme(struct zv_thread *t)
{
	if (t->pt.slot || t->pt.traceme)
		return -EPERM;
	if (t->vfork_child) {
		if (zv_peer_hosted((int)zv_sys0(__NR_getppid)) != 1)
			return -EPERM;
		t->pt.traceme = 1;
		return 0;
	}
	if (zv_pt_me.traced && zv_pt_me.tracer_hpid != zv_sys0(__NR_getppid))
		return -EPERM;
	return zv_pt_join(t, ZV_PT_JOIN_TRACEME, 0);
}

/* The tracer's side of a join: the tracee is its child (TRACEME), a
 * child a tracee announced, or a tracee's new image. */
static void serve_join(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds)
{
	(void)t;
	const struct join_req *q = msg;
	struct join_ans a = { .err = -EPERM, .tracer_pid = zv_proc.pid };
	struct zv_pt_area *area = NULL;
	int peer = zv_peer_pid(fd);
	if (n < sizeof *q || peer != q->hpid || q->slot < 0 || q->slot >= ZV_PT_SLOTS)
		goto out;
	/* the process it was (exec: the exec'ing thread), or its parent (a child) */
	struct zv_pt_tracee_ref *old = q->reason == ZV_PT_JOIN_EXEC ? zv_pt_find(q->parent) : NULL, *from = old;
	for (int i = 0; i < zv_pt_tracer.n && !from; i++)
		if (zv_pt_tracer.tr[i].hpid == (q->reason == ZV_PT_JOIN_CHILD ? q->parent : q->hpid) &&
		    zv_pt_tracer.tr[i].s)
			from = &zv_pt_tracer.tr[i];
	if (q->reason == ZV_PT_JOIN_EXEC && !old)
		old = from;
	if (q->reason == ZV_PT_JOIN_TRACEME && parent_of(q->hpid) != zv_proc.hpid)
		goto out;
	/* a child its parent's fork event announced: the parent may have
	 * ended since (and the child gone to another parent) */
	const struct zv_pt_expect *e = q->reason != ZV_PT_JOIN_TRACEME ? zv_pt_expected_one(q->pid) : NULL;
	if (q->reason == ZV_PT_JOIN_CHILD && !e && (!from || parent_of(q->hpid) != q->parent))
		goto out;
	if (q->reason == ZV_PT_JOIN_EXEC && !old && !e)
		goto out;
	a.options = from ? from->s->options : e ? e->options : 0;
	a.seized = from ? from->s->seized : e ? e->seized : 0;
	if (q->reason == ZV_PT_JOIN_EXEC) /* the old image's threads are gone with it */
		for (int i = zv_pt_tracer.n - 1; i >= 0; i--)
			if (zv_pt_tracer.tr[i].hpid == q->hpid)
				zv_pt_drop(&zv_pt_tracer.tr[i]);
	if (nfds > 0) {
		area = map_fd(fds[0], ZV_PT_AREA_BYTES);
		nfds = 0;
		if (area)
			zv_pt_area_keep(q->hpid, area);
	} else {
		area = zv_pt_area_of(q->hpid);
	}
	if (!area || area->magic != ZV_PT_MAGIC)
		goto out;
	struct zv_pt_slot *s = zv_pt_slot_at(area, q->slot);
	if (s->tid != q->tid)
		goto out;
	long bfd = zv_pt_bell_fd();
	if (bfd < 0 || !zv_pt_add(q->tid, q->pid, q->htid, q->hpid, s, area)) {
		a.err = -ENOMEM;
		goto out;
	}
	s->options = a.options;
	s->seized = a.seized;
	a.err = 0;
	zv_peer_send(fd, &a, sizeof a, (int *)&bfd, 1);
	zv_close(fd);
	return;
out:
	for (int i = 0; i < nfds; i++)
		zv_close(fds[i]);
	zv_peer_send(fd, &a, sizeof a, NULL, 0);
	zv_close(fd);
}

/* The tracer's side of ATTACH and SEIZE once the tracee connected. */
static long finish_attach(int fd, int tid, int seize, uint64_t options, int may, int interrupt)
{
	struct attach_req q = { .tid = tid, .seize = seize, .tracer_pid = zv_proc.pid, .may = may, .options = options,
				.interrupt = interrupt };
	struct attach_ans a = { .err = -EPERM };
	long bfd = zv_pt_bell_fd();
	int afd = -1, na = 0;
	long r = bfd < 0 ? bfd
			 : zv_peer_request(fd, ZV_PEER_PTRACE_ATTACH, &q, sizeof q, (int *)&bfd, 1, &a, sizeof a, &afd, 1,
					   &na);
	zv_close(fd);
	if (r != (long)sizeof a || a.err) {
		if (na)
			zv_close(afd);
		return r < 0 || r != (long)sizeof a ? -EPERM : a.err;
	}
	struct zv_pt_area *area = na ? map_fd(afd, ZV_PT_AREA_BYTES) : zv_pt_area_of(a.hpid);
	if (!area)
		return -EPERM;
	if (na)
		zv_pt_area_keep(a.hpid, area);
	struct zv_pt_slot *s = zv_pt_slot_at(area, a.slot);
	struct zv_pt_tracee_ref *ref = zv_pt_add(tid, a.pid, a.htid, a.hpid, s, area);
	if (!ref)
		return -ENOMEM;
	return 0;
}

long zv_pt_attach(struct zv_thread *t, int tid, int seize, uint64_t options)
{
	(void)t;
	struct zv_pt_tracee_ref *have = zv_pt_find(tid);
	if (have && !have->pending)
		return -EPERM;
	long tgid = zv_procfs_status_field(tid, "Tgid", 0);
	if (tgid < 0 || tid <= 0)
		return -ESRCH;
	if (tgid == zv_proc.hpid)
		return -EPERM; /* its own thread group */
	int hosted = zv_peer_hosted((int)tgid);
	if (hosted < 0)
		return hosted == -ESRCH ? -ESRCH : -EPERM;
	if (!hosted)
		return -EPERM; /* outside zvisor: see docs/DESIGN.md */
	int may = zv_pt_may_attach((int)tgid, tid);
	if (may < 0)
		return may;
	struct zv_peer_wait w;
	long r = zv_peer_knock((int)tgid, &w);
	if (r < 0)
		return r == -ESRCH ? -ESRCH : -EPERM;
	/* A tracee stopped on the host could not answer. SEIZE (strace stops
	 * its child, seizes it, then sends SIGCONT): the attach completes once
	 * it runs. ATTACH (LTP's ptrace08, 10 stop their child, attach, and
	 * use it at once): natively its stop becomes a ptrace stop at once;
	 * here it is continued to answer, and stops again at the SIGSTOP the
	 * attach sends, which the tracer's next request waits for. */
	char st[256];
	const char *f = zv_procfs_stat_fields(tid, st, sizeof st);
	int host_stopped = f && *f == 'T';
	if (host_stopped && !seize)
		zv_sys2(__NR_kill, tgid, 18 /* SIGCONT */);
	else if (host_stopped) {
		struct zv_pt_tracee_ref *ref = zv_pt_add(tid, (int)tgid, tid, (int)tgid, NULL, NULL);
		if (!ref) {
			zv_peer_cancel(&w);
			return -ENOMEM;
		}
		ref->pending = 1;
		ref->listener = w.listener;
		ref->lslot = w.slot;
		ref->seize = seize;
		ref->options = options;
		return 0;
	}
	long fd = zv_peer_await(&w, 5000);
	if (fd < 0)
		return -EPERM;
	r = finish_attach((int)fd, tid, seize, options, may, 0);
	struct zv_pt_tracee_ref *ref = r == 0 && host_stopped ? zv_pt_find(tid) : NULL;
	if (ref)
		ref->stop_coming = 1;
	return r;
}

/* A pending attach: the tracee answers now (within ms). */
long zv_pt_complete(struct zv_pt_tracee_ref *r, int ms)
{
	struct zv_peer_wait w = { r->listener, r->lslot, r->hpid };
	long fd = zv_peer_accept(&w, ms);
	if (fd == -EAGAIN)
		return -EAGAIN;
	int tid = r->tid, seize = r->seize, interrupt = r->interrupt;
	uint64_t options = r->options;
	r->listener = -1;
	zv_pt_drop(r);
	if (fd < 0)
		return fd;
	return finish_attach((int)fd, tid, seize, options, 0, interrupt);
}

/* The tracee's side of ATTACH and SEIZE. */
static void serve_attach(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds)
{
	const struct attach_req *q = msg;
	struct attach_ans a = { .err = -EPERM };
	int peer = zv_peer_pid(fd), afd = -1;
	struct zv_thread *x = n >= sizeof *q ? zv_thread_find(q->tid) : NULL;
	if (!x) {
		a.err = -ESRCH;
		goto out;
	}
	if (x->pt.slot || (zv_pt_me.traced && zv_pt_me.tracer_hpid != peer))
		goto out;
	if (q->may == 1 && zv_pt_me.ptracer != peer && zv_pt_me.ptracer != -1)
		goto out; /* Yama: neither its ancestor nor named by PR_SET_PTRACER */
	if (!zv_sys1(__NR_prctl, 3 /* PR_GET_DUMPABLE */) && !has_cap_ptrace())
		goto out;
	struct zv_pt_bell *b = NULL;
	if (nfds > 0 && (!zv_pt_me.bell || zv_pt_me.tracer_hpid != peer)) {
		b = map_fd(fds[0], ZV_PT_BELL_BYTES);
		if (!b)
			goto out;
	} else if (nfds > 0) {
		zv_close(fds[0]);
	}
	nfds = 0;
	a.same_area = zv_pt_me.area != NULL;
	if (!zv_pt_me.area && zv_pt_area_new(&afd) < 0) {
		a.err = -ENOMEM;
		goto out;
	}
	struct zv_pt_slot *s = zv_pt_slot_take(x);
	if (!s)
		goto out;
	if (b)
		zv_pt_me.bell = b;
	zv_pt_me.tracer_hpid = peer;
	zv_pt_me.tracer_pid = q->tracer_pid;
	s->options = (uint32_t)q->options;
	s->seized = q->seize;
	zv_pt_traced(x, s, q->tracer_pid);
	x->pt.dr6 = 0xffff0ff0UL;
	a = (struct attach_ans){ 0, (int)(((char *)s - (char *)zv_pt_me.area) / ZV_PT_SLOT_BYTES) - 1, x->pid, x->htid,
				 (int)zv_getpid(), afd < 0 };
	zv_peer_send(fd, &a, sizeof a, &afd, afd >= 0);
	if (afd >= 0)
		zv_close(afd);
	zv_close(fd);
	if (q->interrupt) { /* PTRACE_INTERRUPT came before this answer */
		__atomic_or_fetch(&x->pt.want, ZV_PT_WANT_INTERRUPT, __ATOMIC_ACQ_REL);
		if (x == t) {
			t->kwork = 1;
			t->fast.sig_pending = 1;
		} else {
			zv_pt_wake_thread(x, 0);
		}
	}
	if (!q->seize) { /* ATTACH sends SIGSTOP */
		if (x == t) {
			zv_siginfo si = { .si_signo = SIGSTOP_, .si_code = 0x80 /* SI_KERNEL */ };
			zv_signal_post(t, &si);
		} else {
			zv_pt_wake_thread(x, ZV_PT_WANT_SIGSTOP);
		}
	}
	return;
out:
	for (int i = 0; i < nfds; i++)
		zv_close(fds[i]);
	if (afd >= 0)
		zv_close(afd);
	zv_peer_send(fd, &a, sizeof a, NULL, 0);
	zv_close(fd);
}

/* The peer services: a join, at the tracer; an attach, at the tracee. */
ZV_PEER_SERVICE(ptrace_join, ZV_PEER_PTRACE_JOIN, serve_join);
ZV_PEER_SERVICE(ptrace_attach, ZV_PEER_PTRACE_ATTACH, serve_attach);
