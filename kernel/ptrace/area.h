/* The memory a tracer and its tracees share (kernel/ptrace/area.c). Each
 * traced address space has an area, a memfd both map: a header, then one
 * slot per traced thread. A stop is the tracee writing its slot (the
 * registers as the guest had them, the wait status, the siginfo) and
 * ringing the tracer's bell, a memfd page of the tracer's that every
 * tracee maps: a futex wake. The tracer's requests are commands in the
 * slot, which the stopped thread serves in its own process (memory, the
 * vector state, debug registers) while registers are read and written in
 * the slot directly; a resume is one more command. A side that sleeps on
 * a futex says so (the slot's sleeping, the bell's sleepers), and a wake
 * is made only for a sleeper: no socket, no signal, and no futex call
 * when the other side has not gone to sleep yet. */
#ifndef ZV_PTRACE_AREA_H
#define ZV_PTRACE_AREA_H
#include <stdint.h>
#include "arch/context.h"

#define ZV_PT_SLOTS 128                    /* traced threads per address space */
#define ZV_PT_SLOT_BYTES (64 * 1024UL)
#define ZV_PT_HEAD_BYTES 4096UL            /* a slot's fields; its buffer follows */
#define ZV_PT_BUF (ZV_PT_SLOT_BYTES - ZV_PT_HEAD_BYTES)
#define ZV_PT_AREA_BYTES (ZV_PT_SLOT_BYTES * (ZV_PT_SLOTS + 1)) /* the header takes a slot's room */
#define ZV_PT_BELL_BYTES 4096UL
#define ZV_PT_MAGIC 0x7a76707461726561UL

/* struct user_regs_struct */
struct zv_pt_regs {
	uint64_t r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags,
		rsp, ss, fs_base, gs_base, ds, es, fs, gs;
};

enum zv_pt_state { ZV_PT_RUNNING, ZV_PT_STOPPED, ZV_PT_EXITED, ZV_PT_GONE };

/* What a stop is (GETSIGINFO, LISTEN and GET_SYSCALL_INFO differ by it). */
enum zv_pt_kind {
	ZV_PT_SIGNAL,        /* signal-delivery stop: the tracer picks the signal */
	ZV_PT_GROUP,         /* group stop (and SEIZE's PTRACE_EVENT_STOP) */
	ZV_PT_SYSCALL_ENTRY,
	ZV_PT_SYSCALL_EXIT,
	ZV_PT_EVENT,         /* PTRACE_EVENT_* and the legacy exec SIGTRAP */
	ZV_PT_SECCOMP,       /* PTRACE_EVENT_SECCOMP: a filter's SECCOMP_RET_TRACE, before the call */
};

/* How the tracer resumes a thread. */
enum zv_pt_resume { ZV_PT_CONT, ZV_PT_SYSCALL, ZV_PT_STEP, ZV_PT_SYSEMU, ZV_PT_SYSEMU_STEP, ZV_PT_LISTEN,
		    ZV_PT_DETACH };

/* What the tracer asks of a stopped thread. */
enum zv_pt_cmd {
	ZV_PT_CMD_RESUME = 1, /* arg0: enum zv_pt_resume, arg1: the signal */
	ZV_PT_CMD_READ,       /* arg0: address, arg1: length (<= ZV_PT_BUF) into buf; ret: bytes or -errno */
	ZV_PT_CMD_WRITE,      /* the same from buf */
	ZV_PT_CMD_GETFP,      /* the xsave image into buf (standard format, as NT_X86_XSTATE); ret: its size */
	ZV_PT_CMD_SETFP,      /* arg0: bytes of buf, arg1: 1 if only the fxsave part */
	ZV_PT_CMD_DEBUGREG,   /* arg0: register 0..7, arg1: value; ret: 0 or -errno */
	ZV_PT_CMD_PROCFILE,   /* the guest's view of /proc/PID/<buf>: maps, smaps, numa_maps into buf; ret: bytes */
	ZV_PT_CMD_KILL,       /* end the process with SIGKILL */
};

struct zv_pt_syscall_info { /* struct ptrace_syscall_info */
	uint8_t op, pad[3];
	uint32_t arch;
	uint64_t ip, sp;
	union {
		struct { uint64_t nr, args[6]; } entry;
		struct { int64_t rval; uint8_t is_error; } exit;
		struct { uint64_t nr, args[6]; uint32_t ret_data; } seccomp;
	};
};

struct zv_pt_slot {
	/* the tracee's, set when the slot is taken */
	volatile int32_t tid;        /* the guest's tid; 0: free */
	int32_t pid, htid, hpid;
	/* a stop: the tracee writes these, then state and stops */
	volatile uint32_t state;     /* enum zv_pt_state */
	volatile uint32_t stops;     /* stops and the exit so far: each reported once */
	int32_t status;              /* what wait reports of it */
	int32_t end_status;          /* what wait reports of its end (apart: a stop may be on its way at once) */
	int32_t kind;                /* enum zv_pt_kind */
	int32_t has_si;              /* GETSIGINFO has something to show */
	int32_t listening;           /* PTRACE_LISTEN: stopped, but a new event is reported */
	int32_t ended_in_stop;       /* the process's end came in a stop: its registers stay readable */
	volatile int32_t execing;    /* its host execve is under way: a thread's tid goes, its image takes the leader's */
	zv_siginfo si;               /* the stop's siginfo (SETSIGINFO writes it) */
	uint64_t msg;                /* GETEVENTMSG */
	struct zv_pt_regs regs;      /* the guest's registers (SETREGS writes them) */
	volatile uint32_t regs_dirty;
	volatile uint32_t mask_dirty;
	uint64_t sigmask;            /* the guest's signal mask (SETSIGMASK writes it) */
	struct zv_pt_syscall_info sc;
	uint64_t dr[8];              /* the debug registers as they read */
	/* the tracer's, read by the tracee */
	volatile uint32_t options;   /* PTRACE_O_* */
	volatile int32_t seized;
	volatile int32_t tracer_pid; /* the guest's pid of the tracer, as the tracee's /proc shows it */
	volatile int32_t dropped;    /* the tracer let it go (detached, or reported its end) */
	volatile uint32_t want;      /* stops asked (ZV_PT_WANT_*), set before the queued SIGSYS that wakes the
	                              * thread, which the host drops while a SIGSYS (a call's trap) is pending */
	volatile int32_t stop_code, stop_pid; /* a SIGSTOP from another process (ZV_PT_WANT_STOP_FROM): */
	volatile uint32_t stop_uid;           /* its si_code, si_pid, si_uid (ptrace/sigstop.c) */
	uint64_t ru[18];             /* struct rusage of the process and its children at the stop (bell's rusage) */
	/* commands: the tracer writes cmd and arg, then bumps cmd_seq; the
	 * tracee answers in ret and bumps ans_seq (both futexes) */
	volatile uint32_t cmd_seq, ans_seq;
	volatile uint32_t sleeping;  /* the stopped thread sleeps on cmd_seq: a command wakes it */
	int32_t cmd;
	uint64_t arg[4];
	int64_t ret;
	uint8_t head_end[0];
	uint8_t buf[ZV_PT_BUF] __attribute__((aligned(4096)));
};
_Static_assert(__builtin_offsetof(struct zv_pt_slot, buf) == ZV_PT_HEAD_BYTES, "slot layout");
_Static_assert(sizeof(struct zv_pt_slot) == ZV_PT_SLOT_BYTES, "slot size");

struct zv_pt_area {
	uint64_t magic;
	int32_t hpid, pid;           /* the address space's first process */
	volatile int32_t nslots;     /* slots handed out so far: the tracer looks up to here */
	volatile int32_t lock;
	char exe[2048];              /* its program, as its /proc/PID/exe shows it to the tracer */
};
_Static_assert(sizeof(struct zv_pt_area) <= ZV_PT_SLOT_BYTES, "area header");

/* The tracer's page, mapped by each of its tracees. */
struct zv_pt_bell {
	uint64_t magic;
	volatile uint32_t ring;      /* futex: bumped at every stop and exit */
	int32_t tracer_hpid, tracer_pid;
	volatile int32_t notify;     /* its guest would see SIGCHLD: a stop queues it one */
	volatile int32_t rusage;     /* its guest's waits ask for struct rusage (strace -c): stops give it */
	volatile int32_t gone;       /* the tracer ended: tracees go on untraced */
	volatile uint32_t sleepers;  /* the tracer's threads asleep on ring: a stop wakes them */
};

static inline struct zv_pt_slot *zv_pt_slot_at(struct zv_pt_area *a, int i)
{
	return (struct zv_pt_slot *)((char *)a + ZV_PT_SLOT_BYTES * (uint64_t)(i + 1));
}
#endif
