/* The fast path's per-thread area (the start of struct zv_thread), which the
 * entry stub reaches through %gs. Offsets are plain numbers so that the
 * assembly can use them; intercept/trampoline.c checks them against the C layout.
 *
 * zv_fast.uc is a struct zv_ucontext whose general registers the stub fills
 * in, so handlers see the same `uc` as on the SIGSYS path (without an xsave
 * image: the fast path never touches vector state). */
#ifndef ZV_ARCH_FAST_H
#define ZV_ARCH_FAST_H

#define ZV_F_SELF 0     /* struct zv_thread *: this thread's own area */
#define ZV_F_KSTACK 8   /* top of the kernel stack used by fast entries */
#define ZV_F_BSITE 16   /* address of the bounce `syscall` (entry page) */
#define ZV_F_RESULT 24  /* result of the call just made */
#define ZV_F_BOUNCE 32  /* int: nonzero when the call must leave through SIGSYS */
#define ZV_F_PENDING 36 /* int: deferred signals wait (t->fast.sig_pending) */
#define ZV_F_RET 40     /* where the current call returns (the jump-stub exit jumps there) */
#define ZV_F_UC 56      /* struct zv_ucontext */
#define ZV_F_MC (ZV_F_UC + 40)
#define ZV_F_R8 (ZV_F_MC + 0)
#define ZV_F_R9 (ZV_F_MC + 8)
#define ZV_F_R10 (ZV_F_MC + 16)
#define ZV_F_RDI (ZV_F_MC + 64)
#define ZV_F_RSI (ZV_F_MC + 72)
#define ZV_F_RDX (ZV_F_MC + 96)
#define ZV_F_RAX (ZV_F_MC + 104)
#define ZV_F_RSP (ZV_F_MC + 120)
#define ZV_F_EFLAGS (ZV_F_MC + 136)

/* What a bounce asks of the SIGSYS handler (zv_fast.bounce). */
#define ZV_BOUNCE_CALL 1   /* run the call there: it needs a full signal frame */
#define ZV_BOUNCE_RESULT 2 /* the call ran; deliver deferred signals with its result */
#define ZV_BOUNCE_FAULT 3  /* not a rewritten site: a stray jump into page 0 */

/* Page 0 and the entry page (intercept/trampoline.c). */
#define ZV_SLED_END 512 /* numbers below this slide into the kernel */
#define ZV_TAIL_REL 0x65656565L /* rel32 of the tail's jmp: every byte a gs prefix */
#define ZV_ENTRY_JMP (ZV_SLED_END + 5 + ZV_TAIL_REL) /* where that jmp lands */
#define ZV_ENTRY_PAGE (ZV_ENTRY_JMP & ~4095L)
#define ZV_BOUNCE_SITE (ZV_ENTRY_PAGE + 16) /* its `syscall`; SIGSYS reports +2 */

#ifndef __ASSEMBLER__
#include <stdint.h>
#include "arch/context.h"

struct zv_thread;
struct zv_fast {
	struct zv_thread *self;
	uint64_t kstack;
	uint64_t bounce_site;
	long result;
	volatile int bounce;
	volatile int sig_pending;
	uint64_t ret; /* return address of the current fast call */
	long nr;      /* its number */
	struct zv_ucontext uc;
	struct zv_seen { uint64_t ret, code8; } seen[8]; /* rewritten sites already checked */
};

/* intercept/fastentry.S */
extern char zv_fast_entry[], zv_stub_entry[], zv_fast_window[], zv_fast_window_end[], zv_fast_bounce_result[];
#endif
#endif
