/* `zvisor restore DIR`: the process becomes the one the image saved. The
 * image is read and checked into scratch memory placed where the saved
 * address space has a hole; this process's own mappings go (all but the
 * kernel image, the scratch and the vDSO, which moves where the guest saw
 * it); the saved mappings come back; the kernel's data is copied over its
 * own; then the host's side is re-made (fds, timers, signal actions, the
 * platform) and each thread, a new host thread, resumes where it parked
 * (cr/freeze.c) on its own kernel stack. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/memory.h"
#include "cr/resources.h"
#include "cr/stream.h"
#include "cr/restore.h"
#include "cr/lazy.h"
#include "sys/fdflags.h"
#include "sys/layer.h"
#include "sys/procself.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "sys/txtbusy.h"
#include <linux/mman.h>
#include <linux/fcntl.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <asm/stat.h>

#define PAGE 4096UL

/* A tree's process: its context, for a failure to reach the tree. */
static const struct zv_cr_treectx *cur_tree;

__attribute__((noreturn)) static void fail(struct zv_cr_in *in)
{
	zv_cr_restore_die(cur_tree, in->why);
}

/* --- the hole: scratch memory where the saved layout has none --- */

int zv_cr_overlaps_saved(const char *mm, uint64_t mmlen, uint64_t lo, uint64_t hi, int version)
{
	for (const char *p = mm; p + ZV_CR_VMA1_SIZE <= mm + mmlen;) {
		const struct zv_cr_vma *v = (const void *)p;
		if (lo < v->end && hi > v->start)
			return 1;
		p = version == 1 ? zv_cr_vma_next(v) - (sizeof *v - ZV_CR_VMA1_SIZE) : zv_cr_vma_next(v);
	}
	return lo < ZV_KWIN_END && hi > ZV_KWIN_START;
}

uint64_t zv_cr_place_hole(struct zv_cr_in *in, const char *mm, uint64_t mmlen, uint64_t len)
{
	for (uint64_t at = 0x600000000000UL; at > 0x10000000000UL; at -= 0x10000000000UL) {
		if (zv_cr_overlaps_saved(mm, mmlen, at, at + len, in->version))
			continue;
		void *p = zv_mmap((void *)at, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if ((uint64_t)p == at)
			return at;
		if (!zv_is_err((long)p))
			zv_munmap(p, len);
	}
	return 0;
}

/* --- this process's mappings --- */

/* Unmaps every mapping of this process but the kernel image, the hole and
 * the vDSO's (and [vsyscall], which cannot go). */
static void clear_own(struct zv_cr_restore *r)
{
	uint64_t cap = 1UL << 20;
	char *buf = zv_cr_alloc(r->in, cap);
	long fd = zv_openat(-100, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	uint64_t used = 0;
	long n;
	while (fd >= 0 && used + 1 < cap && (n = zv_read((int)fd, buf + used, cap - 1 - used)) > 0)
		used += (uint64_t)n;
	zv_close((int)fd);
	buf[used] = 0;
	static struct zv_cr_mapline m ZV_COLD_BSS; /* kernel bss: this runs before the copy */
	uint64_t drop[64][2];
	int nd = 0;
	for (const char *p = buf; nd < 64 && zv_cr_maps_next(&p, &m) == 0;) {
		if ((m.lo >= r->layout.lo && m.hi <= r->layout.hi) || (m.lo >= r->hole && m.hi <= r->hole + r->hole_len) ||
		    zv_cr_tree_keeps(&r->tree, m.lo, m.hi))
			continue;
		if (!zv_strcmp(m.path, "[vsyscall]") || !zv_strcmp(m.path, "[vdso]") || zv_startswith(m.path, "[vvar")) {
			if (r->nown < 8) {
				r->own[r->nown].lo = m.lo;
				r->own[r->nown].hi = m.hi;
				zv_strlcpy(r->own[r->nown].name, m.path, sizeof r->own[0].name);
				r->nown++;
			}
			continue;
		}
		drop[nd][0] = m.lo;
		drop[nd][1] = m.hi;
		nd++;
	}
	for (int i = 0; i < nd; i++)
		zv_munmap((void *)drop[i][0], drop[i][1] - drop[i][0]);
}

/* --- the saved mappings --- */

/* Reading "pages": in file order, each mapping's runs from its pages_off
 * (placed or one after the other); a compressed section is a stream that
 * only goes forward. The hash covers the bytes of the runs, not the holes
 * between placed pages: it is checked when every run was read, so not
 * when placed mappings were mapped from the file instead. */
struct pager {
	int fd;
	int stream;           /* zstd's pipe */
	int lazy;             /* placed anonymous mappings are mapped from the file */
	int skipped;          /* some runs were not read */
	uint64_t pos;         /* the file offset of the next byte read */
	char *scratch;        /* for the holes a stream holds */
	struct zv_cr_hasher h;
};
#define SCRATCH (1UL << 20)

static void seek_to(struct zv_cr_restore *r, struct pager *pg, uint64_t off)
{
	struct zv_cr_in *in = r->in;
	if (off == pg->pos)
		return;
	if (!pg->stream) {
		if (zv_sys3(__NR_lseek, pg->fd, (long)off, 0 /* SEEK_SET */) != (long)off) {
			zv_snprintf(in->why, sizeof in->why, "%s: cannot seek (damaged image)", r->pages_file);
			fail(in);
		}
		pg->pos = off;
		return;
	}
	while (pg->pos < off) {
		uint64_t k = off - pg->pos < SCRATCH ? off - pg->pos : SCRATCH;
		long n = zv_read(pg->fd, pg->scratch, k);
		if (n == -EINTR)
			continue;
		if (n <= 0 || off < pg->pos) {
			zv_snprintf(in->why, sizeof in->why, "%s: short (damaged image)", r->pages_file);
			fail(in);
		}
		pg->pos += (uint64_t)n;
	}
	if (pg->pos != off) {
		zv_snprintf(in->why, sizeof in->why, "%s: runs out of order (damaged image)", r->pages_file);
		fail(in);
	}
}

/* A placed anonymous mapping mapped from the image: its pages are read
 * when touched (cr/lazy.h). */
static int map_lazily(struct zv_cr_restore *r, struct pager *pg, const struct zv_cr_vma *v)
{
	if (!pg->lazy || v->kind != ZV_CR_ANON || !(v->flags & ZV_CR_VMA_PLACED) || r->nlazy == r->maxlazy)
		return 0;
	void *p = zv_mmap((void *)v->start, v->end - v->start, (int)v->prot, MAP_PRIVATE | MAP_FIXED, pg->fd,
			  (long)v->pages_off);
	if ((uint64_t)p != v->start)
		return 0;
	r->lazy[r->nlazy][0] = v->start;
	r->lazy[r->nlazy][1] = v->end;
	r->nlazy++;
	pg->skipped = 1;
	return 1;
}

static void map_one(struct zv_cr_restore *r, const struct zv_cr_vma *v, const char *path, const struct zv_cr_run *runs,
		    struct pager *pg)
{
	struct zv_cr_in *in = r->in;
	uint64_t len = v->end - v->start;
	int prot = (int)v->prot;
	void *p;
	if (map_lazily(r, pg, v))
		return;
	if (v->kind == ZV_CR_FILE || v->kind == ZV_CR_SHFILE) {
		struct zv_cr_stat st;
		if (zv_cr_stat_path(path, &st) < 0 || st.size != v->fsize || st.mtime_s != v->mtime_s ||
		    st.mtime_ns != v->mtime_ns) {
			zv_snprintf(in->why, sizeof in->why, "%s is gone or changed since the checkpoint", path);
			fail(in);
		}
		int shared = v->kind == ZV_CR_SHFILE;
		long fd = zv_openat(-100, path, (shared && (prot & PROT_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
		if (fd < 0) {
			zv_snprintf(in->why, sizeof in->why, "cannot open %s: %s", path, zv_strerror((int)-fd));
			fail(in);
		}
		p = zv_mmap((void *)v->start, len, shared ? prot : prot | PROT_WRITE,
			    (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED, (int)fd, (long)v->off);
		zv_close((int)fd);
	} else if ((v->kind == ZV_CR_SHANON || v->kind == ZV_CR_SHDEL || v->kind == ZV_CR_SYSV) &&
		   zv_cr_tree_map_shared(&r->tree, v->start, v->end, v->off, v->kind, v->fsize)) {
		p = (void *)v->start; /* a part of the tree's shared object (its pages come with every process's) */
	} else if (v->kind == ZV_CR_SYSV) {
		zv_snprintf(in->why, sizeof in->why, "SysV shared memory at %lx was not made (damaged image)",
			    (unsigned long)v->start);
		fail(in);
	} else {
		int flags = (v->kind == ZV_CR_SHANON || v->kind == ZV_CR_SHDEL ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_FIXED |
			    (v->kind == ZV_CR_STACK ? MAP_GROWSDOWN : 0);
		p = zv_mmap((void *)v->start, len, prot | PROT_WRITE | PROT_READ, flags, -1, 0);
	}
	if ((uint64_t)p != v->start) {
		zv_snprintf(in->why, sizeof in->why, "cannot map %lx-%lx: %s", (unsigned long)v->start, (unsigned long)v->end,
			    zv_strerror(zv_is_err((long)p) ? (int)-(long)p : EEXIST));
		fail(in);
	}
	uint64_t at = v->pages_off;
	for (uint64_t i = 0; i < v->nruns; i++) {
		uint64_t n = runs[i].npages * PAGE;
		seek_to(r, pg, (v->flags & ZV_CR_VMA_PLACED) ? v->pages_off + (runs[i].addr - v->start) : at);
		/* one call allocates the run's pages: a fault per page costs far
		 * more, on a VM most of all (a direct read pins, so allocates,
		 * them itself) */
		if (!r->direct)
			zv_sys3(__NR_madvise, runs[i].addr, n, 23 /* MADV_POPULATE_WRITE */);
		if (zv_cr_read_into(in, pg->fd, (void *)runs[i].addr, n, &pg->h, r->pages_file) < 0)
			fail(in);
		pg->pos += n;
		at = pg->pos;
	}
	if (v->kind != ZV_CR_SHFILE)
		zv_mprotect((void *)v->start, len, prot);
	if (v->kind == ZV_CR_STACK) {
		r->stack_lo = v->start;
		r->stack_hi = v->end;
	}
}

/* Whether the image may be mapped: not with --eager, nor from a stream,
 * nor from a noexec filesystem (the guest may make such memory
 * executable later, which a file there refuses). Notes the file. */
static int may_map(struct zv_cr_restore *r, int fd, const struct zv_cr_section *sec)
{
	struct { long type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags, spare[5]; } fs;
	struct stat st;
	if (r->eager || r->in->version < 2 || sec->zstd || zv_sys2(__NR_fstatfs, fd, &fs) < 0 ||
	    (fs.flags & 8 /* ST_NOEXEC */) || zv_sys2(__NR_fstat, fd, &st) < 0)
		return 0;
	char link[48];
	zv_snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	long n = zv_sys4(__NR_readlinkat, -100, link, r->lazy_path, 4095);
	if (n <= 0 || r->lazy_path[0] != '/')
		return 0;
	r->lazy_path[n] = 0;
	r->lazy_dev = st.st_dev;
	r->lazy_ino = st.st_ino;
	return 1;
}

static void place_memory(struct zv_cr_restore *r)
{
	struct zv_cr_in *in = r->in;
	const struct zv_cr_section *sec;
	long fd = zv_cr_open_section(in, "pages", &sec);
	if (fd < 0) {
		if (fd == -ENOENT)
			zv_snprintf(in->why, sizeof in->why, "no pages section (damaged image)");
		fail(in);
	}
	struct pager pg = { .fd = (int)fd, .stream = sec->zstd };
	r->pages_file = sec->zstd ? "pages.bin.zst" : "pages.bin";
	r->lazy_path = zv_cr_alloc(in, 4096);
	r->maxlazy = 4096;
	r->lazy = zv_cr_alloc(in, r->maxlazy * sizeof *r->lazy);
	pg.scratch = sec->zstd ? zv_cr_alloc(in, SCRATCH) : NULL;
	if (!r->lazy_path || !r->lazy || (sec->zstd && !pg.scratch)) {
		zv_snprintf(in->why, sizeof in->why, "out of memory");
		fail(in);
	}
	pg.lazy = may_map(r, (int)fd, sec);
	/* Whole pages into page-aligned memory: read past the page cache too
	 * (the checkpoint wrote them so); the hash is taken from the memory. */
	if (!pg.lazy && !sec->zstd && sec->size >= ZV_CR_DIRECT_BYTES) {
		long fl = zv_sys3(__NR_fcntl, fd, F_GETFL, 0);
		r->direct = fl >= 0 && zv_sys3(__NR_fcntl, fd, F_SETFL, fl | O_DIRECT) == 0;
	}
	zv_cr_hash_init(&pg.h, 0);
	for (const char *p = r->mm; p < r->mm + r->mmlen;) {
		const struct zv_cr_vma *v = (const void *)p;
		p = zv_cr_vma_next(v);
		if (v->kind != ZV_CR_VDSO && v->kind != ZV_CR_VVAR && v->kind != ZV_CR_SHMEMFD)
			map_one(r, v, zv_cr_vma_path(v), zv_cr_vma_runs(v), &pg);
	}
	if (pg.stream)
		seek_to(r, &pg, sec->size); /* zstd writes all it has before its status counts */
	zv_close((int)fd);
	if (!pg.skipped && zv_cr_check_hash(in, sec, &pg.h) < 0)
		fail(in);
	zv_cr_tree_memory_done(&r->tree);
}

/* Shared mappings of memfds, from the fds that hold them again. */
static void map_memfds(struct zv_cr_restore *r)
{
	for (const char *p = r->mm; p < r->mm + r->mmlen;) {
		const struct zv_cr_vma *v = (const void *)p;
		p = zv_cr_vma_next(v);
		if (v->kind != ZV_CR_SHMEMFD)
			continue;
		long fd = zv_cr_memfd_fd(r->in, v->fsize);
		void *m = fd < 0 ? (void *)-EBADF
				 : zv_mmap((void *)v->start, v->end - v->start, (int)v->prot, MAP_SHARED | MAP_FIXED, (int)fd,
					   (long)v->off);
		if ((uint64_t)m != v->start) {
			zv_snprintf(r->in->why, sizeof r->in->why, "cannot map the memfd at %lx again", (unsigned long)v->start);
			fail(r->in);
		}
	}
}

/* Version 1's records, without pages_off and flags, into this version's:
 * their pages follow each other in record order. */
static void from_version1(struct zv_cr_restore *r)
{
	struct zv_cr_in *in = r->in;
	uint64_t n = 0, off = 0;
	for (const char *p = r->mm; p + ZV_CR_VMA1_SIZE <= r->mm + r->mmlen; n++) {
		const struct zv_cr_vma *v = (const void *)p; /* the common part */
		uint64_t path = v->pathlen ? (v->pathlen + 8) & ~7UL : 0;
		p += ZV_CR_VMA1_SIZE + path + v->nruns * sizeof(struct zv_cr_run);
	}
	uint64_t len = r->mmlen + n * (sizeof(struct zv_cr_vma) - ZV_CR_VMA1_SIZE);
	char *out = zv_cr_alloc(in, len), *o = out;
	if (!out) {
		zv_snprintf(in->why, sizeof in->why, "out of memory");
		fail(in);
	}
	for (const char *p = r->mm; p + ZV_CR_VMA1_SIZE <= r->mm + r->mmlen;) {
		struct zv_cr_vma *v = (void *)o;
		memcpy(v, p, ZV_CR_VMA1_SIZE);
		v->pages_off = off;
		v->flags = v->nattch = 0;
		uint64_t rest = (v->pathlen ? (v->pathlen + 8) & ~7UL : 0) + v->nruns * sizeof(struct zv_cr_run);
		if (p + ZV_CR_VMA1_SIZE + rest > r->mm + r->mmlen)
			break; /* read_layout says so */
		memcpy(v + 1, p + ZV_CR_VMA1_SIZE, rest);
		for (uint64_t i = 0; i < v->nruns; i++)
			off += zv_cr_vma_runs(v)[i].npages * PAGE;
		p += ZV_CR_VMA1_SIZE + rest;
		o += sizeof *v + rest;
	}
	r->mm = out;
	r->mmlen = (uint64_t)(o - out);
}

/* Reads "mm" and notes where the guest had the vDSO. */
static void read_layout(struct zv_cr_restore *r)
{
	struct zv_cr_in *in = r->in;
	r->mm = zv_cr_get(in, "mm", &r->mmlen);
	if (!r->mm || r->mm == (void *)-1) {
		if (!r->mm)
			zv_snprintf(in->why, sizeof in->why, "no mm section (damaged image)");
		fail(in);
	}
	if (in->version == 1)
		from_version1(r);
	for (const char *p = r->mm; p < r->mm + r->mmlen;) {
		const struct zv_cr_vma *v = (const void *)p;
		if ((v->kind == ZV_CR_VDSO || v->kind == ZV_CR_VVAR) && r->nvdso < 8) {
			r->vdso[r->nvdso].lo = v->start;
			r->vdso[r->nvdso].hi = v->end;
			const char *name = v->kind == ZV_CR_VDSO ? "[vdso]" : "[vvar]";
			/* [vvar] and [vvar_vclock] (Linux 6.13+): told apart by order */
			if (v->kind == ZV_CR_VVAR && r->nvdso && r->vdso[r->nvdso - 1].hi == v->start &&
			    !zv_strcmp(r->vdso[r->nvdso - 1].name, "[vvar]"))
				name = "[vvar_vclock]";
			zv_strlcpy(r->vdso[r->nvdso].name, name, sizeof r->vdso[0].name);
			r->nvdso++;
		}
		p = zv_cr_vma_next(v);
		if (p > r->mm + r->mmlen) {
			zv_snprintf(in->why, sizeof in->why, "mm.bin: damaged records");
			fail(in);
		}
	}
}

/* --- threads --- */

/* A restored thread's host side, then the jump to where it parked. */
__attribute__((noreturn)) static void resume(struct zv_thread *t, int leader)
{
	struct zv_stack ss = zv_kernel_stack(t);
	zv_sys2(__NR_sigaltstack, &ss, NULL);
	t->htid = (int)zv_gettid();
	zv_thread_known(t);
	zv_sys2(__NR_arch_prctl, 0x1002 /* ARCH_SET_FS */, t->cr.fs);
	if (zv_plat->arm_thread(t) < 0)
		zv_die(1, "restore: cannot arm the %s platform", zv_plat->name);
	if (t->cr.robust_head)
		zv_sys2(__NR_set_robust_list, t->cr.robust_head, t->cr.robust_len);
	if (t->cr.tid_addr)
		zv_sys1(__NR_set_tid_address, t->cr.tid_addr);
	if (t->cr.rseq) /* the area's cpu_id says RSEQ_CPU_ID_UNINITIALIZED until the host fills it */
		zv_sys4(__NR_rseq, t->cr.rseq, t->cr.rseq_len, 0, t->cr.rseq_sig);
	zv_sys2(__NR_prctl, 15 /* PR_SET_NAME */, t->cr.comm);
	/* What the host held pending: pending again (all is blocked until the
	 * park's end puts the thread's mask back). */
	for (int sig = 1; sig <= 64; sig++) {
		if (t->cr.pending & ZV_SIGBIT(sig))
			zv_sys3(__NR_tgkill, zv_proc.hpid, t->htid, sig);
		if (leader && (zv_cr.shared_pending & ZV_SIGBIT(sig)))
			zv_sys2(__NR_kill, zv_proc.hpid, sig);
	}
	if (leader) {
		__atomic_store_n(&zv_cr.go, 1, __ATOMIC_RELEASE);
		zv_sys3(__NR_futex, &zv_cr.go, FUTEX_WAKE_PRIVATE, 0x7fffffff);
	} else {
		while (!__atomic_load_n(&zv_cr.go, __ATOMIC_ACQUIRE))
			zv_sys4(__NR_futex, &zv_cr.go, FUTEX_WAIT_PRIVATE, 0, NULL);
	}
	zv_cr_longjmp(t->cr.jmp);
}

static void resume_child(void)
{
	resume(zv_current(), 0); /* its first stack is low in its own block */
}

/* The host tid now of the thread whose host tid was old at the checkpoint
 * (cr/timers.c: a timer aimed at a thread). */
int zv_cr_thread_tid(int old)
{
	for (int i = 0; i < zv_cr.nthreads; i++)
		if (zv_cr.threads[i]->cr.old_htid == old)
			return zv_cr.threads[i]->htid;
	return old;
}

/* The threads are made first, waiting (zv_cr.go) before any guest code:
 * timers may be aimed at them. */
__attribute__((noreturn)) static void start_threads(struct zv_cr_restore *r)
{
	struct zv_thread *leader = zv_cr.threads[0];
	for (int i = 0; i < zv_cr.nthreads; i++)
		if (zv_cr.threads[i]->tid == zv_proc.pid)
			leader = zv_cr.threads[i];
	zv_cr.hole_leader = leader;
	for (int i = 0; i < zv_cr.nthreads; i++) {
		struct zv_thread *t = zv_cr.threads[i];
		if (t == leader)
			continue;
		void *sp = (char *)(zv_block_of(t) + ZV_BLOCK_GUARD + 32768);
		long e = zv_clone_raw(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, sp,
				      NULL, NULL, 0, resume_child);
		if (e < 0) {
			zv_snprintf(r->in->why, sizeof r->in->why, "cannot start a thread: %s", zv_strerror((int)-e));
			fail(r->in);
		}
		t->htid = (int)e;
		/* its ids in the table, not by its block: the block goes when
		 * the thread ends, and the program may still name it */
		zv_cr_ids_add(t->tid, t->htid, 0);
	}
	leader->htid = (int)zv_gettid();
	/* The timers (the cwd first), the fds, the timers aimed at threads,
	 * before any guest code; then the image is done with. */
	if (zv_cr_restore_timers(r->in) < 0 ||
	    zv_cr_restore_fds(r->in, r->inherit, r->ninherit, r->tree.area ? r->tree.made : NULL, r->tree.nmade) < 0 ||
	    zv_cr_restore_thread_timers(r->in) < 0)
		fail(r->in);
	map_memfds(r);
	zv_close(r->in->dirfd);
	if (zv_cr.nthreads > 1)
		zv_procself_before_sharing(); /* while the other threads wait */
	if (r->relocated) {
		zv_vdso_relocated(leader, (uint8_t *)r->guest_vdso, (uint8_t *)r->host_vdso);
		zv_time_continue(r->meta.mono, r->meta.boot);
		zv_layers_fold(); /* the time calls now pass virtual time */
	}
	zv_cr_tree_ready(&r->tree); /* a tree's processes resume together */
	if (r->in->errfd > 2) /* the restore can fail no more: the guest must not see it */
		zv_close(r->in->errfd);
	r->in->errfd = -1;
	zv_cr_errfd = 0;
	resume(leader, 1);
}

/* Signal actions, the platform and the routes of calls, as the restored
 * kernel's tables say. */
static void rearm_process(void)
{
	zv_proc.seccomp_installed = 0;
	long e = zv_proc.platform == ZV_PLAT_ZPOLINE ? zv_catchall_install() : zv_platform_install();
	if (e < 0)
		zv_die(1, "restore: cannot install the %s platform: %s", zv_plat->name, zv_strerror((int)-e));
	zv_signals_reinstall(&zv_proc.sighand);
	zv_layers_fold();
}

/* Runs on the hole's stack: nothing of this process's old stack is used. */
__attribute__((noreturn)) void zv_cr_restore_stage2(void *arg)
{
	struct zv_cr_restore *r = arg;
	struct zv_cr_in *in = r->in;
	cur_tree = &r->tree;
	read_layout(r);
	clear_own(r);
	zv_cr_place_vdso(r);
	place_memory(r);
	uint64_t klen;
	const void *kdata = zv_cr_get(in, "kdata", &klen);
	if (!kdata || kdata == (void *)-1 || klen != r->layout.rw_hi - r->layout.rw_lo) {
		if (kdata != (void *)-1)
			zv_snprintf(in->why, sizeof in->why, "kdata.bin: wrong size (damaged image)");
		fail(in);
	}
	/* The kernel's data becomes the saved one: from here on every global
	 * is the checkpointed process's. */
	memcpy((void *)r->layout.rw_lo, kdata, klen);
	zv_cr.busy = 0;
	zv_cr.parked = 0;
	zv_cr.go = 0;
	zv_cr.restored = 1;
	zv_cr.session = -1;
	zv_cr_forget_resets(); /* the dumper's notes, saved with its data */
	zv_proc.exec_needs_host |= ZV_EXEC_NEEDS_HOST_RESTORED; /* its stack and ids are not an image's */
	zv_fdflags_lose(); /* its fds are remade, not followed call by call */
	zv_procself_restored(); /* the dumper's /proc/self fds were left out */
	zv_txt_restored(); /* its program file refuses writes again */
	zv_cr.area = (uint64_t)r->tree.area;
	zv_cr.area_len = r->tree.area_len;
	cur_tree = &r->tree; /* the image's statics replaced this module's too */
	zv_cr_errfd = in->errfd;
	zv_cr.ids = NULL; /* the image's kernel knew another restore's */
	zv_cr_sysv_ids(&r->tree);
	if (r->tree.area) {
		zv_cr_tree_join(&r->tree); /* a tree's ids and groups */
	} else {
		if (r->meta.ppid > 0) /* its parent: the restorer's */
			zv_cr_ids_add(r->meta.ppid, (int)zv_sys0(__NR_getppid), 0);
		if (r->meta.sid > 0) /* its session and group: the restorer's */
			zv_cr_ids_add(r->meta.sid, (int)zv_sys1(__NR_getsid, 0), 1);
		if (r->meta.pgid > 0 && r->meta.pgid != r->meta.sid)
			zv_cr_ids_add(r->meta.pgid, (int)zv_sys1(__NR_getpgid, 0), 1);
	}
	zv_cr.hole = r->hole;
	zv_cr.hole_len = r->hole_len;
	memset(zv_cr.scratch, 0, sizeof zv_cr.scratch);
	zv_procview_stack(r->stack_lo, r->stack_hi); /* the guest's maps name it [stack] */
	zv_cr_lazy_adopt(r->lazy_dev, r->lazy_ino, r->lazy_path, (const uint64_t(*)[2])r->lazy, r->nlazy);
	zv_proc.hpid = (int)zv_getpid();
	/* its own pair too: a child it forks (whose zv_proc is its own) knows
	 * it by this id ($$ in a subshell, getppid) */
	zv_cr_ids_add(zv_proc.pid, zv_proc.hpid, 0);
	rearm_process();
	start_threads(r);
}
