/* The guest's memory calls, as Syscall User Dispatch off sees them
 * (intercept/sudoff.c, DESIGN "SUD off in threads, and the site cache for
 * every user"): no thread may run a byte of
 * code that was not scanned while its SUD is off.
 *
 * - Code whose bytes may change after any scan (writable and executable,
 *   shared, a file this process can write, grown by mremap, pages dropped
 *   back to the file's bytes, SysV memory mapped executable) arms SUD for
 *   good, in every thread, before the call makes it so.
 * - Other new code is scanned (the platform's code_mapped for a file's
 *   mapping, which also makes its stubs; a scan of the bytes for mprotect).
 *   In a process of one task the thread making the call is the only one
 *   that could run it, and it is in the kernel until the scan is done. With
 *   more threads the call is made without PROT_EXEC, the code scanned, SUD
 *   armed everywhere if it must be, and only then made executable. A thread
 *   that jumps there meanwhile (code mapped with MAP_FIXED over code it was
 *   running) faults; the fault waits for the code and the instruction runs
 *   again (zv_sudoff_fault), as if the mapping had come at once.
 * - Fresh anonymous memory is zeros: nothing to scan. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "sys/procself.h"
#include "intercept/sudoff.h"
#include "sys/sysent.h"
#include <linux/mman.h>
#include <linux/futex.h>

#define SHM_EXEC 0100000
#define ST_NOEXEC 8

/* Calls making code executable after its scan, and a count of those done. */
static volatile int later_calls, later_done;

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

/* Whether fd's file system forbids executing its files (then the host
 * refuses mmap with PROT_EXEC, before it maps anything). */
static int noexec(int fd)
{
	struct { long type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags, spare[4]; } st;
	return zv_sys2(__NR_fstatfs, fd, &st) == 0 && (st.flags & ST_NOEXEC);
}

int zv_sudoff_mm_before(struct zv_thread *t, long nr, const long *a, long *h)
{
	if (zv_sudoff_never) {
		zv_sudoff_arm_all(t); /* armed for good by a CLONE_VM child, and not yet everywhere */
		return 0;
	}
	uint64_t addr = (uint64_t)a[0], len = ((uint64_t)a[1] + 4095) & ~4095UL;
	int more = zv_sudoff_tasks() > 1;
	switch (zv_row(nr)->mem) {
	case ZV_MEM_MAP: {
		if (!(a[2] & PROT_EXEC))
			return 0;
		if ((a[3] & MAP_TYPE) != MAP_PRIVATE) {
			zv_sudoff_taint(t, ZV_TAINT_SHARED);
			return 0;
		}
		if (a[2] & PROT_WRITE) {
			zv_sudoff_taint(t, ZV_TAINT_WX);
			return 0;
		}
		if (a[3] & MAP_ANONYMOUS)
			return 0; /* zeros */
		/* a file this process can write changes the pages it did not copy */
		long fl = zv_sys3(__NR_fcntl, a[4], 3 /* F_GETFL */, 0);
		if (fl < 0)
			return 0; /* the host fails it: EBADF */
		if ((fl & 3) != 0) {
			zv_sudoff_taint(t, ZV_TAINT_WX);
			return 0;
		}
		if (!more || noexec((int)a[4]))
			return 0;
		break;
	}
	case ZV_MEM_PROTECT:
		if (!(a[2] & PROT_EXEC))
			return 0;
		if (a[2] & PROT_WRITE) {
			zv_sudoff_taint(t, ZV_TAINT_WX);
			return 0;
		}
		if (!more)
			return 0;
		break;
	case ZV_MEM_REMAP:
		/* moved code keeps its bytes, grown file code gets new ones */
		if ((uint64_t)a[2] > (uint64_t)a[1] && overlaps_exec(addr, addr + ((uint64_t)a[1] ? len : 4096)))
			zv_sudoff_taint(t, ZV_TAINT_REMAP);
		return 0;
	case ZV_MEM_ADVISE:
		/* dropped private pages come back with the file's bytes, in
		 * which windows were never written */
		if ((a[2] == MADV_DONTNEED || a[2] == MADV_REMOVE || a[2] == MADV_FREE || a[2] == 24 /* DONTNEED_LOCKED */) &&
		    overlaps_exec(addr, addr + len))
			zv_sudoff_taint(t, ZV_TAINT_DROP);
		return 0;
	case ZV_MEM_SHMAT:
		if (a[2] & SHM_EXEC)
			zv_sudoff_taint(t, ZV_TAINT_SHM);
		return 0;
	default:
		return 0;
	}
	h[2] &= ~PROT_EXEC;
	__atomic_add_fetch(&later_calls, 1, __ATOMIC_SEQ_CST); /* before the host maps anything */
	return 1;
}

long zv_sudoff_mm_after(struct zv_thread *t, long nr, const long *a, long r, int later)
{
	uint64_t addr = (uint64_t)a[0], len = ((uint64_t)a[1] + 4095) & ~4095UL;
	int mem = zv_row(nr)->mem, protect = mem == ZV_MEM_PROTECT && (a[2] & PROT_EXEC);
	/* (a file's mapping was scanned by the platform's code_mapped) */
	if (protect && (!zv_sudoff_never || later)) {
		if (zv_is_err(r)) /* mprotect changes what lies below a hole, then fails */
			zv_sudoff_taint(t, ZV_TAINT_UNREADABLE);
		else
			zv_sudoff_code(t, addr, addr + len, (a[2] & PROT_WRITE) != 0, NULL, 0, -1);
	}
	if (!later)
		return r;
	if (!zv_is_err(r) || mem != ZV_MEM_MAP) {
		/* A failed mprotect changed what lies below a hole (armed for
		 * good above): made executable as natively, failing the same. */
		uint64_t at = mem == ZV_MEM_MAP ? (uint64_t)r : addr;
		long e = nr == __NR_pkey_mprotect ? zv_sys4(nr, at, len, a[2], a[3]) : zv_sys3(__NR_mprotect, at, len, a[2]);
		if (e < 0 && !zv_is_err(r)) {
			if (mem == ZV_MEM_MAP)
				zv_munmap((void *)at, len);
			r = e;
		}
	}
	__atomic_sub_fetch(&later_calls, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&later_done, 1, __ATOMIC_RELEASE);
	zv_sys3(__NR_futex, &later_done, FUTEX_WAKE_PRIVATE, 0x7fffffff);
	return r;
}

void zv_sudoff_mm_forget(void)
{
	if (later_calls) /* written only then: a page written is a fork's copy */
		later_calls = 0;
}

int zv_sudoff_fault(struct zv_thread *t, struct zv_ucontext *uc)
{
	uint64_t ip = uc->mc.rip;
	if (!__atomic_load_n(&later_calls, __ATOMIC_SEQ_CST)) {
		/* The call may have ended between the fault and now: once per
		 * call ended and place, the instruction runs again (a fault of
		 * its own comes back, and is the guest's then). */
		int done = __atomic_load_n(&later_done, __ATOMIC_ACQUIRE);
		if (!done || (t->exec_seen_done == done && t->exec_seen_ip == ip))
			return 0;
		t->exec_seen_done = done;
		t->exec_seen_ip = ip;
		return 1;
	}
	/* Armed first: this handler holds every signal, so the one that arms
	 * it could not come in, and the call it waits for may wait for that
	 * (arm_all). It is about to run the new code anyway. */
	zv_sudoff_need(t);
	int done = __atomic_load_n(&later_done, __ATOMIC_ACQUIRE);
	struct { long s, ns; } ts = { 0, 10000000 };
	while (__atomic_load_n(&later_calls, __ATOMIC_SEQ_CST) && __atomic_load_n(&later_done, __ATOMIC_ACQUIRE) == done)
		zv_sys4(__NR_futex, &later_done, FUTEX_WAIT_PRIVATE, done, &ts);
	return 1; /* the instruction again: the code may be there now (else the same fault comes) */
}
