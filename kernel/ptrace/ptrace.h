/* The guest's ptrace, emulated between zvisor-hosted processes (docs/DESIGN.md,
 * "the guest's ptrace"): what the files of kernel/ptrace/ share.
 *   area.c     the shared area and the tracer's bell; this process as a tracee
 *   stop.c     a tracee's stops: report, serve the tracer's commands, resume
 *   regs.c     the guest's registers as user_regs_struct, the USER area, regsets
 *   mem.c      a stopped tracee's memory, with the code zvisor rewrote shown as it was
 *   debugreg.c DR0-DR7 through perf breakpoints
 *   attach.c   TRACEME, ATTACH, SEIZE: the rendezvous, the host's rules
 *   tracer.c   this process as a tracer: its tracees
 *   request.c  the ptrace(2) requests
 *   wait.c     wait4 and waitid with the tracees' stops and exits
 *   layer.c    the layer: syscall stops, signals, events (fork, exec, exit)
 *   step.c     single steps and the traps of a traced thread
 *   sigstop.c  SIGSTOP sent to a tracee by a process that is not its tracer
 *   jobstop.c  a tracee's group stop and SIGCONT as its real parent sees them */
#ifndef ZV_PTRACE_PTRACE_H
#define ZV_PTRACE_PTRACE_H
#include <stdint.h>
#include <stddef.h>
#include "ptrace/area.h"

struct zv_thread;
struct zv_ucontext;
struct zv_call;

/* Requests. */
#define PT_TRACEME 0
#define PT_PEEKTEXT 1
#define PT_PEEKDATA 2
#define PT_PEEKUSR 3
#define PT_POKETEXT 4
#define PT_POKEDATA 5
#define PT_POKEUSR 6
#define PT_CONT 7
#define PT_KILL 8
#define PT_SINGLESTEP 9
#define PT_GETREGS 12
#define PT_SETREGS 13
#define PT_GETFPREGS 14
#define PT_SETFPREGS 15
#define PT_ATTACH 16
#define PT_DETACH 17
#define PT_SYSCALL 24
#define PT_ARCH_PRCTL 30
#define PT_SYSEMU 31
#define PT_SYSEMU_SINGLESTEP 32
#define PT_SETOPTIONS 0x4200
#define PT_GETEVENTMSG 0x4201
#define PT_GETSIGINFO 0x4202
#define PT_SETSIGINFO 0x4203
#define PT_GETREGSET 0x4204
#define PT_SETREGSET 0x4205
#define PT_SEIZE 0x4206
#define PT_INTERRUPT 0x4207
#define PT_LISTEN 0x4208
#define PT_PEEKSIGINFO 0x4209
#define PT_GETSIGMASK 0x420a
#define PT_SETSIGMASK 0x420b
#define PT_GET_SYSCALL_INFO 0x420e

/* Options and events. */
#define PT_O_TRACESYSGOOD 0x1
#define PT_O_TRACEFORK 0x2
#define PT_O_TRACEVFORK 0x4
#define PT_O_TRACECLONE 0x8
#define PT_O_TRACEEXEC 0x10
#define PT_O_TRACEVFORKDONE 0x20
#define PT_O_TRACEEXIT 0x40
#define PT_O_TRACESECCOMP 0x80
#define PT_O_EXITKILL 0x100000
#define PT_O_SUSPEND_SECCOMP 0x200000
#define PT_O_MASK 0x3000ff
#define PT_EVENT_FORK 1
#define PT_EVENT_VFORK 2
#define PT_EVENT_CLONE 3
#define PT_EVENT_EXEC 4
#define PT_EVENT_VFORK_DONE 5
#define PT_EVENT_EXIT 6
#define PT_EVENT_SECCOMP 7
#define PT_EVENT_STOP 128

#define SIGTRAP_ 5
#define SIGSTOP_ 19
#define SIGCHLD_ 17
#define SIGKILL_ 9

/* The queued SIGSYS words of this feature: PT_MAGIC << 40 | what << 32 | arg. */
#define ZV_PT_SIG_MAGIC 0x7a7671UL /* "zvq" */
#define ZV_PT_SIG_WAKE 1   /* a tracee thread: look at pt.want and the slot's want (arg: unused) */
#define ZV_PT_SIG_NOTIFY 2 /* (a queued SIGCHLD) a tracee stopped (arg: its tid): CLD_TRAPPED */
#define ZV_PT_SIG_STOP 3   /* SIGSTOP from a process that is not the tracer, to the process (arg: its si_code; si_pid, si_uid the sender's; bytes 16-19 the host tid named, or 0) */
#define ZV_PT_SIG_JOB 4    /* to a tracee's real parent: it stopped or continued (arg: CLD_* << 8 | signal) */

/* What a thread is asked from outside (pt.want). */
#define ZV_PT_WANT_SIGSTOP 1   /* ATTACH's SIGSTOP, or one the guest sent it */
#define ZV_PT_WANT_INTERRUPT 2 /* PTRACE_INTERRUPT: a PTRACE_EVENT_STOP */
#define ZV_PT_WANT_STOP_FROM 4 /* a SIGSTOP from another process (the slot's stop_code, stop_pid, stop_uid) */

/* A SIGSTOP that came to a fork child before it joined its tracer. */
struct zv_pt_held_stop {
	int code, pid;
	uint32_t uid;
	int set;
};

/* This process as a tracee (area.c). */
struct zv_pt_tracee {
	struct zv_pt_area *area;     /* NULL: no thread traced */
	struct zv_pt_bell *bell;     /* the tracer's */
	int tracer_hpid, tracer_pid;
	int traced;                  /* threads with a slot */
	int ptracer;                 /* PR_SET_PTRACER: the host pid allowed to attach, -1 any, 0 none */
	volatile int lock;
	uint64_t ending;             /* a process ends as a whole: its host pid << 32 | 0x10000 | its wait status
	                              * (per process: a CLONE_VM child process shares this memory) */
	int joining;                 /* a fork child joins its tracer (sigstop.c holds a SIGSTOP meanwhile) */
	int group_stop;              /* the stop signal of a group stop its real parent was told of, until a SIGCONT */
	struct zv_pt_held_stop held;
};
extern struct zv_pt_tracee zv_pt_me;

/* area.c */
long zv_pt_area_new(int *fd);           /* a new area, mapped; its memfd in *fd (the caller closes it) */
struct zv_pt_slot *zv_pt_slot_take(struct zv_thread *x);
int zv_pt_slot_end(struct zv_pt_slot *s, int status); /* its thread ended with its process; 0: it had ended */
void zv_pt_traced(struct zv_thread *x, struct zv_pt_slot *s, int tracer_pid); /* x is traced from now on */
long zv_pt_inner(struct zv_call *c); /* the call itself, a tracer's waits and /proc/PID/mem its own */
long zv_pt_entry_made(struct zv_call *c, long nr, long *a, uint64_t rax, int came); /* (entrycall.c) */
/* sigstop.c: kill, tkill or tgkill of SIGSTOP to another process that
 * maps a ptrace area, sent as a queued SIGSYS (1: taken, *ret the call's
 * result); its arrival there; a SIGSTOP posted to t with that sender. */
int zv_pt_stop_other(struct zv_thread *t, long nr, int pid, int tid, long *ret);
void zv_pt_stop_arrived(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc);
void zv_pt_stop_post(struct zv_thread *t, int code, int pid, uint32_t uid);
/* jobstop.c: this tracee's group stop (its signal) and its SIGCONT, told
 * to its real parent; their word arriving there; a wait4 or waitid there
 * (next: the wait without them). */
void zv_pt_job_stop(struct zv_thread *t, int sig);
void zv_pt_job_cont(struct zv_thread *t);
void zv_pt_job_arrived(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc);
long zv_pt_job_wait(struct zv_call *c, long (*next)(struct zv_call *));
void zv_pt_untraced(struct zv_thread *x);
void zv_pt_ring(struct zv_pt_bell *b);
void zv_pt_bell_notify(struct zv_thread *t, int code, int status); /* the tracer's SIGCHLD: CLD_*, si_status */
void zv_pt_forget(void);                /* a fork child or a new image: nothing of the parent's */
void zv_pt_set_bounce(struct zv_thread *t);
void zv_pt_wake_thread(struct zv_thread *x, int want); /* asks another thread of this process to stop */
void zv_pt_wake_htid(int htid);          /* a queued SIGSYS: its way out looks at pt.want */
long zv_pt_futex_wait(volatile uint32_t *w, uint32_t v, long ms);
void zv_pt_futex_wake(volatile uint32_t *w);
long zv_pt_sleep(volatile uint32_t *w, uint32_t v, volatile uint32_t *sleepers, long ms);
void zv_pt_wake_sleepers(volatile uint32_t *w, volatile uint32_t *sleepers); /* after a seq_cst change of *w */
int zv_pt_tracer_alive(void);

/* stop.c: reports a stop of kind with wait status status, serves the
 * tracer until it resumes the thread; returns the signal it resumes with. */
int zv_pt_stop(struct zv_thread *t, struct zv_ucontext *uc, int kind, int status, const zv_siginfo *si, uint64_t msg);
int zv_pt_event_status(int event); /* the wait status of PTRACE_EVENT_event */
/* The thread ends (status as wait reports it): its slot says so. */
void zv_pt_exited(struct zv_thread *t, int status);
void zv_pt_rusage(uint64_t ru[18]);

/* regs.c */
void zv_pt_regs_from(struct zv_thread *t, const struct zv_ucontext *uc, struct zv_pt_regs *r);
void zv_pt_regs_to(struct zv_thread *t, struct zv_ucontext *uc, const struct zv_pt_regs *r);
long zv_pt_fp_get(struct zv_ucontext *uc, uint8_t *buf, size_t max);
long zv_pt_fp_set(struct zv_ucontext *uc, const uint8_t *buf, size_t n, int fx_only);
long zv_pt_xstate_size(void);
/* The USER area: offset -> a register of r (index into it) or a debug register. */
#define ZV_PT_USER_SIZE 928
#define ZV_PT_USER_DEBUGREG 848
long zv_pt_user_reg(uint64_t off);       /* index into zv_pt_regs, -1: not a register */
int zv_pt_regs_check(const struct zv_pt_regs *r); /* SETREGS' errno: 0, -EIO */

/* mem.c */
long zv_pt_mem_read(uint64_t addr, uint8_t *buf, size_t n);
long zv_pt_mem_write(uint64_t addr, const uint8_t *buf, size_t n);

/* debugreg.c */
long zv_pt_debugreg_set(struct zv_thread *t, int i, uint64_t v);
int zv_pt_debugreg_hit(struct zv_thread *t, const zv_siginfo *si); /* a perf breakpoint's SIGTRAP: DR6 set */
void zv_pt_debugreg_drop(struct zv_thread *t);

/* step.c */
void zv_pt_step_begin(struct zv_thread *t, struct zv_ucontext *uc);
void zv_pt_step_end(struct zv_thread *t, struct zv_ucontext *uc);
/* A SIGTRAP of a traced thread: 1 if it was ours and handled (a step
 * into zvisor's own code continued, or stopped here). */
int zv_pt_trap(struct zv_thread *t, zv_siginfo *si, struct zv_ucontext *uc);

/* attach.c */
long zv_pt_traceme(struct zv_thread *t);
long zv_pt_attach(struct zv_thread *t, int tid, int seize, uint64_t options);
long zv_pt_join(struct zv_thread *t, int reason, int parent);
#define ZV_PT_JOIN_TRACEME 0
#define ZV_PT_JOIN_CHILD 1  /* an auto-attached fork child */
#define ZV_PT_JOIN_EXEC 2   /* a new image of a traced process */
int zv_pt_may_attach(int hpid, int htid); /* the host's rules (same user, Yama): 0 or -errno */

/* tracer.c: this process's tracees */
struct zv_pt_tracee_ref {
	int tid, pid, htid, hpid;
	struct zv_pt_slot *s;
	struct zv_pt_area *area;
	uint32_t reported;   /* the slot's stops counter at the last report */
	int host_child;      /* the process is this process's child on the host */
	int pending;         /* SEIZE waits for the tracee's answer: listener below */
	int stop_coming;     /* ATTACHed while stopped on the host: its SIGSTOP stop comes at once */
	int listener, lslot, seize, interrupt; /* (interrupt: PTRACE_INTERRUPT came meanwhile) */
	uint64_t options;
	int exited;          /* its exit reported: the entry goes */
};
#define ZV_PT_MAX_TRACEES 512
struct zv_pt_tracer {
	struct zv_pt_bell *bell;
	int bell_fd;         /* only while a rendezvous needs it */
	int n;
	struct zv_pt_tracee_ref *tr; /* ZV_PT_MAX_TRACEES entries */
	volatile int lock;
	struct zv_pt_expect {
		int pid, seized;
		uint64_t options;
	} expect[16];        /* children announced by a fork event, not joined yet, and their parent's options */
	struct { int hpid; struct zv_pt_area *a; } areas[64]; /* the tracees' areas, by process */
};
extern struct zv_pt_tracer zv_pt_tracer;
struct zv_pt_tracee_ref *zv_pt_find(int tid);
struct zv_pt_tracee_ref *zv_pt_add(int tid, int pid, int htid, int hpid, struct zv_pt_slot *s, struct zv_pt_area *a);
void zv_pt_drop(struct zv_pt_tracee_ref *r);
long zv_pt_wake_tracee(struct zv_pt_tracee_ref *r, int want); /* r's slot's want, then its wake (area.c) */
long zv_pt_bell_fd(void);
void zv_pt_bell_handles(struct zv_thread *t); /* notify: the guest handles SIGCHLD */
struct zv_pt_area *zv_pt_area_of(int hpid);      /* mapped already, or NULL */
void zv_pt_area_keep(int hpid, struct zv_pt_area *a);
void zv_pt_area_gone(int hpid);
int zv_pt_tracing(void);
void zv_pt_scan_areas(void);          /* threads a tracee's area gained (auto-attached clones) */
long zv_pt_cmd(struct zv_pt_tracee_ref *r, int cmd, uint64_t a0, uint64_t a1);
int zv_pt_alive(int hpid, int htid);
long zv_pt_complete(struct zv_pt_tracee_ref *r, int ms); /* a pending attach */
void zv_pt_expect(int pid, const struct zv_pt_slot *parent);
const struct zv_pt_expect *zv_pt_expected_one(int pid);
int zv_pt_expected(int pid);

/* procmem.c: a tracer's /proc/PID/mem of a tracee */
int zv_pt_procmem_sees(long nr);
int zv_pt_procmem_call(struct zv_call *c, long *ret);

/* wait.c */
long zv_pt_wait(struct zv_call *c);
void zv_pt_host_exit(int pid, int status); /* a tracee process ended (host wait) */

/* The guest's pid of this process's tracer: the host's. */
#endif
