/* Syscall User Dispatch off while every executable byte is covered
 * (intercept/sudoff.c, DESIGN "Jump stubs and SUD off"). */
#ifndef ZV_INTERCEPT_SUDOFF_H
#define ZV_INTERCEPT_SUDOFF_H
#include <stdint.h>

struct zv_thread;

/* Whether SUD may ever be off in this process: the stubs platform, sites
 * made at load, nothing unscanned mapped executable yet. */
extern volatile int zv_sudoff_never;

/* The platform's sites of [lo, hi) were just made (or it became
 * executable): any syscall, sysenter or int $0x80 left in its bytes arms
 * SUD for good, but for the pairs in[0..nin) (sorted) that the decode
 * proved to lie inside other instructions. writable: the bytes may change
 * (a writable and executable mapping): armed for good. known >= 0: the
 * count of a scan of the same file's bytes (the site cache's), which is
 * not repeated. Returns the count, -1 if there was no scan. */
long zv_sudoff_code(struct zv_thread *t, uint64_t lo, uint64_t hi, int writable, const uint64_t *in, int nin,
		    long known);
/* The scan alone: the site pairs in [lo, hi) but in[0..nin), -1 if some
 * of it could not be read. For the site cache's count, which must be known
 * whether or not this process is armed for good already. */
long zv_sudoff_count(uint64_t lo, uint64_t hi, const uint64_t *in, int nin);
/* The same, for a mapping [lo, hi) whose code the analysis just read and
 * whose windows b's commit just wrote (b's pairs, kept as it met them):
 * only the pairs it met, the windows' bytes and what it did not read are
 * looked at again. -1: b does not tell (then zv_sudoff_count). */
struct zv_stub_batch;
struct zv_ucontext;
long zv_sudoff_count_batch(struct zv_thread *t, struct zv_stub_batch *b, uint64_t lo, uint64_t hi);
/* The same for the vDSO [lo, hi), whose host code the guest may run
 * (known: the site cache's count for the same bytes, windows made). */
long zv_sudoff_vdso(struct zv_thread *t, uint64_t lo, uint64_t hi, const uint64_t *in, int nin, long known);
/* An exec made in this process: what the old images' code found is
 * forgotten, the vDSO's (which stays) kept; never: SUD may not go off on
 * this platform at all. */
void zv_sudoff_exec(int never);
/* Unscanned code may run from now on (why: for --stats): SUD stays armed. */
void zv_sudoff_taint(struct zv_thread *t, int why);
/* Before a memory call of the guest (nr, arguments a), on the stubs
 * platform: arms SUD for good, in every thread, if what the call makes
 * executable may change after any scan; returns 1 if the call must be made
 * with h, a copy of a, without PROT_EXEC (more than one task: the code
 * becomes executable only once scanned), else 0. */
int zv_sudoff_mm_before(struct zv_thread *t, long nr, const long *a, long *h);
/* After it (result r; later: what zv_sudoff_mm_before returned, once the
 * platform's code_mapped ran): scans what became executable and makes
 * executable what waited for its scan. Returns the call's result. */
long zv_sudoff_mm_after(struct zv_thread *t, long nr, const long *a, long r, int later);
/* The stubs platform's fault op: a SIGSEGV of thread t in guest code (an
 * instruction fetch, say): if code is being made executable meanwhile,
 * arms t, waits for it and returns 1 (the instruction is run again: a
 * fault of another kind comes again), else 0. */
int zv_sudoff_fault(struct zv_thread *t, struct zv_ucontext *uc);
/* The calls above that a fork child or an exec's image does not have
 * (their threads are gone). */
void zv_sudoff_mm_forget(void);
/* The tasks on this memory (threads). */
int zv_sudoff_tasks(void);
/* Arms every thread, once: zv_sudoff_never was set without it (a CLONE_VM
 * child's clone), before any memory call can make new code. */
void zv_sudoff_arm_all(struct zv_thread *t);
/* A SIGSYS queued to this thread (SI_QUEUE): 1 if it was arm_all's, which
 * armed the thread. */
int zv_sudoff_sigsys(struct zv_thread *t, const void *si, struct zv_ucontext *uc);
/* The calling thread t must have SUD armed now (a bounce, a deferred
 * signal, a guest handler about to run). */
void zv_sudoff_need(struct zv_thread *t);
/* Called where a kernel entry returns to the guest: disarms t when that
 * is safe. */
void zv_sudoff_settle(struct zv_thread *t);
/* A fork child's thread, whose SUD the host did not carry over: 1 if it
 * may stay off (marked so: the call's way out would disarm it anyway, two
 * prctls for nothing), 0 if the platform must arm it. All signals are
 * blocked meanwhile (the SIGSYS handler's mask), none pending. */
int zv_sudoff_fork_child(struct zv_thread *t);
/* In a fork child: the scan's lock may have been held by another thread. */
void zv_sudoff_after_fork(void);
/* A CLONE_VM child that is not a thread and not a vfork: never again (every
 * thread is armed before the next memory call: zv_sudoff_arm_all). */
static inline void zv_sudoff_shared_vm(void) { zv_sudoff_never = 1; }
/* --stats: the syscall byte pairs found in scanned code, and why SUD
 * stays armed (ZV_TAINT_*, 0: it need not). */
void zv_sudoff_numbers(unsigned long *uncovered, int *why);

enum { ZV_TAINT_SITES = 1, ZV_TAINT_WX, ZV_TAINT_SHARED, ZV_TAINT_UNREADABLE, ZV_TAINT_REMAP,
       ZV_TAINT_DROP, ZV_TAINT_SHM, ZV_TAINT_VDSO, ZV_TAINT_POKE /* a tracer wrote code */ };
#endif
