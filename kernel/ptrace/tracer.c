/* This process as a tracer: its tracees (one entry per traced thread,
 * with the slot it stops in), its bell, and the commands it sends a
 * stopped tracee. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "ptrace/ptrace.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include "lib/fmt.h"
#include "lib/procfs.h"

struct zv_pt_tracer zv_pt_tracer = { .bell_fd = -1 };

/* Tracees, or a child announced and not joined yet: its tracer's waits
 * must go on past the end of every tracee it knows (strace -f of a parent
 * that exits before its fork child runs). */
int zv_pt_tracing(void)
{
	return zv_pt_tracer.n > 0 || zv_pt_expected(0);
}

struct zv_pt_tracee_ref *zv_pt_find(int tid)
{
	for (int i = 0; i < zv_pt_tracer.n; i++)
		if (zv_pt_tracer.tr[i].tid == tid)
			return &zv_pt_tracer.tr[i];
	return NULL;
}

/* Whether a stop queues the tracer a SIGCHLD: its guest handles it.
 * Set when the bell is made, at each wait, and at each change of
 * SIGCHLD's action (natively the SIGCHLD of a stop comes at once to a
 * handler installed after the last wait). */
void zv_pt_bell_handles(struct zv_thread *t)
{
	struct zv_pt_bell *b = zv_pt_tracer.bell;
	int notify = t->sighand->act[SIGCHLD_].handler > 1;
	if (b && b->notify != notify)
		b->notify = notify;
}

static void tracing_changed(void)
{
	int on = zv_pt_tracing() || zv_pt_me.traced;
	if (zv_proc.catch_signals != on) {
		zv_proc.catch_signals = on; /* the host's SIGCHLD must end the waits */
		zv_signals_reinstall(zv_current()->sighand);
	}
	zv_layers_fold();
}

struct zv_pt_tracee_ref *zv_pt_add(int tid, int pid, int htid, int hpid, struct zv_pt_slot *s, struct zv_pt_area *a)
{
	if (!zv_pt_tracer.tr) {
		void *m = zv_kmap(ZV_PT_MAX_TRACEES * sizeof(struct zv_pt_tracee_ref), 4096, -1);
		if (zv_is_err((long)m))
			return NULL;
		zv_pt_tracer.tr = m;
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_PTRACE); /* a tracer's exec keeps to the host's too */
	}
	struct zv_pt_tracee_ref *r = zv_pt_find(tid);
	if (!r) {
		if (zv_pt_tracer.n == ZV_PT_MAX_TRACEES)
			return NULL;
		r = &zv_pt_tracer.tr[zv_pt_tracer.n++];
	}
	*r = (struct zv_pt_tracee_ref){ .tid = tid, .pid = pid, .htid = htid, .hpid = hpid, .s = s, .area = a,
					.listener = -1 };
	for (int i = 0; i < 16; i++) /* an announced child that came */
		if (zv_pt_tracer.expect[i].pid == tid)
			zv_pt_tracer.expect[i].pid = 0;
	/* one of this process's children on the host: its exit comes from the host's wait */
	char buf[512];
	const char *f = zv_procfs_stat_fields(hpid, buf, sizeof buf);
	if (f && f[1] == ' ') {
		const char *e;
		r->host_child = (int)zv_parse_dec(f + 2, &e) == zv_proc.hpid;
	}
	tracing_changed();
	return r;
}

void zv_pt_drop(struct zv_pt_tracee_ref *r)
{
	if (r->listener >= 0)
		zv_close(r->listener);
	if (r->s && __atomic_load_n(&r->s->tid, __ATOMIC_ACQUIRE) == r->tid)
		__atomic_store_n(&r->s->dropped, 1, __ATOMIC_RELEASE); /* not found again by a scan */
	/* an ended thread's slot is free again (a detached one frees its own) */
	if (r->s && __atomic_load_n(&r->s->tid, __ATOMIC_ACQUIRE) == r->tid &&
	    __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) != ZV_PT_STOPPED &&
	    __atomic_load_n(&r->s->state, __ATOMIC_ACQUIRE) != ZV_PT_RUNNING) {
		__atomic_store_n(&r->s->tid, 0, __ATOMIC_RELEASE);
		zv_pt_futex_wake((volatile uint32_t *)&r->s->tid); /* its end was seen (ptrace/layer.c pt_exit) */
	}
	int i = (int)(r - zv_pt_tracer.tr);
	zv_pt_tracer.tr[i] = zv_pt_tracer.tr[--zv_pt_tracer.n];
	if (!zv_pt_tracer.n)
		tracing_changed();
}

/* The bell every tracee rings: made at the first attach, its fd kept only
 * while a rendezvous passes it (a dup each time). */
long zv_pt_bell_fd(void)
{
	if (zv_pt_tracer.bell_fd < 0) {
		long fd = zv_sys2(__NR_memfd_create, "zvisor-ptrace-bell", 1 /* MFD_CLOEXEC */);
		if (fd < 0)
			return fd;
		long r = zv_sys2(__NR_ftruncate, fd, ZV_PT_BELL_BYTES);
		struct zv_pt_bell *b = r < 0 ? (void *)r : zv_kmap(ZV_PT_BELL_BYTES, 4096, (int)fd);
		if (zv_is_err((long)b)) {
			zv_close((int)fd);
			return (long)b;
		}
		b->magic = ZV_PT_MAGIC;
		b->tracer_hpid = (int)zv_getpid();
		b->tracer_pid = zv_proc.pid;
		/* a tracee may join, and stop, after the tracer's last wait,
		 * which then sleeps for its SIGCHLD */
		zv_pt_tracer.bell = b;
		zv_pt_bell_handles(zv_current());
		zv_pt_tracer.bell_fd = zv_hide_fd((int)fd);
		zv_sys3(__NR_fcntl, zv_pt_tracer.bell_fd, 2 /* F_SETFD */, 1 /* FD_CLOEXEC */);
	}
	return zv_pt_tracer.bell_fd;
}

/* Slots a tracee's area gained since it was looked at: threads and
 * CLONE_VM children it auto-attached (PTRACE_O_TRACECLONE). */
void zv_pt_scan_areas(void)
{
	for (int i = 0; i < zv_pt_tracer.n; i++) {
		struct zv_pt_area *a = zv_pt_tracer.tr[i].area;
		if (!a || zv_pt_tracer.tr[i].pending)
			continue;
		int n = __atomic_load_n(&a->nslots, __ATOMIC_ACQUIRE);
		for (int k = 0; k < n; k++) {
			struct zv_pt_slot *s = zv_pt_slot_at(a, k);
			int tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
			if (tid > 0 && !zv_pt_find(tid) && s->tracer_pid == zv_proc.pid && !s->dropped &&
			    __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != ZV_PT_GONE) {
				zv_pt_add(tid, s->pid, s->htid, s->hpid, s, a); /* its first stop is news */
			}
		}
	}
}

/* Whether host thread htid of process hpid still runs (a zombie does not:
 * a stopped tracee that a SIGKILL ended leaves its slot stopped). */
int zv_pt_alive(int hpid, int htid)
{
	char path[64], buf[256];
	zv_snprintf(path, sizeof path, "/proc/%d/task/%d/stat", hpid, htid);
	long fd = zv_openat(-100, path, 0 | 02000000 /* O_CLOEXEC */, 0);
	if (fd < 0)
		return fd != -ENOENT && fd != -ESRCH;
	long n = zv_read((int)fd, buf, sizeof buf - 1);
	zv_close((int)fd);
	if (n <= 0)
		return 0;
	const char *p = buf + n;
	while (p > buf && *p != ')')
		p--;
	return !(*p == ')' && (p[2] == 'Z' || p[2] == 'X'));
}

/* A command to a stopped tracee, answered by it: its result. */
long zv_pt_cmd(struct zv_pt_tracee_ref *r, int cmd, uint64_t a0, uint64_t a1)
{
	struct zv_pt_slot *s = r->s;
	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != ZV_PT_STOPPED)
		return -ESRCH;
	s->cmd = cmd;
	s->arg[0] = a0;
	s->arg[1] = a1;
	uint32_t seq = __atomic_add_fetch(&s->cmd_seq, 1, __ATOMIC_SEQ_CST);
	zv_pt_wake_sleepers(&s->cmd_seq, &s->sleeping);
	for (;;) {
		uint32_t ans = __atomic_load_n(&s->ans_seq, __ATOMIC_ACQUIRE);
		if (ans == seq)
			return s->ret;
		long w = zv_pt_futex_wait(&s->ans_seq, ans, 1000);
		if (w == -ETIMEDOUT && (!zv_pt_alive(r->hpid, r->htid) ||
					__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != ZV_PT_STOPPED))
			return -ESRCH;
	}
}

/* Children a tracee's fork event announced (GETEVENTMSG): their join
 * comes, with the options they inherit (their parent may be gone by then,
 * its end reaped: natively the child was attached at the fork). */
void zv_pt_expect(int pid, const struct zv_pt_slot *parent)
{
	struct zv_pt_expect *e = &zv_pt_tracer.expect[pid & 15];
	for (int i = 0; i < 16; i++)
		if (!zv_pt_tracer.expect[i].pid || zv_pt_tracer.expect[i].pid == pid) {
			e = &zv_pt_tracer.expect[i];
			break;
		}
	*e = (struct zv_pt_expect){ .pid = pid, .seized = parent->seized, .options = parent->options };
}

const struct zv_pt_expect *zv_pt_expected_one(int pid)
{
	for (int i = 0; i < 16; i++) {
		struct zv_pt_expect *e = &zv_pt_tracer.expect[i];
		if (e->pid && zv_sys2(__NR_kill, e->pid, 0) == -ESRCH)
			e->pid = 0; /* it died before it could join */
		if (e->pid && (pid <= 0 || e->pid == pid))
			return e;
	}
	return NULL;
}

int zv_pt_expected(int pid)
{
	return zv_pt_expected_one(pid) != NULL;
}

/* The areas of the processes traced, kept mapped while they live: a
 * thread attached later uses the same. */
struct zv_pt_area *zv_pt_area_of(int hpid)
{
	for (int i = 0; i < 64; i++)
		if (zv_pt_tracer.areas[i].a && zv_pt_tracer.areas[i].hpid == hpid)
			return zv_pt_tracer.areas[i].a;
	return NULL;
}

void zv_pt_area_gone(int hpid)
{
	for (int i = 0; i < 64; i++)
		if (zv_pt_tracer.areas[i].a && zv_pt_tracer.areas[i].hpid == hpid) {
			zv_kunmap(zv_pt_tracer.areas[i].a, ZV_PT_AREA_BYTES);
			zv_pt_tracer.areas[i].a = NULL;
		}
}

void zv_pt_area_keep(int hpid, struct zv_pt_area *a)
{
	zv_pt_area_gone(hpid);
	for (int i = 0; i < 64; i++)
		if (!zv_pt_tracer.areas[i].a) {
			zv_pt_tracer.areas[i].hpid = hpid;
			zv_pt_tracer.areas[i].a = a;
			return;
		}
	/* full: the oldest goes (its tracees, if any, keep their mapping) */
	zv_pt_tracer.areas[hpid & 63].hpid = hpid;
	zv_pt_tracer.areas[hpid & 63].a = a;
}
