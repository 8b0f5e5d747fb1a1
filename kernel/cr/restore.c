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
#include "sys/layer.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/mman.h>
#include <linux/fcntl.h>
#include <linux/futex.h>
#include <linux/sched.h>

#define PAGE 4096UL

__attribute__((noreturn)) static void fail(struct zv_cr_in *in)
{
	zv_dprintf(2, "zvisor: restore: %s\n", in->why);
	zv_exit_group(1);
}

/* --- the hole: scratch memory where the saved layout has none --- */

static int overlaps_saved(const char *mm, uint64_t mmlen, uint64_t lo, uint64_t hi)
{
	for (const char *p = mm; p < mm + mmlen;) {
		const struct zv_cr_vma *v = (const void *)p;
		if (lo < v->end && hi > v->start)
			return 1;
		p = zv_cr_vma_next(v);
	}
	return lo < ZV_KWIN_END && hi > ZV_KWIN_START;
}

uint64_t zv_cr_place_hole(struct zv_cr_in *in, const char *mm, uint64_t mmlen, uint64_t len)
{
	for (uint64_t at = 0x600000000000UL; at > 0x10000000000UL; at -= 0x10000000000UL) {
		if (overlaps_saved(mm, mmlen, at, at + len))
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
		if ((m.lo >= r->layout.lo && m.hi <= r->layout.hi) || (m.lo >= r->hole && m.hi <= r->hole + r->hole_len))
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

/* The GNU build id of a vDSO image, or 0 bytes. */
static int build_id(const uint8_t *img, uint64_t len, uint8_t out[64])
{
	const uint8_t *eh = img;
	if (len < 64 || eh[0] != 0x7f || eh[1] != 'E')
		return 0;
	uint64_t phoff = *(const uint64_t *)(eh + 32);
	uint16_t phnum = *(const uint16_t *)(eh + 56);
	for (int i = 0; i < phnum && phoff + (i + 1) * 56UL <= len; i++) {
		const uint8_t *ph = img + phoff + i * 56UL;
		if (*(const uint32_t *)ph != 4 /* PT_NOTE */)
			continue;
		uint64_t off = *(const uint64_t *)(ph + 8), sz = *(const uint64_t *)(ph + 32);
		for (uint64_t p = off; p + 12 <= off + sz && p + 12 <= len;) {
			uint32_t namesz = *(const uint32_t *)(img + p), descsz = *(const uint32_t *)(img + p + 4),
				 type = *(const uint32_t *)(img + p + 8);
			uint64_t desc = p + 12 + ((namesz + 3) & ~3U);
			if (type == 3 && descsz <= 64 && desc + descsz <= len) {
				memcpy(out, img + desc, descsz);
				return (int)descsz;
			}
			p = desc + ((descsz + 3) & ~3U);
		}
	}
	return 0;
}

/* Another host's vDSO, or another boot's clocks: the guest keeps its copy
 * (as memory; its data pages read as zeros), and this host's goes to a
 * place the saved layout leaves free. zv_vdso_relocated and
 * zv_time_continue finish it once the kernel's data is back. */
static void relocate_vdso(struct zv_cr_restore *r, const uint8_t *saved, uint64_t vlen)
{
	struct zv_cr_in *in = r->in;
	uint64_t lo = ~0UL, hi = 0;
	for (int i = 0; i < r->nown; i++)
		if (zv_strcmp(r->own[i].name, "[vsyscall]")) {
			lo = r->own[i].lo < lo ? r->own[i].lo : lo;
			hi = r->own[i].hi > hi ? r->own[i].hi : hi;
		}
	r->host_vdso = 0;
	if (hi > lo) {
		uint64_t to = 0;
		for (uint64_t at = 0x5f0000000000UL; at > 0x10000000000UL && !to; at -= 0x10000000000UL)
			if (!overlaps_saved(r->mm, r->mmlen, at, at + (hi - lo)))
				to = at;
		for (int i = 0; i < r->nown && to; i++) {
			struct zv_cr_own *o = &r->own[i];
			if (!zv_strcmp(o->name, "[vsyscall]"))
				continue;
			uint64_t len = o->hi - o->lo, dst = to + (o->lo - lo);
			if (zv_is_err((long)zv_sys5(__NR_mremap, o->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst)))
				to = 0;
			else if (!zv_strcmp(o->name, "[vdso]"))
				r->host_vdso = dst;
		}
		if (!to) {
			zv_snprintf(in->why, sizeof in->why, "cannot move this host's vDSO out of the way");
			fail(in);
		}
	}
	for (int k = 0; k < r->nvdso; k++) {
		struct zv_cr_own *v = &r->vdso[k];
		int code = !zv_strcmp(v->name, "[vdso]");
		void *p = zv_mmap((void *)v->lo, v->hi - v->lo, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if ((uint64_t)p != v->lo) {
			zv_snprintf(in->why, sizeof in->why, "cannot map the saved %s", v->name);
			fail(in);
		}
		if (code) {
			memcpy(p, saved, vlen < v->hi - v->lo ? vlen : v->hi - v->lo);
			r->guest_vdso = v->lo;
		}
		zv_mprotect(p, v->hi - v->lo, code ? PROT_READ | PROT_EXEC : PROT_READ);
	}
	r->relocated = 1;
}

/* The vDSO the guest saw, at its address: this host's, moved there, when
 * both are the same build (the same kernel) and the clocks the same boot's;
 * the bytes zvisor patched in it come back from the image. Otherwise the
 * guest's copy is redirected (relocate_vdso). */
static void place_vdso(struct zv_cr_restore *r)
{
	struct zv_cr_in *in = r->in;
	uint64_t vlen;
	const uint8_t *saved = zv_cr_get(in, "vdso", &vlen);
	if (saved == (void *)-1)
		fail(in);
	if (!saved || !r->nvdso) {
		for (int i = 0; i < r->nown; i++) /* the guest had none (--vdso=none) */
			if (zv_strcmp(r->own[i].name, "[vsyscall]"))
				zv_munmap((void *)r->own[i].lo, r->own[i].hi - r->own[i].lo);
		return;
	}
	const struct zv_cr_own *cur = NULL;
	for (int i = 0; i < r->nown; i++)
		if (!zv_strcmp(r->own[i].name, "[vdso]"))
			cur = &r->own[i];
	uint8_t a[64], b[64];
	int na = saved ? build_id(saved, vlen, a) : 0, nb = cur ? build_id((const uint8_t *)cur->lo, cur->hi - cur->lo, b) : 0;
	char boot[40];
	zv_cr_boot_id(boot);
	if (r->other_host || !cur || !na || na != nb || memcmp(a, b, (size_t)na) || cur->hi - cur->lo != vlen ||
	    zv_strcmp(boot, r->meta.boot_id)) {
		relocate_vdso(r, saved, vlen);
		return;
	}
	/* Move every piece to scratch first (the old addresses may overlap the
	 * current ones), then each to where the guest had its counterpart. */
	uint64_t tmp = r->hole + r->hole_len - 0x100000;
	for (int i = 0; i < r->nown; i++) {
		struct zv_cr_own *o = &r->own[i];
		if (!zv_strcmp(o->name, "[vsyscall]"))
			continue;
		uint64_t len = o->hi - o->lo;
		long p = (long)zv_sys5(__NR_mremap, o->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, tmp);
		if (zv_is_err(p)) {
			zv_snprintf(in->why, sizeof in->why, "cannot move this host's %s", o->name);
			fail(in);
		}
		o->hi = tmp + len;
		o->lo = tmp;
		tmp += len;
	}
	for (int i = 0; i < r->nown; i++) {
		struct zv_cr_own *o = &r->own[i];
		if (!zv_strcmp(o->name, "[vsyscall]"))
			continue;
		uint64_t to = 0;
		for (int k = 0; k < r->nvdso; k++)
			if (!zv_strcmp(r->vdso[k].name, o->name) && r->vdso[k].hi - r->vdso[k].lo == o->hi - o->lo)
				to = r->vdso[k].lo;
		if (!to) { /* another layout after all */
			zv_snprintf(in->why, sizeof in->why, "this host's vDSO differs from the one the program saw (%s)", o->name);
			fail(in);
		}
		uint64_t len = o->hi - o->lo;
		if (zv_is_err((long)zv_sys5(__NR_mremap, o->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to))) {
			zv_snprintf(in->why, sizeof in->why, "cannot move this host's %s", o->name);
			fail(in);
		}
		if (!zv_strcmp(o->name, "[vdso]") && memcmp((void *)to, saved, vlen)) {
			zv_mprotect((void *)to, len, PROT_READ | PROT_WRITE);
			memcpy((void *)to, saved, vlen);
			zv_mprotect((void *)to, len, PROT_READ | PROT_EXEC);
		}
	}
}

/* --- the saved mappings --- */

static void map_one(struct zv_cr_restore *r, const struct zv_cr_vma *v, const char *path, const struct zv_cr_run *runs,
		    int pages_fd, struct zv_cr_hasher *h)
{
	struct zv_cr_in *in = r->in;
	uint64_t len = v->end - v->start;
	int prot = (int)v->prot;
	void *p;
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
	} else {
		int flags = (v->kind == ZV_CR_SHANON ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_FIXED |
			    (v->kind == ZV_CR_STACK ? MAP_GROWSDOWN : 0);
		p = zv_mmap((void *)v->start, len, prot | PROT_WRITE | PROT_READ, flags, -1, 0);
	}
	if ((uint64_t)p != v->start) {
		zv_snprintf(in->why, sizeof in->why, "cannot map %lx-%lx: %s", (unsigned long)v->start, (unsigned long)v->end,
			    zv_strerror(zv_is_err((long)p) ? (int)-(long)p : EEXIST));
		fail(in);
	}
	for (uint64_t i = 0; i < v->nruns; i++) {
		/* one call allocates the run's pages: a fault per page costs far
		 * more, on a VM most of all (a direct read pins, so allocates,
		 * them itself) */
		if (!r->direct)
			zv_sys3(__NR_madvise, runs[i].addr, runs[i].npages * PAGE, 23 /* MADV_POPULATE_WRITE */);
		if (zv_cr_read_into(in, pages_fd, (void *)runs[i].addr, runs[i].npages * PAGE, h, r->pages_file) < 0)
			fail(in);
	}
	if (v->kind != ZV_CR_SHFILE)
		zv_mprotect((void *)v->start, len, prot);
	if (v->kind == ZV_CR_STACK) {
		r->stack_lo = v->start;
		r->stack_hi = v->end;
	}
}

static void place_memory(struct zv_cr_restore *r)
{
	struct zv_cr_in *in = r->in;
	const struct zv_cr_section *sec;
	long fd = zv_cr_open_section(in, "pages", &sec);
	/* Whole pages into page-aligned memory: read past the page cache too
	 * (the checkpoint wrote them so); the hash is taken from the memory. */
	r->pages_file = sec && sec->zstd ? "pages.bin.zst" : "pages.bin";
	if (fd >= 0 && !sec->zstd && sec->size >= ZV_CR_DIRECT_BYTES) {
		long fl = zv_sys3(__NR_fcntl, fd, F_GETFL, 0);
		r->direct = fl >= 0 && zv_sys3(__NR_fcntl, fd, F_SETFL, fl | O_DIRECT) == 0;
	}
	if (fd < 0) {
		if (fd == -ENOENT)
			zv_snprintf(in->why, sizeof in->why, "no pages section (damaged image)");
		fail(in);
	}
	struct zv_cr_hasher h;
	zv_cr_hash_init(&h, 0);
	for (const char *p = r->mm; p < r->mm + r->mmlen;) {
		const struct zv_cr_vma *v = (const void *)p;
		p = zv_cr_vma_next(v);
		if (v->kind != ZV_CR_VDSO && v->kind != ZV_CR_VVAR && v->kind != ZV_CR_SHMEMFD)
			map_one(r, v, zv_cr_vma_path(v), zv_cr_vma_runs(v), (int)fd, &h);
	}
	zv_close((int)fd);
	if (zv_cr_check_hash(in, sec, &h) < 0)
		fail(in);
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
	}
	leader->htid = (int)zv_gettid();
	/* The timers (the cwd first), the fds, the timers aimed at threads,
	 * before any guest code; then the image is done with. */
	if (zv_cr_restore_timers(r->in) < 0 || zv_cr_restore_fds(r->in) < 0 || zv_cr_restore_thread_timers(r->in) < 0)
		fail(r->in);
	map_memfds(r);
	zv_close(r->in->dirfd);
	if (r->relocated) {
		zv_vdso_relocated(leader, (uint8_t *)r->guest_vdso, (uint8_t *)r->host_vdso);
		zv_time_continue(r->meta.mono, r->meta.boot);
		zv_layers_fold(); /* the time calls now pass virtual time */
	}
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
	read_layout(r);
	clear_own(r);
	place_vdso(r);
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
	zv_proc.exec_needs_host |= ZV_EXEC_NEEDS_HOST_RESTORED; /* its stack and ids are not an image's */
	zv_cr.orig_ppid = r->meta.ppid;
	zv_cr.hole = r->hole;
	zv_cr.hole_len = r->hole_len;
	memset(zv_cr.scratch, 0, sizeof zv_cr.scratch);
	zv_procview_stack(r->stack_lo, r->stack_hi); /* the guest's maps name it [stack] */
	zv_proc.hpid = (int)zv_getpid();
	rearm_process();
	start_threads(r);
}
