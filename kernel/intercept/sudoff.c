/* Syscall User Dispatch off while every executable byte is covered.
 *
 * Armed SUD makes every host system call take the host's slow entry path
 * (about 25 ns here), exempt or not. On the stubs platform, SUD is only
 * the catch-all for syscall instructions that were not made into stubs.
 * So a thread may turn it off while no such instruction can run: every
 * executable mapping of the process was scanned, after its stubs were
 * made, and holds no `syscall` (0f 05), `sysenter` (0f 34) or `int $0x80`
 * (cd 80) at any byte offset, except signal restorers (below). The proof
 * and its limits are in DESIGN "Jump stubs and SUD off"; in short:
 *
 * - One task only. SUD is off in a thread only while it is the address
 *   space's one task (zv_proc.nthreads == 1, a thread, no CLONE_VM child
 *   alive). A new task can only come from clone/clone3/fork/vfork, which
 *   bounce (they need the frame), and a bounce arms the caller first; the
 *   child arms itself before it runs guest code. So when code appears,
 *   the one thread that could run it is the one mapping it, which arms
 *   itself before the call returns: no other thread to signal.
 * - Sticky. Code that holds a site, or that may change under the scan
 *   (writable and executable, shared, a file the process can write, pages
 *   dropped back to the file's bytes), arms SUD for the rest of the
 *   process image (a fork child inherits it; an execve starts afresh).
 * - Bounces, deferred signals and guest handlers arm the thread first:
 *   a bounce is a `syscall` that only SUD turns into SIGSYS, and a
 *   signal restorer (`mov $15, %rax; syscall`, which unwinders match by
 *   its bytes, so it stays) is reached by returning from a handler: the
 *   thread stays armed while any handler frame zvisor built is live.
 * - Settled (disarmed again) only on the way out of a kernel entry. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/maps.h"
#include "intercept/sudoff.h"
#include "intercept/stubs.h"
#include "intercept/platform.h"
#include "sys/sysent.h"
#include <linux/mman.h>
#include <linux/prctl.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif
#define SUD_OFF 0 /* PR_SYS_DISPATCH_OFF */

volatile int zv_sudoff_never = 1; /* until the stubs platform's loader says otherwise */
static unsigned long uncovered;   /* syscall byte pairs found in scanned code */
static uint64_t first_uncovered; /* for a debugger */
static int taint_why;
/* The vDSO's part of the above: it stays through an exec made in this
 * process, whose images start from it (zv_sudoff_exec). */
static unsigned long vdso_uncovered;
static int vdso_taint;

void zv_sudoff_taint(struct zv_thread *t, int why)
{
	if (!taint_why)
		taint_why = why;
	zv_sudoff_never = 1;
	zv_sudoff_need(t);
}

void zv_sudoff_need(struct zv_thread *t)
{
	if (!__atomic_load_n(&t->sud_off, __ATOMIC_RELAXED))
		return;
	/* t is the calling thread: SUD is per task. */
	zv_catchall_arm_thread(t);
}

static int is_site(const uint8_t *p) { return zv_stubs_is_call_pair(p); }

/* Whether a is in the sorted list of pairs proven inside instructions. */
static int proven_inside(uint64_t a, const uint64_t *in, int n)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (in[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && in[lo] == a;
}


/* Reads guest memory [a, a + n) into buf; fails on what is not readable. */
static int peek(uint64_t a, void *buf, uint64_t n)
{
	struct { void *base; size_t len; } local = { buf, n }, remote = { (void *)a, n };
	return zv_sys6(__NR_process_vm_readv, zv_proc.hpid, (long)&local, 1, (long)&remote, 1, 0) == (long)n;
}

#define CHUNK 65536
/* The site byte pairs that straddle the ends of [lo, hi) (a neighbour's
 * byte and one of its own, when readable). */
static long scan_edges(uint64_t lo, uint64_t hi)
{
	uint8_t edge[2];
	return (lo && peek(lo - 1, edge, 2) && is_site(edge)) + (peek(hi - 1, edge, 2) && is_site(edge));
}

/* Counts the site byte pairs that start in [lo, hi - 1). -1: some of it
 * could not be read. */
static volatile int scan_lock; /* threads may map code at once: one buffer */

void zv_sudoff_after_fork(void)
{
	if (scan_lock) /* its holder is not in this process */
		scan_lock = 0;
}

static long scan_locked(uint64_t lo, uint64_t hi, const uint64_t *in, int nin);
static long scan(uint64_t lo, uint64_t hi, const uint64_t *in, int nin)
{
	zv_lock(&scan_lock);
	long n = scan_locked(lo, hi, in, nin);
	zv_unlock(&scan_lock);
	return n;
}

static long scan_locked(uint64_t lo, uint64_t hi, const uint64_t *in, int nin)
{
	static uint8_t buf[CHUNK + 16] ZV_COLD_BSS;
	long n = 0;
	for (uint64_t at = lo; at < hi; at += CHUNK) {
		uint64_t len = hi - at < CHUNK ? hi - at : CHUNK;
		/* 7 bytes before the chunk, for the restorer test, and the
		 * first of the next, for a pair across the chunks */
		uint64_t back = at - lo < 7 ? at - lo : 7, next = at + len < hi;
		if (!peek(at - back, buf, len + back + next))
			return -1;
		const uint8_t *b = buf + back, *end = b + len - 1 + next;
		for (const uint8_t *p = b; p < end; p++) {
			if ((p[0] != 0x0f && p[0] != 0xcd) || !is_site(p) ||
			    (p[1] == 0x05 && zv_stubs_is_restorer(buf, (uint64_t)(p - buf))) ||
			    proven_inside(at + (uint64_t)(p - b), in, nin))
				continue;
			if (!n && !uncovered)
				first_uncovered = at + (uint64_t)(p - b);
			n++;
		}
	}
	return n;
}

long zv_sudoff_count(uint64_t lo, uint64_t hi, const uint64_t *in, int nin)
{
	for (int i = 1; i < nin; i++)
		if (in[i - 1] >= in[i])
			nin = 0; /* not sorted: proves nothing */
	return scan(lo, hi, in, nin);
}

long zv_sudoff_code(struct zv_thread *t, uint64_t lo, uint64_t hi, int writable, const uint64_t *in, int nin,
		    long known)
{
	if (zv_sudoff_never && taint_why)
		return -1; /* armed for good already: nothing to learn */
	if (writable) {
		zv_sudoff_taint(t, ZV_TAINT_WX);
		return -1;
	}
	long n = known >= 0 ? known : zv_sudoff_count(lo, hi, in, nin);
	long e = scan_edges(lo, hi);
	if (n < 0) {
		zv_sudoff_taint(t, ZV_TAINT_UNREADABLE);
	} else if (n + e > 0) {
		uncovered += (unsigned long)(n + e);
		zv_sudoff_taint(t, ZV_TAINT_SITES);
	}
	return n;
}

/* The vDSO's edges, mostly without reading its neighbours (two host
 * calls): a pair across its start needs its first byte to be 05, 34 or 80
 * (it is the ELF magic's 7f), one across its end its last byte to be 0f
 * or cd; both bytes are its own, readable. */
static long vdso_edges(uint64_t lo, uint64_t hi)
{
	uint8_t first = *(const volatile uint8_t *)lo, last = *(const volatile uint8_t *)(hi - 1);
	if (first == 0x05 || first == 0x34 || first == 0x80 || last == 0x0f || last == 0xcd)
		return scan_edges(lo, hi);
	return 0;
}

long zv_sudoff_vdso(struct zv_thread *t, uint64_t lo, uint64_t hi, const uint64_t *in, int nin, long known)
{
	if (zv_sudoff_never)
		return -1;
	long n = known >= 0 ? known : scan(lo, hi, in, nin), e = vdso_edges(lo, hi);
	if (n < 0 || n + e > 0) {
		vdso_uncovered = n >= 0 ? (unsigned long)(n + e) : 0;
		vdso_taint = ZV_TAINT_VDSO;
		uncovered += vdso_uncovered;
		zv_sudoff_taint(t, ZV_TAINT_VDSO);
	}
	return n;
}

void zv_sudoff_exec(int never)
{
	uncovered = vdso_uncovered;
	taint_why = vdso_taint;
	zv_sudoff_never = never || vdso_taint;
}

/* Whether [lo, hi) overlaps an executable mapping. */
struct range { uint64_t lo, hi; };
static int exec_in(const struct zv_map *m, void *arg)
{
	const struct range *r = arg;
	return m->perms[2] == 'x' && m->lo < r->hi && r->lo < m->hi;
}

static int overlaps_exec(uint64_t lo, uint64_t hi)
{
	struct range r = { lo, hi };
	return zv_maps_each(exec_in, &r) != 0; /* an unreadable maps file counts as yes */
}

void zv_sudoff_mm(struct zv_thread *t, long nr, const long *a, long r)
{
	if (zv_sudoff_never)
		return;
	int mem = zv_row(nr)->mem;
	if (zv_is_err(r)) {
		/* mprotect changes what lies below a hole, then fails */
		if (mem == ZV_MEM_PROTECT && (a[2] & PROT_EXEC))
			zv_sudoff_taint(t, ZV_TAINT_UNREADABLE);
		return;
	}
	uint64_t addr = (uint64_t)a[0], len = ((uint64_t)a[1] + 4095) & ~4095UL;
	switch (mem) {
	case ZV_MEM_MAP: {
		if (!(a[2] & PROT_EXEC))
			return;
		int type = (int)(a[3] & MAP_TYPE);
		if (type != MAP_PRIVATE) {
			zv_sudoff_taint(t, ZV_TAINT_SHARED);
			return;
		}
		if (a[2] & PROT_WRITE) {
			zv_sudoff_taint(t, ZV_TAINT_WX);
		} else if (!(a[3] & MAP_ANONYMOUS)) {
			/* scanned by the platform (code_mapped); but a file this
			 * process can write changes the pages it did not copy */
			long fl = zv_sys3(__NR_fcntl, a[4], 3 /* F_GETFL */, 0);
			if (fl < 0 || (fl & 3) != 0)
				zv_sudoff_taint(t, ZV_TAINT_WX);
		} else {
			zv_sudoff_code(t, (uint64_t)r, (uint64_t)r + len, 0, NULL, 0, -1);
		}
		return;
	}
	case ZV_MEM_PROTECT:
		if (a[2] & PROT_EXEC)
			zv_sudoff_code(t, addr, addr + len, (a[2] & PROT_WRITE) != 0, NULL, 0, -1);
		return;
	case ZV_MEM_REMAP:
		/* moved code keeps its bytes, grown file code gets new ones */
		if ((uint64_t)a[2] > (uint64_t)a[1] && overlaps_exec((uint64_t)r, (uint64_t)r + (uint64_t)a[2]))
			zv_sudoff_taint(t, ZV_TAINT_REMAP);
		return;
	case ZV_MEM_ADVISE:
		/* dropped private pages come back with the file's bytes, in
		 * which windows were never written */
		if ((a[2] == MADV_DONTNEED || a[2] == MADV_REMOVE || a[2] == MADV_FREE || a[2] == 24 /* DONTNEED_LOCKED */) &&
		    overlaps_exec(addr, addr + len))
			zv_sudoff_taint(t, ZV_TAINT_DROP);
		return;
	case ZV_MEM_SHMAT:
		if (a[2] & 0100000 /* SHM_EXEC */)
			zv_sudoff_taint(t, ZV_TAINT_SHM);
		return;
	}
}

/* Whether t may run with SUD off now. */
static int may_settle(const struct zv_thread *t)
{
	return !zv_sudoff_never && zv_proc.nthreads == 1 && t->is_thread && !t->handler_depth &&
	       !t->fast.sig_pending && !t->fast.bounce && !t->gsud.on && !zv_proc.seccomp.mode &&
	       !t->in_host_vdso && !t->sigsys_held;
}

int zv_sudoff_fork_child(struct zv_thread *t)
{
	if (!may_settle(t))
		return 0;
	t->sud_off = 1; /* as it is: the host does not carry SUD over */
	return 1;
}

void zv_sudoff_settle(struct zv_thread *t)
{
	if (t->sud_off || !may_settle(t))
		return;
	/* A signal may come in anywhere here and arm t (zv_sudoff_need, from
	 * defer): marked off first, so that it does; armed again after if it
	 * did, since its arming may have come before the prctl. */
	t->sud_off = 1;
	asm volatile("" ::: "memory");
	if (zv_sys5(__NR_prctl, PR_SET_SYSCALL_USER_DISPATCH, SUD_OFF, 0, 0, 0) != 0) {
		t->sud_off = 0;
		return;
	}
	asm volatile("" ::: "memory");
	if (!t->sud_off || t->fast.sig_pending) {
		t->sud_off = 1;
		zv_catchall_arm_thread(t);
	}
}

void zv_sudoff_numbers(unsigned long *n, int *why)
{
	*n = uncovered;
	*why = taint_why;
}
