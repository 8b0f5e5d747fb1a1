/* `zvisor restore DIR` of a process tree (cr/tree.h). The restoring
 * process becomes the tree's root. First it reads every process's fds and
 * mappings and makes what they share (cr/objects.c: pipes, sockets,
 * descriptions shared between processes, files in flight; the MAP_SHARED
 * anonymous objects), then it makes the tree by forking, each process its
 * children in order: a process first takes its session and group where it
 * leads them, then forks its own children, then (a zombie) ends with its
 * status, or restores its own image (cr/restore.c, the hooks below), its
 * fds the descriptions made for it. Once all exist, each joins its group
 * and learns the ids the others have on the host (cr/pids.c); once all are
 * restored, all resume. A shared page at a fixed address of zvisor's
 * window (struct zv_cr_area) counts them and carries a failure, which the
 * root says (one line) and which ends the tree. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/tree.h"
#include "cr/treerestore.h"
#include "cr/memory.h"
#include "cr/stream.h"
#include "cr/resutil.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <linux/mman.h>
#include <linux/futex.h>

#define AREA_ADDR (ZV_KWIN_END - (64UL << 20))
#define WAIT_MS 120000
#define TIOCSCTTY_ 0x540e
#define TIOCSPGRP_ 0x5410

static struct zv_cr_treectx *root_ctx; /* the restorer's, before it restores itself */

int zv_cr_errfd;

__attribute__((noreturn)) void zv_cr_restore_die(const struct zv_cr_treectx *t, const char *why)
{
	int efd = zv_cr_errfd > 2 ? zv_cr_errfd : 2;
	if (!t || !t->area) {
		zv_dprintf(efd, "zvisor: restore: %s\n", why);
		zv_exit_group(1);
	}
	struct zv_cr_area *a = t->area;
	if (__atomic_exchange_n(&a->failed, 1, __ATOMIC_ACQ_REL) == 0)
		zv_strlcpy(a->why, why, sizeof a->why);
	zv_sys4(__NR_futex, &a->registered, FUTEX_WAKE, 0x7fffffff, NULL);
	zv_sys4(__NR_futex, &a->ready, FUTEX_WAKE, 0x7fffffff, NULL);
	int me = (int)zv_getpid();
	for (int i = 1; i < a->nprocs; i++) /* the root says it and ends last */
		if (a->p[i].hpid && a->p[i].hpid != me)
			zv_sys2(__NR_kill, a->p[i].hpid, 9);
	if (t->self == 0) {
		zv_dprintf(efd, "zvisor: restore: %s\n", a->why);
		zv_exit_group(1);
	}
	zv_exit_group(1);
}

static __attribute__((noreturn)) void die_in(struct zv_cr_in *in) { zv_cr_restore_die(root_ctx, in->why); }

/* Waits until *w reaches want, or the tree failed (then ends as it says). */
static void wait_for(const struct zv_cr_treectx *t, volatile int32_t *w, int32_t want, const char *what)
{
	for (int ms = 0; ms < WAIT_MS; ms += 100) {
		int32_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
		if (t->area->failed)
			zv_cr_restore_die(t, t->area->why);
		if (v >= want)
			return;
		struct { long s, ns; } ts = { 0, 100000000 };
		zv_sys4(__NR_futex, w, FUTEX_WAIT, v, &ts);
	}
	zv_cr_restore_die(t, what);
}

/* --- the restorer: reading the tree, making what it shares --- */

struct img {
	struct zv_cr_in *in;
	struct zv_cr_precs pr;
	int proc;                      /* its index among the tree's processes */
};

static int find_vpid(const struct zv_cr_treeproc *p, int n, int vpid)
{
	for (int i = 0; i < n; i++)
		if (p[i].vpid == vpid)
			return i;
	return -1;
}

/* Who makes each process's group: itself (its own pid), the leader in
 * the tree, its parent's (kept, -1), or, the leader gone, the first of
 * its members. */
static void groups(struct zv_cr_treeproc *p, int n)
{
	for (int i = 0; i < n; i++) {
		int k = find_vpid(p, n, p[i].vpgid);
		if (k >= 0)
			p[i].group = k;
		else if (p[i].parent >= 0 && p[p[i].parent].vpgid == p[i].vpgid)
			p[i].group = -1;
		else if (p[i].parent < 0)
			p[i].group = -1; /* the root's: the restorer's */
		else
			for (k = 0; k <= i; k++)
				if (p[k].vpgid == p[i].vpgid) {
					p[i].group = k;
					break;
				}
	}
}

static struct zv_cr_treeproc *read_tree(struct zv_cr_in *in, int *np, const struct zv_cr_tree_share **sh, int *nsh)
{
	uint64_t len;
	const uint8_t *b = zv_cr_get(in, "tree", &len);
	if (b == (const void *)-1)
		die_in(in);
	const struct zv_cr_tree_head *h = (const void *)b;
	if (!b || len < sizeof *h || h->magic != ZV_CR_TREE_MAGIC || h->version != 1 || !h->nprocs ||
	    len != sizeof *h + h->nprocs * sizeof(struct zv_cr_tree_proc) + h->nshares * sizeof(struct zv_cr_tree_share))
		zv_cr_restore_die(NULL, "tree.bin: damaged");
	const struct zv_cr_tree_proc *tp = (const void *)(h + 1);
	struct zv_cr_treeproc *p = zv_cr_kalloc(h->nprocs * sizeof *p);
	if (!p)
		zv_cr_restore_die(NULL, "out of memory");
	for (uint32_t i = 0; i < h->nprocs; i++) {
		p[i] = (struct zv_cr_treeproc){ tp[i].vpid, tp[i].vppid, tp[i].vpgid, tp[i].vsid, tp[i].zombie, tp[i].status, -1, -1 };
		for (uint32_t k = 0; k < h->nprocs; k++)
			if (i && tp[k].hpid == tp[i].hppid)
				p[i].parent = (int32_t)k;
		if (i && p[i].parent < 0)
			zv_cr_restore_die(NULL, "tree.bin: a process without its parent (damaged image)");
	}
	groups(p, (int)h->nprocs);
	*np = (int)h->nprocs;
	*sh = (const void *)(tp + h->nprocs);
	*nsh = (int)h->nshares;
	return p;
}

/* A process's image: its index, and fds section. */
static void read_image(const char *dir, struct img *m, const struct zv_cr_treeproc *p, const char *build)
{
	char path[4200];
	zv_snprintf(path, sizeof path, "%s/p%d", dir, p->vpid);
	m->in = zv_cr_kalloc(sizeof *m->in);
	if (!m->in)
		zv_cr_restore_die(root_ctx, "out of memory");
	long fd = zv_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0) {
		char why[4300];
		zv_snprintf(why, sizeof why, "%s: %s", path, zv_strerror((int)-fd));
		zv_cr_restore_die(root_ctx, why);
	}
	m->in->dirfd = (int)fd;
	uint64_t len;
	const uint8_t *fds;
	if (zv_cr_read_index(m->in, build) < 0 || (fds = zv_cr_get(m->in, "fds", &len)) == (const void *)-1 || !fds ||
	    zv_cr_fds_parse(m->in, &m->pr, fds, len) < 0) {
		char why[4300];
		zv_snprintf(why, sizeof why, "%s: %s", path, m->in->why[0] ? m->in->why : "no fds section");
		zv_cr_restore_die(root_ctx, why);
	}
}

/* The MAP_SHARED anonymous objects, deleted files and SysV segments the
 * processes' mappings are parts of (cr/shmobj.c). */
static void shared_objects(struct img *m, int nimg, struct zv_cr_treectx *t)
{
	struct zv_cr_buf objs = { 0 };
	for (int i = 0; i < nimg; i++) {
		uint64_t len;
		const char *mm = zv_cr_get(m[i].in, "mm", &len);
		if (mm == (const void *)-1 || !mm)
			zv_cr_restore_die(root_ctx, "a process's mm section is damaged");
		zv_cr_shared_scan(&objs, mm, len, 0);
		zv_cr_release(mm, len);
	}
	char why[256];
	if (zv_cr_shared_make(&objs, t, why, sizeof why) < 0)
		zv_cr_restore_die(root_ctx, why);
}

/* /dev/tty descriptions that processes of a session on a pty of the tree
 * shared: /dev/tty opens only in a session with its terminal, which the
 * restorer's is not. A placeholder holds the number until the session's
 * leader, its terminal its controlling one again, opens it there before
 * it forks the others (lead). */
#define MAX_TTYS 8
static struct {
	int leader, fd;
	const struct zv_cr_fd *rec;
} ttys[MAX_TTYS];
static int nttys;

/* Whether process i is k or descends from it. */
static int descends(const struct zv_cr_treeproc *p, int i, int k)
{
	for (; i >= 0; i = p[i].parent)
		if (i == k)
			return 1;
	return 0;
}

/* The tree index of the leader that opens share a's /dev/tty record r
 * (process i's), or -1 when the restorer makes it as any other. */
static int tty_leader(const struct zv_cr_rctx *c, const struct img *m, int nimg, const struct zv_cr_treeproc *p,
		      int np, const struct zv_cr_tree_share *sh, int nsh, int a, int i, const struct zv_cr_fd *r)
{
	if (r->kind != ZV_CRFD_CHR || zv_strcmp(zv_cr_rec_extra(r), "/dev/tty") || nttys == MAX_TTYS)
		return -1;
	int k = -1, pty = 0;
	for (int j = 0; j < np; j++)
		if (p[j].vpid == p[i].vsid)
			k = j;
	for (unsigned j = 0; j < c->nobjs && k >= 0; j++)
		pty |= c->objs[j].kind == ZV_CRFD_PTM && c->objs[j].rec->u.pty.sid == p[k].vpid;
	if (!pty)
		return -1;
	for (int b = 0; b < nsh; b++) /* every holder is made after the leader's lead */
		for (int j = 0; j < nimg; j++)
			if (sh[b].group == sh[a].group && p[m[j].proc].vpid == sh[b].vpid && !descends(p, m[j].proc, k))
				return -1;
	return k;
}

/* Descriptions the processes shared (kcmp at the checkpoint): the first
 * member's made, the others' the same. */
static void shared_descriptions(struct zv_cr_rctx *c, struct img *m, int nimg, const struct zv_cr_treeproc *p,
				int np, const struct zv_cr_tree_share *sh, int nsh)
{
	for (int a = 0; a < nsh; a++) {
		int first = -1;
		for (int b = 0; b < a && first < 0; b++)
			if (sh[b].group == sh[a].group)
				first = b;
		int pa = -1;
		for (int i = 0; i < nimg; i++)
			if (p[m[i].proc].vpid == sh[a].vpid)
				pa = i;
		if (pa < 0 || !zv_cr_record(c, pa, sh[a].fd))
			continue;
		if (first < 0) { /* the group's first: made if no object stands for it */
			if (zv_cr_made_fd(c, pa, sh[a].fd) >= 0)
				continue;
			const struct zv_cr_fd *r = zv_cr_record(c, pa, sh[a].fd);
			if (r->kind == ZV_CRFD_DUP || r->kind == ZV_CRFD_PIDFD)
				continue; /* a pidfd: each its own once the processes exist */
			int own, self = c->self, k = tty_leader(c, m, nimg, p, np, sh, nsh, a, m[pa].proc, r);
			c->self = pa;
			long fd = k >= 0 ? zv_openat(AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC, 0) : zv_cr_make_fd(c, r, &own);
			if (k >= 0) { /* the placeholder */
				own = 1;
				if (fd < 0)
					zv_cr_restore_die(root_ctx, "cannot open /dev/null");
			}
			c->self = self;
			if (fd < 0)
				die_in(c->in);
			int s = own ? zv_cr_spare(c, (int)fd) : (int)fd;
			if (own)
				zv_close((int)fd);
			if (s < 0 || zv_cr_add_made(c, pa, r->fd, s) < 0)
				die_in(c->in);
			if (k >= 0)
				ttys[nttys++] = (typeof(ttys[0])){ k, s, r };
			continue;
		}
		int pf = -1;
		for (int i = 0; i < nimg; i++)
			if (p[m[i].proc].vpid == sh[first].vpid)
				pf = i;
		int fd = pf >= 0 ? zv_cr_made_fd(c, pf, sh[first].fd) : -1;
		if (fd < 0)
			continue;
		for (unsigned i = 0; i < c->nmade; i++) /* it replaces an end made for itself */
			if (c->made[i].proc == pa && c->made[i].recno == sh[a].fd)
				c->made[i].fd = fd;
		if (zv_cr_made_fd(c, pa, sh[a].fd) < 0 && zv_cr_add_made(c, pa, sh[a].fd, fd) < 0)
			die_in(c->in);
	}
}

/* --- the processes --- */

static struct {
	const char *dir;
	const struct zv_cr_ropts *o;
	struct zv_cr_treeproc *p;
	int n;
	struct img *m;
	int nimg;
	struct zv_cr_rctx *c;
	struct zv_cr_treectx base;
} T;

/* Process i's context: its made descriptions (as process 0's). */
static void ctx_of(int i, struct zv_cr_treectx *t)
{
	*t = T.base;
	t->self = i;
	int live = -1;
	for (int k = 0; k < T.nimg; k++)
		if (T.m[k].proc == i)
			live = k;
	struct zv_cr_made *mine = zv_cr_kalloc((T.c->nmade + 1) * sizeof *mine);
	if (!mine)
		zv_cr_restore_die(t, "out of memory");
	unsigned n = 0;
	for (unsigned k = 0; k < T.c->nmade; k++)
		if (T.c->made[k].proc == live) {
			mine[n] = T.c->made[k];
			mine[n++].proc = 0;
		}
	t->made = mine;
	t->nmade = n;
}

/* Its session and group where it makes them (before its children); a
 * session whose terminal was a pty of the tree (its master's record names
 * the session) has it again as its controlling terminal. */
static void lead(int i, struct zv_cr_treectx *t)
{
	const struct zv_cr_treeproc *p = &T.p[i];
	if (p->group == i && p->vsid != p->vpid)
		zv_sys2(__NR_setpgid, 0, 0);
	if (p->vsid != p->vpid)
		return;
	long made = zv_sys0(__NR_setsid); /* the root may be a group leader already: it keeps its session */
	for (unsigned k = 0; k < T.c->nobjs; k++) {
		const struct zv_cr_obj *o = &T.c->objs[k];
		if (o->kind != ZV_CRFD_PTM || o->rec->u.pty.sid != p->vpid)
			continue;
		if (made < 0 || zv_sys3(__NR_ioctl, o->other, TIOCSCTTY_, 0) < 0)
			zv_cr_restore_die(t, "cannot make a pseudo-terminal its session's controlling terminal again");
		t->ctty_pgrp = o->rec->u.pty.pgrp != p->vpgid ? o->rec->u.pty.pgrp : 0;
	}
	for (int k = 0; k < nttys; k++) {
		if (ttys[k].leader != i)
			continue;
		int own;
		long fd = zv_cr_make_fd(T.c, ttys[k].rec, &own);
		if (fd < 0)
			zv_cr_restore_die(t, T.c->in->why);
		long r = zv_sys3(__NR_dup3, fd, ttys[k].fd, O_CLOEXEC);
		zv_close((int)fd);
		if (r < 0)
			zv_cr_restore_die(t, "cannot put /dev/tty at its number again");
	}
}

static void spawn(int parent);

__attribute__((noreturn)) static void become(int i)
{
	struct zv_cr_treectx t;
	ctx_of(i, &t);
	lead(i, &t);
	T.base.area->p[i].vpid = T.p[i].vpid;
	__atomic_store_n(&T.base.area->p[i].hpid, (int32_t)zv_getpid(), __ATOMIC_RELEASE);
	__atomic_add_fetch(&T.base.area->registered, 1, __ATOMIC_ACQ_REL);
	zv_sys4(__NR_futex, &T.base.area->registered, FUTEX_WAKE, 0x7fffffff, NULL);
	spawn(i);
	if (T.p[i].zombie) {
		int g = T.p[i].group;
		if (g >= 0 && g != i) { /* its group, made by another: joined before it ends */
			wait_for(&t, (volatile int32_t *)&T.base.area->p[g].hpid, 1, "a process of the tree was not made");
			zv_sys2(__NR_setpgid, 0, T.base.area->p[g].hpid);
		}
		int st = T.p[i].status;
		if ((st & 0x7f) && (st & 0x7f) != 0x7f) { /* killed by a signal: again, without a core */
			struct { uint64_t cur, max; } none = { 0, 0 };
			zv_sys4(__NR_prlimit64, 0, 4 /* RLIMIT_CORE */, &none, NULL);
			struct { uint64_t h, f, r, m; } dfl = { 0, 0, 0, 0 };
			zv_sys4(__NR_rt_sigaction, st & 0x7f, &dfl, NULL, 8);
			uint64_t unblock = 1UL << ((st & 0x7f) - 1);
			zv_sys4(__NR_rt_sigprocmask, 1 /* SIG_UNBLOCK */, &unblock, NULL, 8);
			zv_sys2(__NR_kill, zv_getpid(), st & 0x7f);
		}
		zv_exit_group((st >> 8) & 0xff);
	}
	char path[4200];
	zv_snprintf(path, sizeof path, "%s/p%d", T.dir, T.p[i].vpid);
	long dfd = zv_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		zv_cr_restore_die(&t, "a process's image went away");
	zv_cr_restore_dir(path, (int)dfd, T.o, &t);
}

/* Forks parent's children, in the order of their pids. */
static void spawn(int parent)
{
	for (int i = 0; i < T.n; i++) {
		if (T.p[i].parent != parent)
			continue;
		long pid = zv_sys0(__NR_fork);
		if (pid == 0)
			become(i);
		if (pid < 0)
			zv_cr_restore_die(root_ctx, "cannot fork a process of the tree");
	}
}

__attribute__((noreturn)) void zv_cr_restore_tree(const char *dir, int dfd, const struct zv_cr_ropts *o)
{
	struct zv_cr_in *in = zv_cr_kalloc(sizeof *in);
	struct zv_cr_layout l;
	zv_cr_image_layout(&l);
	if (!in)
		zv_cr_restore_die(NULL, "out of memory");
	in->dirfd = dfd;
	if (zv_cr_read_index(in, l.build) < 0)
		die_in(in);
	const struct zv_cr_tree_share *sh;
	int nsh;
	T.dir = dir;
	T.o = o;
	T.p = read_tree(in, &T.n, &sh, &nsh);
	/* the area */
	uint64_t area_len = (sizeof(struct zv_cr_area) + T.n * 8UL + 4095) & ~4095UL;
	struct zv_cr_area *a = zv_mmap((void *)AREA_ADDR, area_len, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if ((uint64_t)a != AREA_ADDR)
		zv_cr_restore_die(NULL, "no room for the tree's shared page");
	a->nprocs = T.n;
	T.base = (struct zv_cr_treectx){ .area = a, .area_len = area_len, .procs = T.p, .nprocs = T.n };
	root_ctx = &T.base;
	/* every process's fds and shared memory */
	T.m = zv_cr_kalloc(T.n * sizeof *T.m);
	for (int i = 0; i < T.n; i++)
		if (!T.p[i].zombie) {
			T.m[T.nimg].proc = i;
			read_image(dir, &T.m[T.nimg++], &T.p[i], l.build);
		}
	a->nlive = T.nimg;
	shared_objects(T.m, T.nimg, &T.base);
	struct zv_cr_precs *pr = zv_cr_kalloc(T.nimg * sizeof *pr);
	for (int i = 0; i < T.nimg; i++)
		pr[i] = T.m[i].pr;
	static struct zv_cr_rctx c;
	c = (struct zv_cr_rctx){ .in = in, .procs = pr, .nprocs = T.nimg, .next_spare = 3, .stdio = { -1, -1, -1 } };
	T.c = &c;
	if (zv_cr_fds_prepare(&c, o->inherit, o->ninherit) < 0 || zv_cr_objects_make(&c) < 0)
		die_in(in);
	shared_descriptions(&c, T.m, T.nimg, T.p, T.n, sh, nsh);
	for (int i = 0; i < T.nimg; i++)
		zv_close(T.m[i].in->dirfd);
	/* the tree, from its root: this process */
	become(0);
}

/* --- a process of a tree: cr/restore.c's hooks --- */

uint64_t zv_cr_treectx_size(const struct zv_cr_treectx *t)
{
	return ((t->nprocs * sizeof *t->procs + 4095) & ~4095UL) + ((t->nmade * sizeof *t->made + 4095) & ~4095UL) +
	       ((t->nshanon * sizeof *t->shanon + 4095) & ~4095UL) + 3 * 4096;
}

void zv_cr_treectx_copy(struct zv_cr_in *in, const struct zv_cr_treectx *t, struct zv_cr_treectx *out)
{
	*out = *t;
	void *p = zv_cr_alloc(in, t->nprocs * sizeof *t->procs + 1), *m = zv_cr_alloc(in, t->nmade * sizeof *t->made + 1),
	     *s = zv_cr_alloc(in, t->nshanon * sizeof *t->shanon + 1);
	if (!p || !m || !s)
		zv_cr_restore_die(t, "out of memory");
	memcpy(p, t->procs, t->nprocs * sizeof *t->procs);
	memcpy(m, t->made, t->nmade * sizeof *t->made);
	memcpy(s, t->shanon, t->nshanon * sizeof *t->shanon);
	out->procs = p;
	out->made = m;
	out->shanon = s;
}

int zv_cr_tree_keeps(const struct zv_cr_treectx *t, uint64_t lo, uint64_t hi)
{
	if (t->area && lo >= (uint64_t)t->area && hi <= (uint64_t)t->area + t->area_len)
		return 1;
	for (unsigned i = 0; i < t->nshanon; i++)
		if (lo >= t->shanon[i].addr && hi <= t->shanon[i].addr + t->shanon[i].len)
			return 1;
	return 0;
}

int zv_cr_tree_map_shared(const struct zv_cr_treectx *t, uint64_t start, uint64_t end, uint64_t off, uint32_t kind,
			  uint64_t ino)
{
	for (unsigned i = 0; i < t->nshanon; i++)
		if (t->shanon[i].kind == kind && t->shanon[i].ino == ino && off + (end - start) <= t->shanon[i].len) {
			long r = zv_sys5(__NR_mremap, t->shanon[i].addr + off, 0, end - start, MREMAP_MAYMOVE | MREMAP_FIXED, start);
			if (r != (long)start)
				zv_cr_restore_die(t, "cannot map the tree's shared memory again");
			return 1;
		}
	return 0;
}

void zv_cr_tree_memory_done(const struct zv_cr_treectx *t)
{
	for (unsigned i = 0; i < t->nshanon; i++)
		zv_munmap((void *)t->shanon[i].addr, t->shanon[i].len);
}

/* The host's id of process i's group: the one the process that made it
 * leads, or the restorer's (the root's, kept). */
static int host_group_of(const struct zv_cr_treectx *t, int i)
{
	const struct zv_cr_treeproc *p = t->procs;
	while (i >= 0 && p[i].group < 0) /* a kept group is its parent's: up to the one that made it */
		i = p[i].parent;
	return i >= 0 ? t->area->p[p[i].group].hpid : (int)zv_sys1(__NR_getpgid, t->area->p[0].hpid);
}

/* The host's id of group g (as the programs see it), or -1. */
static int host_group(const struct zv_cr_treectx *t, int g)
{
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i].vpgid == g)
			return host_group_of(t, i);
	return -1;
}

/* A session leader's terminal's foreground group, set through /dev/tty
 * (its fds are the image's by now); signals are blocked: no SIGTTOU. */
static void foreground(const struct zv_cr_treectx *t)
{
	int g = host_group(t, t->ctty_pgrp);
	long fd = g > 0 ? zv_openat(AT_FDCWD, "/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC, 0) : -ENOENT;
	long r = fd < 0 ? fd : zv_sys3(__NR_ioctl, fd, TIOCSPGRP_, &g);
	if (fd >= 0)
		zv_close((int)fd);
	if (r < 0 && g > 0)
		zv_cr_restore_die(t, "cannot give a restored terminal its foreground process group");
}

void zv_cr_tree_join(const struct zv_cr_treectx *t)
{
	if (!t->area)
		return;
	struct zv_cr_area *a = t->area;
	wait_for(t, &a->registered, t->nprocs, "a process of the tree was not made");
	const struct zv_cr_treeproc *p = t->procs, *me = &p[t->self];
	/* its group, made by another */
	if (me->group >= 0 && me->group != t->self && me->vsid != me->vpid)
		zv_sys2(__NR_setpgid, 0, a->p[me->group].hpid);
	/* the ids: the others', the groups' and sessions' (the root's, when
	 * they are not the tree's own, are the restorer's), the root's parent */
	int root_h = a->p[0].hpid;
	for (int i = 0; i < t->nprocs; i++) {
		if (i != t->self)
			zv_cr_ids_add(p[i].vpid, a->p[i].hpid, 0);
		zv_cr_ids_add(p[i].vpgid, host_group_of(t, i), 1);
		int s = -1;
		for (int k = 0; k < t->nprocs; k++)
			if (p[k].vpid == p[i].vsid)
				s = k;
		zv_cr_ids_add(p[i].vsid, s >= 0 ? a->p[s].hpid : (int)zv_sys1(__NR_getsid, root_h), 1);
	}
	if (t->self == 0 && me->vppid > 0)
		zv_cr_ids_add(me->vppid, (int)zv_sys0(__NR_getppid), 0);
	if (t->ctty_pgrp) /* its terminal's foreground group, which exists now */
		foreground(t);
}

void zv_cr_tree_ready(const struct zv_cr_treectx *t)
{
	if (!t->area)
		return;
	struct zv_cr_area *a = t->area;
	/* its zombie children must have ended, and their SIGCHLD (held: all
	 * is blocked) is not the program's: it had it before the checkpoint */
	for (int i = 0; i < t->nprocs; i++)
		if (t->procs[i].parent == t->self && t->procs[i].zombie) {
			uint8_t si[128];
			zv_sys5(__NR_waitid, 1 /* P_PID */, a->p[i].hpid, si, 4 /* WEXITED */ | 0x01000000 /* WNOWAIT */, NULL);
		}
	uint64_t chld = 1UL << 16;
	struct { long s, ns; } now = { 0, 0 };
	uint8_t si[128];
	while (zv_sys4(__NR_rt_sigtimedwait, &chld, si, &now, 8) > 0)
		;
	__atomic_add_fetch(&a->ready, 1, __ATOMIC_ACQ_REL);
	zv_sys4(__NR_futex, &a->ready, FUTEX_WAKE, 0x7fffffff, NULL);
	wait_for(t, &a->ready, a->nlive, "a process of the tree was not restored");
}
