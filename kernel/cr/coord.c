/* `zvisor checkpoint PID DIR`'s side (cr/tree.h): the process PID and its
 * descendants, reached over the peer channel one after the other, each
 * frozen before it names its children, so the tree is whole and still
 * before anything is saved; then each dumps itself, the tree's own facts
 * are written beside (section "tree": ids, zombies, descriptions shared
 * between processes), DIR appears whole by a rename, and the tree resumes
 * or ends as a whole. A refusal of any process resumes them all. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/tree.h"
#include "cr/census.h"
#include "cr/stream.h"
#include "cr/memory.h"
#include "cr/procfile.h"
#include "peer/peer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <asm/stat.h>

#define MAX_PROCS 1024

struct proc {
	int hpid, hppid;
	int fd;                   /* the peer session; -1 */
	int zombie, status;
	int gone;                 /* ended and reaped while the tree froze: not saved */
	int vpid;
	int pidfd;
	struct zv_cr_frozen f;
};

struct coord {
	struct proc *p;
	int n;
	const struct zv_cr_request *req;
	char tmp[4200];           /* DIR.tmp.PID of a tree */
	int tmpfd;
};
static struct coord C ZV_COLD_BSS;

__attribute__((noreturn)) static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void resume_all(int op)
{
	struct zv_cr_command cmd = { .op = (uint32_t)op };
	for (int i = 0; i < C.n; i++)
		if (C.p[i].fd >= 0) {
			zv_peer_send(C.p[i].fd, &cmd, sizeof cmd, NULL, 0);
			zv_close(C.p[i].fd);
			C.p[i].fd = -1;
		}
}

/* Removes DIR.tmp.PID and what is in it (the processes' images too). */
static void remove_tree(const char *dir)
{
	long fd = zv_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	char buf[4096], path[4400];
	long n;
	for (int removed = 1; removed;) {
		removed = 0;
		zv_sys3(__NR_lseek, fd, 0, 0);
		while ((n = zv_sys3(__NR_getdents64, fd, buf, sizeof buf)) > 0)
			for (long off = 0; off < n;) {
				const char *name = buf + off + 19;
				uint8_t type = *(uint8_t *)(buf + off + 18);
				off += *(unsigned short *)(buf + off + 16);
				if (name[0] == '.')
					continue;
				zv_snprintf(path, sizeof path, "%s/%s", dir, name);
				if (type == 4 /* DT_DIR */)
					remove_tree(path);
				if (zv_sys3(__NR_unlinkat, AT_FDCWD, path, type == 4 ? 0x200 : 0) == 0)
					removed = 1;
			}
	}
	zv_close((int)fd);
	zv_sys3(__NR_unlinkat, AT_FDCWD, dir, 0x200 /* AT_REMOVEDIR */);
}

#include <stdarg.h>
static void fail(const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	zv_vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	resume_all(ZV_CR_OP_RESUME);
	if (C.tmp[0])
		remove_tree(C.tmp);
	zv_dprintf(2, "zvisor: checkpoint: %s\n", why);
	zv_exit_group(1);
}

static int readable(int fd, int ms)
{
	struct { int fd; short events, revents; } p = { fd, 1 /* POLLIN */, 0 };
	struct { long s, ns; } t = { ms / 1000, (ms % 1000) * 1000000L };
	return zv_sys5(__NR_ppoll, &p, 1, &t, NULL, 8) > 0;
}

/* The next answer of process p (as long as it takes, while it lives). */
static void answer(struct proc *p, void *buf, size_t n)
{
	for (;;) {
		if (readable(p->fd, 200)) {
			long k = zv_peer_recv(p->fd, buf, n, NULL, 0, NULL);
			if (k == (long)n)
				return;
			if (k != -EAGAIN && k != -EINTR)
				break;
		}
		if (p->pidfd >= 0 && readable(p->pidfd, 0))
			break;
	}
	if (C.n > 1)
		fail("process %d ended or broke off before the checkpoint was complete", p->vpid);
	fail("process %d ended before the checkpoint was complete", p->hpid);
}

/* A process's state letter, parent and (a zombie's) wait status. */
static int proc_stat(int pid, int *ppid, int *status)
{
	char path[64], buf[1024];
	zv_snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (zv_cr_read_file(path, buf, sizeof buf) <= 0)
		return 0;
	const char *p = buf;
	for (const char *q = buf; *q; q++) /* after the name's closing parenthesis */
		if (*q == ')')
			p = q;
	if (*p != ')' || !p[1] || !p[2])
		return 0;
	char state = p[2];
	const char *e;
	*ppid = (int)zv_parse_dec(p + 4, &e);
	/* field 52, exit_code: after the 47 that follow the parent's pid */
	for (int f = 0; f < 47 && *e; f++) {
		e++;
		while (*e && *e != ' ' && *e != '\n')
			e++;
	}
	*status = *e ? (int)zv_parse_dec(e + 1, &e) : 0;
	return state;
}

static void add_proc(int hpid, int hppid, int vpid)
{
	if (C.n == MAX_PROCS)
		fail("more than %d processes in the tree", MAX_PROCS);
	C.p[C.n] = (struct proc){ .hpid = hpid, .hppid = hppid, .fd = -1, .vpid = vpid, .pidfd = -1 };
	C.n++;
}

/* A child of a frozen parent that was exiting when it was listed: once its
 * exit is through, a zombie (its parent waits no more) or gone (a parent
 * that lets its children be reaped). 1 when it has ended so, 0 when it
 * still runs after a second. */
static int ended(struct proc *p)
{
	if (p->pidfd >= 0 && !readable(p->pidfd, 1000))
		return 0;
	int ppid;
	char state = (char)proc_stat(p->hpid, &ppid, &p->status);
	if (state == 'Z')
		p->zombie = 1;
	else if (!state)
		p->gone = 1;
	return p->zombie || p->gone;
}

static int stopped(struct proc *p)
{
	int ppid, status;
	char state = (char)proc_stat(p->hpid, &ppid, &status);
	return state == 'T' || state == 't';
}

/* Knocks process p and waits for it to connect back: the session's fd,
 * -ESRCH once the process has ended, -EPIPE while it is stopped on the
 * host (a stopped process runs no handler: it cannot answer until
 * SIGCONT), -ETIMEDOUT, or -errno. A knock lost (a host execve, a vfork
 * child) is sent again every half second. */
static long reach(struct proc *p, int ms)
{
	for (int waited = 0;; waited += 500) {
		if (stopped(p))
			return -EPIPE;
		struct zv_peer_wait w;
		long r = zv_peer_knock(p->hpid, &w);
		if (r < 0)
			return r;
		for (int slice = 0; slice < 500; slice += 100) {
			struct { int fd; short events, revents; } pf[2] = { { w.listener, 1 /* POLLIN */, 0 },
									    { p->pidfd, 1, 0 } };
			struct { long s, ns; } t = { 0, 100000000L };
			zv_sys5(__NR_ppoll, pf, p->pidfd >= 0 ? 2 : 1, &t, NULL, 8);
			if (pf[0].revents) {
				r = zv_peer_accept(&w, 0); /* checked: a stranger is dropped */
				if (r != -EAGAIN)
					return r; /* the listener is closed */
			}
			if (pf[1].revents && !pf[0].revents) {
				zv_peer_cancel(&w);
				return -ESRCH;
			}
		}
		zv_peer_cancel(&w);
		if (waited + 500 >= ms)
			return -ETIMEDOUT;
	}
}

/* The host's ids of process hpid (its status's Uid and Gid lines: real,
 * effective, saved, fs) into out; 0, or -1 unreadable. */
static int host_ids(int hpid, char out[2][64])
{
	char path[64], buf[4096];
	zv_snprintf(path, sizeof path, "/proc/%d/status", hpid);
	long n = zv_cr_read_file(path, buf, sizeof buf - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	static const char *const key[2] = { "Uid:", "Gid:" };
	for (int k = 0; k < 2; k++) {
		const char *v = zv_cr_field(buf, key[k]);
		if (!v)
			return -1;
		size_t len = 0;
		while (v[len] && v[len] != '\n' && len + 1 < 64)
			len++;
		memcpy(out[k], v, len);
		out[k][len] = 0;
	}
	return 0;
}

/* Every process of a tree writes its own image into the directory the
 * checkpoint made (0700, the root's), and a restore makes them all as the
 * restoring user: a process whose host ids differ from the root's (a
 * server's worker after setuid) is refused with one line. */
static void check_ids(int i)
{
	static char root[2][64];
	char ids[2][64];
	if (!i)
		memset(root, 0, sizeof root);
	if (host_ids(C.p[i].hpid, ids) < 0)
		return; /* ended: found so below */
	if (!i) {
		memcpy(root, ids, sizeof root);
		return;
	}
	for (int k = 0; k < 2; k++) {
		if (root[k][0] && zv_strcmp(ids[k], root[k])) {
			for (char *c = ids[k]; *c; c++)
				if (*c == '\t')
					*c = ' ';
			fail("process %d runs as another host user than the tree's first process (%s %s): "
			     "zvisor restore makes every process as the restoring user",
			     C.p[i].vpid, k ? "gid" : "uid", ids[k]);
		}
	}
}

/* Asks process i to freeze (its answer: collect). A child may be ending
 * as it is asked (its parent, frozen, listed it just before): it is then
 * saved as the zombie it becomes, or left out when it is reaped at once. */
static void ask_freeze(int i)
{
	struct proc *p = &C.p[i];
	int ppid;
	char state = (char)proc_stat(p->hpid, &ppid, &p->status);
	if (i && state == 'Z') {
		p->zombie = 1;
		return;
	}
	if (i && !state) {
		p->gone = 1;
		return;
	}
	p->pidfd = (int)zv_sys2(__NR_pidfd_open, p->hpid, 0);
	check_ids(i);
	int zv = zv_peer_hosted(p->hpid);
	if (zv <= 0 && i && ended(p))
		return;
	if (zv <= 0) {
		if (!i)
			fail("process %d does not run under zvisor", p->hpid);
		char comm[64] = "?";
		char path[64];
		zv_snprintf(path, sizeof path, "/proc/%d/comm", p->hpid);
		long n = zv_cr_read_file(path, comm, sizeof comm);
		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = 0;
		fail("process %d (%s), a descendant of %d, does not run under zvisor", p->vpid, comm, C.p[0].hpid);
	}
	long fd = reach(p, 20000);
	if (fd == -ESRCH && i && ended(p))
		return;
	if (fd == -EPIPE)
		fail("process %d is stopped (SIGSTOP or SIGTSTP): a stopped process cannot be checkpointed, "
		     "continue it first (SIGCONT)", i ? p->vpid : p->hpid);
	if (fd == -ESRCH)
		fail("process %d ended before the checkpoint was complete", i ? p->vpid : p->hpid);
	if (fd < 0)
		fail("process %d did not answer: %s", i ? p->vpid : p->hpid, zv_strerror((int)-fd));
	p->fd = (int)fd;
	struct zv_cr_ask a = { ZV_PEER_HDR_MAGIC, ZV_PEER_VERSION, ZV_PEER_CHECKPOINT, ZV_CR_OP_FREEZE, 0 };
	if (zv_peer_send(p->fd, &a, sizeof a, NULL, 0) < 0)
		fail("the channel to process %d broke", p->hpid);
}

/* Process i frozen: its children are the next to ask. */
static void collect(int i)
{
	struct proc *p = &C.p[i];
	if (p->zombie || p->gone)
		return;
	answer(p, &p->f, sizeof p->f);
	if (p->f.err)
		fail("%s", p->f.why);
	p->vpid = p->f.vpid;
	for (int k = 0; k < p->f.nchildren; k++)
		add_proc(p->f.children[k].hpid, p->hpid, p->f.children[k].vpid);
}

/* Freezes every process of the tree, top-down: each process is asked once
 * its parent is frozen (so it can fork no more), the children of one
 * generation all at once, so that they park in parallel. */
static void freeze_tree(int root)
{
	add_proc(root, 0, 0);
	for (int start = 0, end; start < C.n; start = end) {
		end = C.n;
		for (int i = start; i < end; i++)
			ask_freeze(i);
		for (int i = start; i < end; i++)
			collect(i);
		/* the processes gone meanwhile are left out (none has children listed) */
		int k = start, left = 0;
		for (int i = start; i < C.n; i++) {
			if (C.p[i].gone) {
				if (C.p[i].pidfd >= 0)
					zv_close(C.p[i].pidfd);
				if (i < end)
					left++;
				continue;
			}
			C.p[k++] = C.p[i];
		}
		C.n = k;
		end -= left;
	}
}

/* A SysV segment attached outside the saved processes cannot be made
 * again as theirs: said now rather than at the restore. */
static void check_sysv(void)
{
	int pids[MAX_PROCS], n = 0;
	char why[256];
	for (int i = 0; i < C.n; i++)
		if (!C.p[i].zombie)
			pids[n++] = C.p[i].hpid;
	if (zv_cr_sysv_outside(pids, n, why, sizeof why) < 0)
		fail("%s", why);
}

/* One process alone: it writes DIR itself. */
static void dump_one(void)
{
	struct proc *p = &C.p[0];
	struct zv_cr_command *cmd = zv_kmap(sizeof *cmd, 4096, -1);
	struct zv_cr_done d;
	cmd->op = ZV_CR_OP_DUMP;
	cmd->req = *C.req;
	if (zv_peer_send(p->fd, cmd, sizeof *cmd, NULL, 0) < 0)
		fail("the channel to process %d broke", p->hpid);
	answer(p, &d, sizeof d);
	if (d.err)
		fail("%s", d.why);
}

/* --- a tree --- */

static const struct proc *by_hpid(int hpid)
{
	for (int i = 0; i < C.n; i++)
		if (C.p[i].hpid == hpid)
			return &C.p[i];
	return NULL;
}

/* Sessions are made again by setsid: a process is its session's leader or
 * in its parent's (the root in the restorer's). */
static void check_sessions(void)
{
	for (int i = 1; i < C.n; i++) {
		const struct proc *p = &C.p[i], *pp = by_hpid(p->hppid);
		if (p->zombie || !pp || p->f.vsid == p->f.vpid || p->f.vsid == pp->f.vsid)
			continue;
		fail("process %d is in session %d, which is neither its own nor its parent's", p->vpid, p->f.vsid);
	}
}

/* The census of the tree's files (cr/census.h), the root's fds 0-2 and
 * --inherit-fd's being the outside the restorer gives. */
static void write_census(void)
{
	struct zv_cr_census c = { 0 };
	int pids[MAX_PROCS], n = 0;
	for (int i = 0; i < C.n; i++)
		if (!C.p[i].zombie)
			pids[n++] = C.p[i].hpid;
	long r = zv_cr_census_of(&c, pids, n);
	for (int i = 0; i < C.n; i++)
		zv_cr_census_proc(&c, C.p[i].hpid);
	for (int k = -3; k < C.req->ninherit && r == 0; k++) {
		int fd = k < 0 ? k + 3 : C.req->inherit[k];
		char path[64];
		struct stat st;
		zv_snprintf(path, sizeof path, "/proc/%d/fd/%d", C.p[0].hpid, fd);
		if (zv_sys2(__NR_stat, path, &st) == 0)
			zv_cr_census_outside(&c, fd, st.st_dev, st.st_ino);
	}
	if (r == 0)
		r = zv_cr_census_write(&c, C.tmpfd, "census.bin");
	zv_cr_census_free(&c);
	if (r < 0)
		fail("cannot take the census of the tree's files: %s", zv_strerror((int)-r));
}

/* Fds of different processes that share an open file description: kcmp
 * among those that are the same file. */
struct fdid { int proc, fd, group; uint64_t dev, ino; };

static long shares(struct zv_cr_buf *out)
{
	struct zv_cr_buf all = { 0 };
	for (int i = 0; i < C.n; i++) {
		if (C.p[i].zombie)
			continue;
		char dir[48], ents[4096], path[96];
		zv_snprintf(dir, sizeof dir, "/proc/%d/fd", C.p[i].hpid);
		long dfd = zv_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0), k;
		while (dfd >= 0 && (k = zv_sys3(__NR_getdents64, dfd, ents, sizeof ents)) > 0)
			for (long off = 0; off < k;) {
				const char *name = ents + off + 19;
				off += *(unsigned short *)(ents + off + 16);
				unsigned long fd;
				struct stat st;
				zv_snprintf(path, sizeof path, "%s/%s", dir, name);
				if (zv_parse_ulong(name, &fd) < 0 || zv_sys2(__NR_stat, path, &st) < 0)
					continue;
				struct fdid e = { i, (int)fd, -1, st.st_dev, st.st_ino };
				zv_cr_buf_put(&all, &e, sizeof e);
			}
		if (dfd >= 0)
			zv_close((int)dfd);
	}
	struct fdid *e = (void *)all.p;
	size_t n = all.len / sizeof *e;
	int groups = 0;
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++) {
			if (e[a].proc == e[b].proc || e[a].dev != e[b].dev || e[a].ino != e[b].ino ||
			    (e[b].group >= 0 && e[b].group == e[a].group))
				continue;
			if (zv_sys5(__NR_kcmp, C.p[e[a].proc].hpid, C.p[e[b].proc].hpid, 0 /* KCMP_FILE */, e[a].fd, e[b].fd))
				continue;
			if (e[a].group < 0)
				e[a].group = groups++;
			e[b].group = e[a].group;
		}
	for (size_t a = 0; a < n; a++)
		if (e[a].group >= 0) {
			struct zv_cr_tree_share s = { C.p[e[a].proc].vpid, e[a].fd, e[a].group, 0 };
			zv_cr_buf_put(out, &s, sizeof s);
		}
	long r = all.failed ? -ENOMEM : 0;
	zv_cr_buf_free(&all);
	return r;
}

static void write_tree(void)
{
	struct zv_cr_buf b = { 0 }, sh = { 0 };
	if (shares(&sh) < 0)
		fail("out of memory");
	struct zv_cr_tree_head h = { ZV_CR_TREE_MAGIC, 1, (uint32_t)C.n,
				     (uint32_t)(sh.len / sizeof(struct zv_cr_tree_share)) };
	zv_cr_buf_put(&b, &h, sizeof h);
	for (int i = 0; i < C.n; i++) {
		const struct proc *p = &C.p[i], *pp = by_hpid(p->hppid);
		struct zv_cr_tree_proc t = { p->vpid, p->zombie ? (pp ? pp->vpid : 0) : p->f.vppid, p->f.vpgid, p->f.vsid,
					     p->zombie, p->status, p->hpid, p->hppid };
		zv_cr_buf_put(&b, &t, sizeof t);
	}
	if (sh.len)
		zv_cr_buf_put(&b, sh.p, sh.len);
	struct zv_cr_out *o = zv_kmap(sizeof *o, 4096, -1);
	if (b.failed || zv_is_err((long)o))
		fail("out of memory");
	memset(o, 0, sizeof *o);
	o->dirfd = C.tmpfd;
	struct zv_cr_layout l;
	zv_cr_image_layout(&l);
	if (zv_cr_put(o, "tree", b.p, b.len) < 0 || zv_cr_write_index(o, l.build) < 0)
		fail("%s", o->why);
	zv_cr_buf_free(&b);
	zv_cr_buf_free(&sh);
}

static void dump_tree(void)
{
	zv_snprintf(C.tmp, sizeof C.tmp, "%s.tmp.%d", C.req->dir, (int)zv_getpid());
	long r = zv_sys2(__NR_mkdir, C.tmp, 0700);
	if (r < 0) {
		C.tmp[0] = 0;
		fail("cannot create %s.tmp.%d: %s", C.req->dir, (int)zv_getpid(), zv_strerror((int)-r));
	}
	C.tmpfd = (int)zv_openat(AT_FDCWD, C.tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	check_sessions();
	write_census();
	struct zv_cr_command *cmd = zv_kmap(sizeof *cmd, 4096, -1);
	cmd->op = ZV_CR_OP_DUMP;
	cmd->tree = 1;
	for (int i = 0; i < C.n; i++) /* all at once: they write in parallel */
		if (!C.p[i].zombie) {
			cmd->req = *C.req;
			zv_snprintf(cmd->req.dir, sizeof cmd->req.dir, "%s/p%d", C.tmp, C.p[i].vpid);
			if (zv_peer_send(C.p[i].fd, cmd, sizeof *cmd, NULL, 0) < 0)
				fail("the channel to process %d broke", C.p[i].vpid);
		}
	for (int i = 0; i < C.n; i++)
		if (!C.p[i].zombie) {
			struct zv_cr_done d;
			answer(&C.p[i], &d, sizeof d);
			if (d.err)
				fail("process %d: %s", C.p[i].vpid, d.why);
		}
	zv_sys3(__NR_unlinkat, C.tmpfd, "census.bin", 0);
	write_tree();
	zv_close(C.tmpfd);
	if (zv_sys4(__NR_renameat, AT_FDCWD, C.tmp, AT_FDCWD, C.req->dir) < 0)
		fail("cannot rename %s to %s", C.tmp, C.req->dir);
	C.tmp[0] = 0;
}

void zv_cr_coordinate(const struct zv_cr_request *req, int pid, int compress)
{
	C.req = req;
	C.p = zv_kmap(MAX_PROCS * sizeof *C.p, 4096, -1);
	if (zv_is_err((long)C.p))
		fail("out of memory");
	freeze_tree(pid);
	check_sysv();
	if (C.n == 1)
		dump_one();
	else
		dump_tree();
	resume_all(req->leave_running ? ZV_CR_OP_RESUME : ZV_CR_OP_KILL);
	if (C.n == 1) {
		zv_cr_compress_pages(req->dir, compress);
	} else {
		for (int i = 0; i < C.n; i++)
			if (!C.p[i].zombie) {
				char dir[4200];
				zv_snprintf(dir, sizeof dir, "%s/p%d", req->dir, C.p[i].vpid);
				zv_cr_compress_pages(dir, compress);
			}
	}
	/* the sample above overlapped the end, which frees its memory */
	if (!req->leave_running && C.p[0].pidfd >= 0)
		readable(C.p[0].pidfd, 10000); /* it ends: return once it has */
}
