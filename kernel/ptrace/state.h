/* The guest's ptrace state in the core's blocks: struct zv_thread's pt, this
 * thread as a tracee (plain types only: docs/DESIGN.md, "Source layout"). */
#ifndef ZV_PTRACE_STATE_H
#define ZV_PTRACE_STATE_H
#include <stdint.h>

struct zv_pt_slot;

struct zv_pt_thread {
	struct zv_pt_slot *slot;  /* its slot in the process's shared area; NULL: not traced */
	int mode;                 /* how the tracer last resumed it (enum zv_pt_resume) */
	int traceme;              /* a vfork child's TRACEME: its new image joins the parent */
	volatile int want;        /* stops asked from outside (ZV_PT_WANT_*), taken on the way out */
	int stepping;             /* TF is set for the tracer: the next trap is a step */
	uint64_t step_from;       /* the guest rip the step began at */
	int step_syscall;         /* the step reached a syscall: stop once it returns */
	long orig_rax;            /* the call's number at its stops, as the tracer may change it */
	uint64_t again_rip;       /* a call a deferred signal stopped before it began (made again after */
	long again_nr;            /* the handler): where and which, its entry stop already seen; -1: none */
	int again_depth;          /* (the handler depth it waits at) */
	uint64_t block_rip;       /* a call with ERESTART_RESTARTBLOCK made again with no handler run: */
	long block_nr;            /* its entry, shown as restart_syscall's; -1: none */
	uint64_t end_rip;         /* the current call's return address, where its EINTR leaves rip */
	int seccomp_stopped;      /* the call being made had a seccomp stop (its exit stop follows) */
	uint64_t clone_flags;     /* of the clone being made (clone_before to fork_child) */
	struct zv_pt_slot *child_slot; /* a traced thread being made: its slot (clone_before to clone_after) */
	int perf_fd[4];           /* the debug registers' breakpoints, + 1 (0: none) */
	uint64_t dr6;             /* what DR6 reads: the breakpoint that hit */
	uint64_t dr7;             /* as the tracer wrote it */
	uint64_t dr[4];
};
#endif
