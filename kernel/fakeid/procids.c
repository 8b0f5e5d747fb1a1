/* The virtual credentials of the run's other processes, for their
 * /proc/PID/status (sys/procview_status.c asks through
 * zv_ids_other_hook). A table in memory all the run's processes share: a
 * memfd mapped shared, made by the first image, inherited by fork, carried
 * across execve as a hidden fd (exec state field I). A thread whose
 * credentials are not the run's start ones holds a slot, keyed by its
 * host tid and pid and the process's start time (a reused pid's differs);
 * one whose are, and any process without a slot, show through the id map.
 * A process that ends keeps its leader's slot, for the uid of its parent's
 * SIGCHLD and wait, until its pid is taken by another of the run's or the
 * table is full. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/kmem.h"
#include "lib/procfs.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>
#include <linux/memfd.h>

#define SLOTS 256

struct slot {
	volatile uint32_t seq; /* odd while a writer holds the slot: no writer ever waits */
	int tid, pid;          /* the host's; tid 0: free */
	uint64_t start;        /* the process's start time (/proc/PID/stat field 22) */
	int dumpable;          /* its process's (zv_fid.dumpable) */
	struct zv_creds cred;
};

struct table {
	volatile uint32_t next; /* the slot taken next when none is free */
	struct zv_creds start;  /* the run's start credentials (an exec'd image lacks the host's groups) */
	struct slot s[SLOTS];
};

int zv_fid_procids_fd = -1;
static struct table *tab;
static uint64_t mine[SLOTS / 64]; /* slots this process wrote: freed as its threads end */
static uint64_t my_start;          /* this process's start time, once read */

static void map(void)
{
	void *p = zv_kmap(sizeof *tab, 4096, zv_fid_procids_fd);
	tab = zv_is_err((long)p) ? NULL : p;
}

void zv_fid_procids_make(void)
{
	long fd = zv_sys2(__NR_memfd_create, "zvisor-ids", MFD_CLOEXEC);
	if (fd < 0 || zv_sys2(__NR_ftruncate, fd, sizeof *tab) < 0) {
		if (fd >= 0)
			zv_close((int)fd);
		return;
	}
	zv_fid_procids_fd = zv_hide_fd((int)fd); /* not close-on-exec any more: carried */
	zv_keep_hidden_fd(&zv_fid_procids_fd);
	map();
	if (tab)
		zv_fid_start_cred(&tab->start);
}

void zv_fid_procids_attach(int fd)
{
	zv_fid_procids_fd = fd;
	if (fd < 0)
		return;
	zv_keep_hidden_fd(&zv_fid_procids_fd);
	map();
}

/* Field 22 of pid's stat, the 20th after the comm; 0 if unknown. */
static uint64_t start_time(int pid)
{
	char buf[1024];
	const char *p = zv_procfs_stat_fields(pid, buf, sizeof buf);
	for (int i = 0; p && i < 19; i++)
		p = (p = zv_strchr(p, ' ')) ? p + 1 : NULL;
	return p ? (uint64_t)zv_parse_dec(p, &p) : 0;
}

static int same_cred(const struct zv_creds *a, const struct zv_creds *b)
{
	if (memcmp(a, b, __builtin_offsetof(struct zv_creds, groups)))
		return 0;
	return !memcmp(a->groups, b->groups, a->ngroups * sizeof a->groups[0]);
}

/* A writer's hold of s, if no other writer has it. */
static int take(struct slot *s)
{
	uint32_t q = s->seq;
	return !(q & 1) && __atomic_compare_exchange_n(&s->seq, &q, q + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void give(struct slot *s) { __atomic_fetch_add(&s->seq, 1, __ATOMIC_RELEASE); }

static int find(int tid, int pid)
{
	for (int i = 0; i < SLOTS; i++)
		if (tab->s[i].tid == tid && tab->s[i].pid == pid)
			return i;
	return -1;
}

static void clear(int i)
{
	struct slot *s = &tab->s[i];
	if (take(s)) {
		s->tid = 0;
		give(s);
	}
	mine[i / 64] &= ~(1ULL << (i % 64));
}

static int next_slot(void) { return (int)(__atomic_fetch_add(&tab->next, 1, __ATOMIC_RELAXED) % SLOTS); }

/* A slot for a new key: a free one, else one of a process that is gone
 * (reaped) among the next few in turn, else the next in turn. */
static int fresh(void)
{
	for (int i = 0; i < SLOTS; i++)
		if (!tab->s[i].tid && !(tab->s[i].seq & 1))
			return i;
	for (int n = 0; n < 32; n++) {
		int i = next_slot();
		if (zv_sys2(__NR_kill, tab->s[i].pid, 0) == -ESRCH)
			return i;
	}
	return next_slot();
}

/* The host pid of t's process: a CLONE_VM child that is no thread is a
 * process of its own. */
static int pid_of(const struct zv_thread *t) { return t->is_thread ? zv_proc.hpid : t->htid; }

/* t's credentials, seen by the run's other processes: after they change,
 * at each image, in a fork child; with its process's dumpability, which
 * decides the owner of its /proc files. */
static void write_slot(int tid, int pid, uint64_t st, const struct zv_creds *c)
{
	int i = find(tid, pid);
	if (i < 0)
		i = fresh();
	struct slot *s = &tab->s[i];
	if (!take(s))
		return; /* another writer's, this moment: this change goes unseen */
	s->tid = tid;
	s->pid = pid;
	s->start = st;
	s->dumpable = zv_fid.dumpable;
	s->cred = *c;
	give(s);
	if (pid == zv_proc.hpid)
		mine[i / 64] |= 1ULL << (i % 64);
}

static int shown_by_map(const struct zv_thread *t)
{
	return same_cred(&t->cred, &tab->start) && zv_fid.dumpable == ZV_FID_DUMP_USER;
}

void zv_fid_publish(const struct zv_thread *t)
{
	if (!tab || !t->cred_valid)
		return;
	int pid = pid_of(t);
	if (shown_by_map(t)) { /* what the id map shows anyway */
		int i = find(t->htid, pid);
		if (i >= 0)
			clear(i);
		return;
	}
	uint64_t st = pid != zv_proc.hpid ? start_time(pid) : my_start ? my_start : (my_start = start_time(pid));
	write_slot(t->htid, pid, st, &t->cred);
}

/* A fork child pid of t's, which has t's credentials from the start: its
 * slot written here too, as the fork returns, for the parent may signal
 * it (fakeid/killperm.c) before the child runs and writes its own. */
void zv_fid_publish_child(const struct zv_thread *t, int pid)
{
	if (tab && t->cred_valid && pid > 0 && !shown_by_map(t))
		write_slot(pid, pid, start_time(pid), &t->cred);
}

static int publish_one(struct zv_thread *t, void *self)
{
	if (pid_of(t) == pid_of(self))
		zv_fid_publish(t);
	return 0;
}

/* The process's dumpability changed: every thread of it says so. */
void zv_fid_publish_all(struct zv_thread *self)
{
	if (tab)
		zv_thread_each(publish_one, self);
}

/* A fork child: its own process, which wrote no slot yet. */
void zv_fid_procids_fork_child(struct zv_thread *t)
{
	for (int i = 0; i < SLOTS / 64; i++)
		if (mine[i])
			mine[i] = 0;
	if (my_start)
		my_start = 0;
	zv_fid_publish(t);
}

/* t ends (the whole process: all: every slot of it but its leader's,
 * which its parent may still ask about). */
void zv_fid_procids_exit(const struct zv_thread *t, int all)
{
	for (int i = 0; tab && i < SLOTS; i++)
		if ((mine[i / 64] >> (i % 64)) & 1 && tab->s[i].pid == zv_proc.hpid &&
		    (all ? tab->s[i].tid != zv_proc.hpid : tab->s[i].tid == t->htid))
			clear(i);
}

/* The slot of (tid, pid) into *c (and its dumpability into *d), if it is
 * still that process's (ended: also of a process no longer there). */
static int lookup_slot(int tid, int pid, struct zv_creds *c, int *d, int ended)
{
	for (int i = 0; i < SLOTS; i++) {
		struct slot *s = &tab->s[i];
		uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if ((q & 1) || s->tid != tid || s->pid != pid)
			continue;
		uint64_t st = s->start;
		*c = s->cred;
		*d = s->dumpable;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (s->seq == q && s->tid == tid && s->pid == pid) {
			uint64_t now = start_time(pid);
			return st == now || (ended && !now);
		}
	}
	return 0;
}

static int lookup(int tid, int pid, struct zv_creds *c, int *d) { return lookup_slot(tid, pid, c, d, 0); }

/* The value after "Key:" of a status text's line, or NULL. */
static const char *field(const char *raw, size_t len, const char *key)
{
	size_t kl = zv_strlen(key);
	for (size_t at = 0; at + kl < len;) {
		if (!memcmp(raw + at, key, kl))
			return raw + at + kl;
		while (at < len && raw[at] != '\n')
			at++;
		at++;
	}
	return NULL;
}

/* Up to max decimal numbers of the line at p into v: how many. */
static uint32_t numbers(const char *p, uint32_t *v, uint32_t max)
{
	uint32_t n = 0;
	while (p && n < max) {
		while (*p == '\t' || *p == ' ')
			p++;
		const char *e;
		long x = zv_parse_dec(p, &e);
		if (e == p)
			break;
		v[n++] = (uint32_t)x;
		p = e;
	}
	return n;
}

static uint64_t hex_of(const char *raw, size_t len, const char *key)
{
	const char *p = field(raw, len, key), *e;
	while (p && (*p == '\t' || *p == ' '))
		p++;
	return p ? zv_parse_hex(p, &e) : 0;
}

/* A process without a slot: the run's user, all its ids the host's, is
 * the run's start identity; another's ids map one by one (65534), its
 * capabilities stay the host's. */
static void mapped(const char *raw, size_t len, struct zv_creds *c)
{
	uint32_t u[4] = { 0 }, g[4] = { 0 }, groups[ZV_CRED_GROUPS];
	numbers(field(raw, len, "Uid:"), u, 4);
	numbers(field(raw, len, "Gid:"), g, 4);
	int plain = 1;
	for (int i = 0; i < 4; i++)
		plain &= u[i] == zv_fid.host_uid && g[i] == zv_fid.host_gid;
	if (plain && tab) {
		*c = tab->start;
		return;
	}
	*c = (struct zv_creds){ 0 };
	for (int i = 0; i < 4; i++) {
		(&c->uid)[i] = zv_fid_guest_uid(u[i]);
		(&c->gid)[i] = zv_fid_guest_gid(g[i]);
	}
	uint32_t n = numbers(field(raw, len, "Groups:"), groups, ZV_CRED_GROUPS);
	for (uint32_t i = 0; i < n; i++)
		groups[i] = zv_fid_guest_gid(groups[i]);
	zv_fid_set_groups(c, groups, n);
	c->cap_inh = hex_of(raw, len, "CapInh:");
	c->cap_prm = hex_of(raw, len, "CapPrm:");
	c->cap_eff = hex_of(raw, len, "CapEff:");
	c->cap_bnd = hex_of(raw, len, "CapBnd:");
	c->cap_amb = hex_of(raw, len, "CapAmb:");
}

/* zv_ids_other_hook: thread tid of another process, whose host status
 * text is raw: its slot, else its process leader's, else the id map. */
int zv_fid_other_creds(int tid, const char *raw, size_t len, struct zv_creds *c)
{
	uint32_t tgid = 0;
	int d;
	numbers(field(raw, len, "Tgid:"), &tgid, 1);
	if (tab && tgid && (lookup(tid, (int)tgid, c, &d) || (tid != (int)tgid && lookup((int)tgid, (int)tgid, c, &d))))
		return 1;
	mapped(raw, len, c);
	return 1;
}

/* Task tid's credentials as the run shows them: its status read from the
 * host, then through the table (zv_fid_other_creds). 0, or -1 if its
 * status cannot be read (no such task). */
int zv_fid_task_status_creds(int tid, struct zv_creds *c)
{
	static char raw[4096] ZV_COLD_BSS;
	static volatile int lock;
	char path[40];
	zv_snprintf(path, sizeof path, "/proc/%d/status", tid);
	zv_lock(&lock);
	long fd = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0), n = -1;
	if (fd >= 0) {
		n = zv_sys3(__NR_read, fd, raw, sizeof raw - 1);
		zv_close((int)fd);
	}
	if (n > 0)
		zv_fid_other_creds(tid, raw, (size_t)n, c);
	zv_unlock(&lock);
	return n > 0 ? 0 : -1;
}

/* Thread tid of process tgid (0: not known; tid is then most likely a
 * leader) as the table shows it: its credentials and its process's
 * dumpability, 1; 0 if it has no slot (its ids are the id map's). */
int zv_fid_task_creds(int tid, int tgid, struct zv_creds *c, int *dumpable)
{
	if (!tab)
		return 0;
	if (!tgid) {
		for (int i = 0; i < SLOTS && !tgid; i++)
			if (tab->s[i].tid == tid)
				tgid = tab->s[i].pid;
		if (!tgid)
			return 0;
	}
	return lookup(tid, tgid, c, dumpable) || (tid != tgid && lookup(tgid, tgid, c, dumpable));
}

/* zv_ids_sender_hook: a user's process the guest sees as uid U is U's
 * natively, so a signal it sends (and a SIGCHLD or wait that tells of it)
 * names U as its real uid where the host names the run's user: this
 * process's as self has it, another of the run's as its slot says (a
 * process that ended: its leader's slot), else the id map's, as for one
 * outside the run. */
uint32_t zv_fid_sender_uid(const struct zv_thread *self, int tid, int pid, uint32_t huid)
{
	if (huid != zv_fid.host_uid || !tab || tid <= 0)
		return zv_fid_guest_uid(huid);
	if (self && self->cred_valid && (tid == self->htid || (pid ? pid : tid) == pid_of(self)))
		return self->cred.uid;
	struct zv_creds c;
	int d, ended = pid != 0; /* a process unknown, not a leader, is alive (a tracee's stop) */
	if (!pid && lookup_slot(tid, tid, &c, &d, 1))
		return c.uid;
	for (int i = 0; i < SLOTS && !pid; i++)
		if (tab->s[i].tid == tid && tab->s[i].pid != tid)
			pid = tab->s[i].pid;
	if (pid && (lookup_slot(tid, pid, &c, &d, ended) || (tid != pid && lookup_slot(pid, pid, &c, &d, ended))))
		return c.uid;
	return zv_fid_guest_uid(huid);
}
