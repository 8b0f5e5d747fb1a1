/* Syscall User Dispatch off while every executable byte is covered.
 *
 * Armed SUD makes every host system call take the host's slow entry path
 * (about 25 ns here), exempt or not. On the stubs platform, SUD is only
 * the catch-all for syscall instructions that were not made into stubs.
 * So a thread may turn it off while no such instruction can run: every
 * executable mapping of the process was scanned, after its stubs were
 * made, and holds no `syscall` (0f 05), `sysenter` (0f 34) or `int $0x80`
 * (cd 80) at any byte offset, except signal restorers (below). The proof
 * and its limits are in DESIGN "Jump stubs and SUD off" and "SUD off in
 * threads, and the site cache for every user"; in short:
 *
 * - No thread runs code that was not scanned. With one task the thread
 *   that maps code is the only one that could run it, and it is in the
 *   kernel until the scan is done. With more, new code becomes executable
 *   only after its scan (intercept/sudoff_mm.c), and a verdict that arms
 *   SUD arms every thread first (arm_all) before the code can run.
 * - Sticky. Code that holds a site, or that may change under the scan
 *   (writable and executable, shared, a file the process can write, pages
 *   dropped back to the file's bytes), arms SUD for the rest of the
 *   process image (a fork child inherits it; an execve starts afresh).
 * - Bounces, deferred signals and guest handlers arm the thread first:
 *   a bounce is a `syscall` that only SUD turns into SIGSYS, and a
 *   signal restorer (`mov $15, %rax; syscall`, which unwinders match by
 *   its bytes, so it stays) is reached by returning from a handler: the
 *   thread stays armed while any handler frame zvisor built is live. A
 *   new thread arms itself before it runs guest code.
 * - Settled (disarmed again) only on the way out of a kernel entry. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "intercept/sudoff.h"
#include "intercept/stubs.h"
#include "intercept/platform.h"
#include "sys/calls.h"
#include <linux/mman.h>
#include <linux/prctl.h>
#include <linux/futex.h>

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

static void arm_all(struct zv_thread *self);

void zv_sudoff_taint(struct zv_thread *t, int why)
{
	if (!taint_why)
		taint_why = why;
	if (zv_sudoff_never) {
		zv_sudoff_need(t);
		return;
	}
	zv_sudoff_never = 1;
	zv_sudoff_need(t);
	arm_all(t);
}

void zv_sudoff_need(struct zv_thread *t)
{
	if (!__atomic_load_n(&t->sud_off, __ATOMIC_RELAXED))
		return;
	/* t is the calling thread: SUD is per task. */
	zv_catchall_arm_thread(t);
}

/* Arming every other thread: zv_sudoff_never is set, so none disarms
 * again (zv_sudoff_settle reads it after marking itself off, with a full
 * barrier between, as arm_all reads the marks after setting it: one of
 * them sees the other). Each thread still marked off is sent a SIGSYS
 * with this tag; its handler arms it, wherever it was. Sent again every
 * 10 ms (a SIGSYS already pending swallows one) until every mark is
 * gone; a thread that exits leaves the list. */
#define TAG_ARM 0x7a766172UL /* "zvar": low half = the process's pid */
static volatile int armed; /* counts arming handlers, to wake arm_all */

struct arming { struct zv_thread *self; int send, left; };
static int arm_one(struct zv_thread *o, void *v)
{
	struct arming *a = v;
	if (o == a->self || !__atomic_load_n(&o->sud_off, __ATOMIC_ACQUIRE))
		return 0;
	a->left++;
	if (a->send) {
		zv_siginfo si = { .si_signo = 31, .si_code = -1 /* SI_QUEUE */ };
		uint64_t value = TAG_ARM << 32 | (uint32_t)zv_proc.hpid;
		si.kill.pid = (int)zv_proc.hpid;
		memcpy(si.bytes + 8, &value, 8);
		zv_sys4(__NR_rt_tgsigqueueinfo, zv_proc.hpid, o->htid, 31, &si);
	}
	return 0;
}

static volatile int all_armed; /* arm_all ran since zv_sudoff_never was set */

int zv_sudoff_tasks(void)
{
	return __atomic_load_n(&zv_proc.nthreads, __ATOMIC_ACQUIRE);
}

void zv_sudoff_arm_all(struct zv_thread *t)
{
	if (!__atomic_load_n(&all_armed, __ATOMIC_ACQUIRE))
		arm_all(t);
}

static void arm_all(struct zv_thread *self)
{
	zv_sudoff_need(self);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* zv_sudoff_never before the marks */
	for (int round = 0;; round++) {
		struct arming a = { self, round % 10 == 0, 0 };
		int seen = __atomic_load_n(&armed, __ATOMIC_ACQUIRE);
		zv_thread_each(arm_one, &a);
		if (!a.left) {
			__atomic_store_n(&all_armed, 1, __ATOMIC_RELEASE);
			return;
		}
		struct { long s, ns; } ts = { 0, 1000000 };
		zv_sys4(__NR_futex, &armed, FUTEX_WAIT_PRIVATE, seen, &ts);
	}
}

int zv_sudoff_sigsys(struct zv_thread *t, const void *siv, struct zv_ucontext *uc)
{
	const zv_siginfo *si = siv;
	uint64_t v;
	memcpy(&v, si->bytes + 8, 8);
	if (v >> 32 != TAG_ARM || (uint32_t)v != (uint32_t)zv_proc.hpid || si->kill.pid != (int)zv_proc.hpid)
		return 0;
	if (t->sud_off) {
		zv_sudoff_need(t);
		if (zv_interrupted_kernel(t, uc)) {
			/* A blocking host call this interrupted returns EINTR:
			 * made again, as after a stop and continue. */
			t->sud_remake = 1;
			t->fast.sig_pending = 1;
			zv_kernel_interrupted(uc);
		}
	}
	__atomic_add_fetch(&armed, 1, __ATOMIC_RELEASE);
	zv_sys3(__NR_futex, &armed, FUTEX_WAKE_PRIVATE, 0x7fffffff);
	return 1;
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
 * byte and one of its own, when readable): both read in one call, which
 * stops at the first byte it cannot read; the end again on its own only
 * when the start was not readable. */
static long scan_edges(uint64_t lo, uint64_t hi)
{
	uint8_t edge[4];
	if (!lo)
		return peek(hi - 1, edge, 2) && is_site(edge);
	struct { void *base; size_t len; } local = { edge, 4 }, remote[2] = { { (void *)(lo - 1), 2 }, { (void *)(hi - 1), 2 } };
	long got = zv_sys6(__NR_process_vm_readv, zv_proc.hpid, (long)&local, 1, (long)remote, 2, 0);
	if (got < 2)
		return peek(hi - 1, edge + 2, 2) && is_site(edge + 2);
	return is_site(edge) + (got == 4 && is_site(edge + 2));
}

/* Counts the site byte pairs that start in [lo, hi - 1). -1: some of it
 * could not be read. */
static volatile int scan_lock; /* threads may map code at once: one buffer */

void zv_sudoff_after_fork(void)
{
	if (scan_lock) /* its holder is not in this process */
		scan_lock = 0;
	zv_sudoff_mm_forget();
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

/* Whether a, one of the n sorted windows of w, is a window's syscall. */
static int window_syscall(const struct zv_stub_window *w, int n, uint64_t a)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (w[mid].s < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && w[lo].s == a;
}

/* The pairs starting in [from, to) of the mapping [lo, ...) as it is now
 * but restorers' and those in in[] (read under the fault guard: another
 * thread may unmap it); -1 if unreadable. Reads the byte at to. */
static long pairs_in(struct zv_thread *t, uint64_t lo, uint64_t from, uint64_t to, const uint64_t *in, int nin)
{
	uint8_t buf[48];
	long n = 0;
	for (uint64_t at = from; at < to; at += 32) {
		uint64_t k = to - at < 32 ? to - at : 32, back = at - lo < 7 ? at - lo : 7;
		uint64_t outer = t->guard_sp;
		long e = zv_copy_guarded(buf, (const void *)(at - back), back + k + 1, &t->guard_sp);
		t->guard_sp = outer;
		if (e < 0)
			return -1;
		for (uint64_t i = 0; i < k; i++)
			n += is_site(buf + back + i) && !(buf[back + i + 1] == 0x05 && zv_stubs_is_restorer(buf, back + i)) &&
			     !proven_inside(at + i, in, nin);
	}
	return n;
}

long zv_sudoff_count_batch(struct zv_thread *t, struct zv_stub_batch *b, uint64_t lo, uint64_t hi)
{
	if (!b->pairs_ok)
		return -1;
	for (int i = 1; i < b->ninside; i++) /* in order but for a neighbour's trampolines: a few steps */
		for (int j = i; j > 0 && b->inside[j - 1] > b->inside[j]; j--) {
			uint64_t x = b->inside[j];
			b->inside[j] = b->inside[j - 1];
			b->inside[j - 1] = x;
		}
	long n = 0, e;
	/* the pairs the analysis met: left but for the windows' syscalls (gone),
	 * those proven inside instructions and restorers */
	for (int i = 0; i < b->npairs; i++) {
		uint64_t x = b->pairs[i];
		if (x + 2 > hi || window_syscall(b->w, b->n, x) || proven_inside(x, b->inside, b->ninside))
			continue;
		if ((e = pairs_in(t, lo, x, x + 1, b->inside, b->ninside)) < 0)
			return -1;
		n += e;
	}
	/* what the windows wrote (jmp rel32, a trampoline's jmp rel8) */
	for (int i = 0; i < b->n; i++) {
		const struct zv_stub_window *w = &b->w[i];
		uint64_t c = w->d ? w->d : w->p;
		if (c + 5 >= hi || w->s + 2 >= hi || (e = pairs_in(t, lo, c, c + 5, b->inside, b->ninside)) < 0)
			return -1; /* (a window at the very end: the full scan) */
		n += e;
		if (w->d && (e = pairs_in(t, lo, w->s, w->s + 2, b->inside, b->ninside)) < 0)
			return -1;
		n += w->d ? e : 0;
	}
	/* and the bytes the analysis did not read: what lies outside the
	 * executable segments, and the pair across the end of what it read;
	 * the one across the mapping's end is zv_sudoff_code's */
	uint64_t at = lo;
	for (int i = 0; i <= b->nread; i++) {
		uint64_t to = i < b->nread ? b->read_lo[i] : hi - 1, from = at > lo ? at - 1 : at;
		if (to > hi || to < at)
			return -1;
		if (to > from) {
			if ((e = pairs_in(t, lo, from, to, b->inside, b->ninside)) < 0)
				return -1;
			n += e;
		}
		if (i < b->nread)
			at = b->read_hi[i];
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

/* An exec made in this process: its only thread is the caller, its code
 * only the vDSO (kept) until the new image's is mapped and scanned. */
void zv_sudoff_exec(int never)
{
	uncovered = vdso_uncovered;
	first_uncovered = 0;
	taint_why = vdso_taint;
	zv_sudoff_never = never || vdso_taint;
	__atomic_store_n(&all_armed, 0, __ATOMIC_RELEASE);
	zv_sudoff_mm_forget();
}

/* Whether t may run with SUD off now: a thread (a vfork child shares its
 * parent's memory and stays armed), listed (arm_all finds it). */
static int may_settle(const struct zv_thread *t)
{
	return !zv_sudoff_never && t->is_thread && t->known && !t->handler_depth && !t->fast.sig_pending &&
	       !t->fast.bounce && !t->gsud.on && !zv_proc.seccomp.mode && !t->in_host_vdso && !t->sigsys_held;
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
	 * defer or arm_all): marked off first, so that it does; armed again
	 * after if it did, since its arming may have come before the prctl.
	 * zv_sudoff_never is read again after the mark, with a full barrier
	 * between: arm_all sets it before it reads the marks. */
	t->sud_off = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (zv_sudoff_never) {
		t->sud_off = 0; /* still armed */
		return;
	}
	if (zv_sys5(__NR_prctl, PR_SET_SYSCALL_USER_DISPATCH, SUD_OFF, 0, 0, 0) != 0) {
		t->sud_off = 0;
		return;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!t->sud_off || t->fast.sig_pending || zv_sudoff_never) {
		t->sud_off = 1;
		zv_catchall_arm_thread(t);
	}
}

void zv_sudoff_numbers(unsigned long *n, int *why)
{
	*n = uncovered;
	*why = taint_why;
}
