/* Checkpoint/restore's state in the core's blocks: struct zv_thread's cr
 * (docs/DESIGN.md, "Source layout": a feature's state.h holds plain types
 * only). */
#ifndef ZV_CR_STATE_H
#define ZV_CR_STATE_H
#include <stdint.h>

/* Per thread (struct zv_thread's cr): where a parked thread stopped and
 * what the host keeps of it that memory does not. */
struct zv_cr_thread {
	volatile int freeze;   /* asked to park on its way back to the guest */
	int parked;
	int round;             /* the checkpoint it parked for */
	uint64_t jmp[8];       /* arch/crjmp.S: where zv_cr_park resumes */
	uint64_t fs;           /* the guest's %fs base */
	uint64_t mask;         /* the host mask at the park */
	uint64_t robust_head, robust_len, tid_addr;
	int sleep_nr;          /* a relative sleep the freeze interrupted (cr/waits.c) */
	uint64_t sleep_req;    /* its request's address, and the time it had left */
	long sleep_left_ns;
	uint64_t pending;      /* signals the host held pending for it (raised again) */
	int old_htid;          /* its host tid at the checkpoint */
	uint64_t rseq;         /* its rseq area, length and signature (cr/waits.c) */
	uint32_t rseq_len, rseq_sig;
	char comm[16];
};
#endif
