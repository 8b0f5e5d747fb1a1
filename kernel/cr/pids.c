/* A restored program keeps the ids it saw: getpid and gettid are answered
 * from the kernel's memory, and the host knows the process by new ids. A
 * table made at restore (zv_cr.ids) pairs each id the program knows with
 * the host's: the other processes of its tree, its parent (the restorer's
 * parent stands for the saved one), process groups and sessions (a group
 * whose leader is gone is the host group one of its members made). This
 * layer, on only after a restore, translates the ids in the calls that
 * name processes, groups or sessions (the pid and ids columns of
 * sys/sysent.h) and in what they return; sys/signal.c shows the sender of
 * a signal by its id too. SysV shared memory segments made again have
 * new ids: the table pairs those too (cr/shmobj.c), for shmget, shmat and
 * shmctl. An id the table lacks passes unchanged: a process or segment
 * made after the restore is known by its host id. getdents of /proc and
 * task directories: cr/piddents.c. */
#include "zvisor.h"
#include "cr/cr.h"
#include "sys/layer.h"
#include "sys/calls.h"
#include "lib/kmem.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/execstate.h"
#include <asm/unistd_64.h>
#include <asm/ipcbuf.h>
#include <asm/shmbuf.h>

#define TIOCGPGRP_ 0x540f
#define TIOCSPGRP_ 0x5410
#define TIOCGSID_ 0x5429

/* The table's entry of id x, seen from the guest (guest) or the host, of
 * processes (group 0) or of groups and sessions (group 1); NULL. */
static const struct zv_cr_id *find(long x, int guest, int group)
{
	const struct zv_cr_ids *t = zv_cr.ids;
	for (uint32_t i = 0; t && i < t->n; i++)
		if ((int)t->e[i].group == group && (guest ? t->e[i].vid : t->e[i].hid) == x)
			return &t->e[i];
	return NULL;
}

long zv_cr_host_id(long x)
{
	if (!zv_cr.restored || x <= 0)
		return x;
	if (x == zv_proc.pid)
		return zv_proc.hpid;
	const struct zv_cr_id *e = find(x, 1, 0); /* the restored threads' too (cr/restore.c) */
	return e ? e->hid : x;
}

long zv_cr_guest_id(long x)
{
	if (!zv_cr.restored || x <= 0)
		return x;
	if (x == zv_proc.hpid)
		return zv_proc.pid;
	const struct zv_cr_id *e = find(x, 0, 0);
	return e ? e->vid : x;
}

long zv_cr_host_group(long x)
{
	const struct zv_cr_id *e = zv_cr.restored && x > 0 ? find(x, 1, 1) : NULL;
	return e ? e->hid : zv_cr_host_id(x);
}

long zv_cr_guest_group(long x)
{
	const struct zv_cr_id *e = zv_cr.restored && x > 0 ? find(x, 0, 1) : NULL;
	return e ? e->vid : zv_cr_guest_id(x);
}

long zv_cr_guest_ppid(long x)
{
	return zv_cr_guest_id(x);
}

long zv_cr_guest_shmid(long x)
{
	const struct zv_cr_id *e = zv_cr.restored && x >= 0 ? find(x, 0, ZV_CR_ID_SHM) : NULL;
	return e ? e->vid : x;
}

static long host_shmid(long x)
{
	const struct zv_cr_id *e = x >= 0 ? find((int)x, 1, ZV_CR_ID_SHM) : NULL;
	return e ? e->hid : x;
}

/* The creator's and last attacher's pids in a segment's description, as
 * the program knows them (the host's are new after a restore). */
static void shm_pids(uint64_t buf)
{
	struct shmid64_ds ds;
	if (zv_guest_copy(&ds, (const void *)buf, sizeof ds, buf) < 0)
		return;
	ds.shm_cpid = (int)zv_cr_guest_id(ds.shm_cpid);
	ds.shm_lpid = (int)zv_cr_guest_id(ds.shm_lpid);
	zv_guest_copy((void *)buf, &ds, sizeof ds, buf);
}

/* shmget's answer, shmat's and shmctl's segment (not an index: IPC_INFO,
 * SHM_INFO, SHM_STAT, SHM_STAT_ANY), and the pids IPC_STAT, SHM_STAT and
 * SHM_STAT_ANY answer. */
static long shm_call(struct zv_call *c)
{
	if (c->nr == __NR_shmget) {
		long r = zv_next(c);
		return r >= 0 ? zv_cr_guest_shmid(r) : r;
	}
	int cmd = (int)c->a[1] & ~0x100 /* IPC_64 */;
	long r;
	if (c->nr == __NR_shmctl && (cmd == 3 || cmd == 14 || cmd == 13 || cmd == 15)) {
		r = zv_next(c);
	} else {
		long a[6] = { host_shmid((int)c->a[0]), c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
		r = zv_next_with(c, a);
	}
	if (c->nr == __NR_shmctl && r >= 0 && (cmd == 2 || cmd == 13 || cmd == 15))
		shm_pids(c->a[2]);
	return r;
}

void zv_cr_ids_add(int vid, int hid, int group)
{
	struct zv_cr_ids *t = zv_cr.ids;
	if (!t || t->n == t->cap) {
		uint32_t cap = t ? t->cap * 2 : 64;
		struct zv_cr_ids *n = zv_kmap(sizeof *n + cap * sizeof n->e[0], 4096, -1);
		if (zv_is_err((long)n))
			return;
		n->cap = cap;
		n->n = t ? t->n : 0;
		if (t) {
			memcpy(n->e, t->e, t->n * sizeof t->e[0]);
			zv_kunmap(t, sizeof *t + t->cap * sizeof t->e[0]);
		}
		zv_cr.ids = t = n;
	}
	t->e[t->n++] = (struct zv_cr_id){ vid, hid, (uint32_t)group, 0 };
}

static int restored(void) { return zv_cr.restored; }

/* Calls whose first argument is a clock id, which names a process or
 * thread for a CPU-time clock: clock_getcpuclockid(getpid()),
 * pthread_getcpuclockid. */
static int clock_call(long nr)
{
	return nr == __NR_clock_gettime || nr == __NR_clock_getres || nr == __NR_clock_settime ||
	       nr == __NR_clock_nanosleep || nr == __NR_clock_adjtime || nr == __NR_timer_create;
}

/* A CPU-time clock's id (~pid << 3 | per-thread 4 | type) with the host's
 * pid or tid; pid 0 (the caller's own) and other clocks pass. */
static long host_clock(long x)
{
	int c = (int)x;
	if (c >= 0 || ~(c >> 3) == 0)
		return x;
	long h = zv_cr_host_id(~(c >> 3));
	return (int)(((unsigned)~h << 3) | (unsigned)(c & 7));
}

static int sees(long nr)
{
	const struct zv_sysent *row = zv_row(nr);
	return zv_cr.restored && (row->ppid || row->pid || row->ids || nr == __NR_shmget || nr == __NR_shmat ||
				  nr == __NR_shmctl || clock_call(nr) || row->path || nr == __NR_getdents64 ||
				  nr == __NR_getdents);
}

/* A number at *s (advanced past it), or -1. */
static long dec(const char **s)
{
	long x = -1;
	for (; **s >= '0' && **s <= '9' && x < 1 << 24; (*s)++)
		x = (x < 0 ? 0 : x * 10) + (**s - '0');
	return x;
}

/* /proc paths that name a process or thread by the id the program knows:
 * "/proc/ID[/task/TID]..." and "/proc/self/task/TID..." with the host's ids
 * into out (own process: /proc/self, so sys/fs.c still sees its exe), and
 * readlink of /proc/self and /proc/thread-self, which answer the program's
 * ids (*link set). The guest's path is read with zv_peek (a path not
 * starting "/proc/" costs at most six bytes): 1 rewritten, 0 unchanged. */
static int proc_path(struct zv_call *c, uint64_t gp, char *out, size_t n, int *link)
{
	static const char pfx[] = "/proc/";
	char in[256];
	size_t len = 0;
	for (; len < sizeof in; len++) {
		if (zv_peek(&in[len], gp + len, 1) < 0)
			return 0;
		if (!in[len])
			break;
		if (len < 6 && in[len] != pfx[len])
			return 0;
	}
	if (len < 6 || len == sizeof in)
		return 0;
	const char *s = in + 6;
	*link = 0;
	if (!zv_strcmp(s, "self") || !zv_strcmp(s, "thread-self")) {
		*link = 1;
		if (s[0] == 's')
			zv_snprintf(out, n, "%d", c->t->pid);
		else
			zv_snprintf(out, n, "%d/task/%d", c->t->pid, c->t->tid);
		return 1;
	}
	long pid = -1, hpid = -1; /* -1: its own, /proc/self */
	if (zv_startswith(s, "self/")) {
		s += 4;
	} else {
		pid = dec(&s);
		if (pid <= 0 || (*s && *s != '/'))
			return 0;
		hpid = pid == c->t->pid ? -1 : zv_cr_host_id(pid);
	}
	const char *rest = s;
	long tid = -1, htid = -1;
	if (zv_startswith(s, "/task/")) {
		const char *u = s + 6;
		if ((tid = dec(&u)) > 0 && (!*u || *u == '/')) {
			htid = zv_cr_host_id(tid);
			rest = u;
		} else {
			tid = -1;
		}
	}
	if (hpid == pid && htid == tid)
		return 0;
	if (hpid < 0 && !*rest) /* /proc/PID itself is no link: not /proc/self */
		hpid = zv_proc.hpid;
	int k = hpid < 0 ? zv_snprintf(out, n, "/proc/self") : zv_snprintf(out, n, "/proc/%ld", hpid);
	if (tid > 0)
		k += zv_snprintf(out + k, n - (size_t)k, "/task/%ld", htid);
	if ((size_t)k + zv_strlen(rest) + 1 > n)
		return 0;
	zv_strlcpy(out + k, rest, n - (size_t)k);
	return 1;
}

static long path_call(struct zv_call *c, const struct zv_sysent *row)
{
	int pi = zv_arg_index(row->path), link;
	char buf[300];
	if (pi < 0 || !c->a[pi] || zv_bad_guest_ptr((uint64_t)c->a[pi]) ||
	    !proc_path(c, (uint64_t)c->a[pi], buf, sizeof buf, &link))
		return zv_next(c);
	if (link) {
		if (!row->readlink)
			return zv_next(c);
		long size = c->a[pi + 2], k = (long)zv_strlen(buf);
		if (size <= 0)
			return -EINVAL;
		if (k > size)
			k = size;
		return zv_guest_copy((void *)c->a[pi + 1], buf, (size_t)k, (uint64_t)c->a[pi + 1]) < 0 ? -EFAULT : k;
	}
	long a[6] = { c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
	a[pi] = (long)buf;
	return zv_next_with(c, a);
}

/* pids and groups are ints: the upper half of the register is not theirs */
static long group_arg(long x) { return (int)x > 0 ? zv_cr_host_group((int)x) : (int)x; }

static long call(struct zv_call *c)
{
	const struct zv_sysent *row = zv_row(c->nr);
	if (c->nr == __NR_shmget || c->nr == __NR_shmat || c->nr == __NR_shmctl)
		return shm_call(c);
	if (c->nr == __NR_getdents64 || c->nr == __NR_getdents)
		return zv_cr_pid_dents(c);
	if (row->path)
		return path_call(c, row);
	if (clock_call(c->nr)) {
		long a[6] = { host_clock(c->a[0]), c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
		return a[0] == c->a[0] ? zv_next(c) : zv_next_with(c, a);
	}
	if (row->ppid)
		return zv_cr_guest_ppid(zv_next(c));
	uint8_t m = row->pid;
	if ((m & ZV_PID_WHO_PRIO) && c->a[0] != 0 /* PRIO_PROCESS */)
		return zv_next(c);
	if ((m & ZV_PID_WHO_IOPRIO) && c->a[0] != 1 /* IOPRIO_WHO_PROCESS */)
		return zv_next(c);
	long a[6] = { c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
	for (int i = 0; i < 6; i++)
		if (m & (1u << i))
			a[i] = zv_cr_host_id((int)a[i]);
	int tty = 0;
	long r;
	switch (row->ids) {
	case ZV_IDS_KILL:
		if ((int)a[0] < -1)
			a[0] = -group_arg(-(int)a[0]);
		break;
	case ZV_IDS_WAIT4:
		a[0] = (int)a[0] < -1 ? -group_arg(-(int)a[0]) : zv_cr_host_id((int)a[0]);
		r = zv_next_with(c, a);
		return r > 0 ? zv_cr_guest_id(r) : r;
	case ZV_IDS_WAITID:
		if (a[0] == 1 /* P_PID */)
			a[1] = zv_cr_host_id((int)a[1]);
		else if (a[0] == 2 /* P_PGID */)
			a[1] = group_arg(a[1]);
		r = zv_next_with(c, a);
		if (r == 0 && a[2]) { /* the siginfo's si_pid */
			int32_t *pid = (int32_t *)(a[2] + 16);
			*pid = (int32_t)zv_cr_guest_id(*pid);
		}
		return r;
	case ZV_IDS_SETPGID:
		a[1] = group_arg(a[1]);
		break;
	case ZV_IDS_GROUP:
		r = zv_next_with(c, a);
		return r > 0 ? zv_cr_guest_group(r) : r;
	case ZV_IDS_TTY:
		if (a[1] == TIOCSPGRP_) {
			int32_t g;
			if (zv_guest_copy(&g, (const void *)a[2], sizeof g, (uint64_t)a[2]) < 0)
				return -EFAULT;
			tty = (int)group_arg(g);
			a[2] = (long)&tty;
		}
		r = zv_next_with(c, a);
		if (r == 0 && (a[1] == TIOCGPGRP_ || a[1] == TIOCGSID_)) { /* the host wrote it: writable */
			int32_t g = *(int32_t *)a[2];
			g = (int32_t)zv_cr_guest_group(g);
			zv_guest_copy((void *)a[2], &g, sizeof g, (uint64_t)a[2]);
		}
		return r;
	}
	return zv_next_with(c, a);
}

ZV_LAYER(cr_pids, 600) = { .name = "cr-pids", .sees = sees, .active = restored, .call = call, .guest_id = zv_cr_guest_id,
				  .guest_group = zv_cr_guest_group };

/* The exec state's field J (sys/execstate.c): a host execve starts a new
 * image, whose kernel would know only the host's ids. A restored process,
 * or a child it forked, carries its own id and the table: "PID" then
 * ".VID:HID:GROUP" per entry that differs (as many as fit in half the
 * room left: the fields after this one must fit too). */
static int ids_encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	if (!zv_cr.restored)
		return -1;
	int k = zv_snprintf(buf, n, "%d", x->pid);
	const struct zv_cr_ids *t = zv_cr.ids;
	for (uint32_t i = 0; t && i < t->n && (size_t)k + 40 < n / 2; i++)
		if (t->e[i].group <= 1 && t->e[i].vid > 0 && t->e[i].hid > 0 && t->e[i].vid != t->e[i].hid)
			k += zv_snprintf(buf + k, n - (size_t)k, ".%d:%d:%u", t->e[i].vid, t->e[i].hid, t->e[i].group);
	return k;
}

static const char *ids_decode(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	zv_cr.restored = 1;
	zv_cr.ids = NULL;
	zv_proc.pid = (int)zv_parse_dec(s, &s);
	while (*s == '.') {
		int vid = (int)zv_parse_dec(s + 1, &s);
		int hid = *s == ':' ? (int)zv_parse_dec(s + 1, &s) : 0;
		int group = *s == ':' ? (int)zv_parse_dec(s + 1, &s) : 0;
		zv_cr_ids_add(vid, hid, group);
	}
	return s;
}

ZV_EXEC_FIELD(cr_ids, 210, 'J', ids_encode, ids_decode);
