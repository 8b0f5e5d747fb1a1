/* The path every platform takes into the kernel and out (sys/entry.c),
 * and the per-number kinds the layers fold (sys/layers.c). */
#ifndef ZV_SYS_ENTRY_H
#define ZV_SYS_ENTRY_H
#include <stdint.h>
#include "arch/context.h"

struct zv_thread;

enum { ZV_KIND_HOST, ZV_KIND_HANDLER, ZV_KIND_FRAME, ZV_KIND_PID /* getpid, gettid: no layer on */ };
extern uint8_t zv_call_kind[512]; /* sys/layers.c */
extern int zv_check_fds;          /* sys/layers.c: the fast path's host calls check for hidden fds */
#define ZV_NORESULT (-4096L - 1) /* handler set the guest's registers itself */
#define ZV_FAULT_SIGNALS (ZV_SIGBIT(11) | ZV_SIGBIT(7)) /* SIGSEGV, SIGBUS: see zv_unblock_faults */
#define ZV_CANCELLED (-4096L - 3) /* zv_sc_cancellable: a deferred signal stopped the call before it began */
long zv_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr);
/* sys/guard.S: calls under the fault guard (resume_sp: where a fault on
 * guest memory resumes, returning -EFAULT at zv_guard_fault). */
long zv_call_guarded(struct zv_thread *t, struct zv_ucontext *uc, long nr, uint64_t *resume_sp);
extern char zv_guard_fault[];
long zv_cmpxchg16_guarded(volatile uint16_t *p, uint16_t old, uint16_t new_val, uint64_t *resume_sp);
long zv_cmpxchg32_guarded(volatile uint32_t *p, uint32_t old, uint32_t new_val, uint64_t *resume_sp);
long zv_copy_guarded(void *dst, const void *src, size_t n, uint64_t *resume_sp);
long zv_fn_guarded(void *arg, long (*fn)(void *), uint64_t *resume_sp);
void zv_frame_syscall(struct zv_thread *t, struct zv_ucontext *uc, long nr);
void zv_frame_result(struct zv_thread *t, struct zv_ucontext *uc, long nr, long r);
void zv_entry_count(struct zv_thread *t, long nr, long r, int vdso);
/* --count's recording of each call (trace/count.c sets it when its table
 * is attached): the entry calls it, when set, for every call it counts. */
extern void (*zv_entry_counter)(long nr, long ret, int vdso);
void zv_layers_fold(void); /* sys/layers.c */
long zv_host_call(struct zv_thread *t, long nr, long a, long b, long c, long d, long e, long f);
long zv_host_call_args(struct zv_thread *t, const long args[7]);
#endif
