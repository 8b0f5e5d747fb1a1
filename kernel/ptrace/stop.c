/* A tracee's stop: the thread writes its registers and the stop into its
 * slot, rings the tracer's bell, and serves the tracer's commands until it
 * is resumed; then the registers the tracer changed go back into the
 * guest's frame. The thread waits on a futex in the slot with the faults
 * (its memory reads are guarded) and SIGSYS (another kernel's knock,
 * served here) open, and every other host signal either held or, at a
 * syscall stop, deferred (keeps_mask). */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "peer/peer.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"

int zv_pt_event_status(int event)
{
	return (SIGTRAP_ | event << 8) << 8 | 0x7f;
}

#define CLD_EXITED_ 1
#define CLD_KILLED_ 2
#define CLD_DUMPED_ 3
#define CLD_TRAPPED_ 4
#define CLD_STOPPED_ 5

/* The SIGCHLD si_code and si_status of an end with wait status st. */
static int end_code(int st)
{
	return (st & 0x7f) == 0 ? CLD_EXITED_ : st & 0x80 ? CLD_DUMPED_ : CLD_KILLED_;
}

static int end_status(int st)
{
	return (st & 0x7f) == 0 ? (st >> 8) & 0xff : st & 0x7f;
}

static void syscall_info(struct zv_thread *t, struct zv_pt_slot *s, int kind)
{
	struct zv_pt_syscall_info *i = &s->sc;
	memset(i, 0, sizeof *i);
	i->arch = 0xc000003e; /* AUDIT_ARCH_X86_64 */
	i->ip = s->regs.rip;
	i->sp = s->regs.rsp;
	if (kind == ZV_PT_SYSCALL_ENTRY || kind == ZV_PT_SECCOMP) {
		/* (seccomp's nr and args lie where entry's do) */
		i->op = kind == ZV_PT_SECCOMP ? 3 : 1;
		i->entry.nr = s->regs.orig_rax;
		const uint64_t a[6] = { s->regs.rdi, s->regs.rsi, s->regs.rdx, s->regs.r10, s->regs.r8, s->regs.r9 };
		memcpy(i->entry.args, a, sizeof a);
		if (kind == ZV_PT_SECCOMP)
			i->seccomp.ret_data = (uint32_t)s->msg;
	} else if (kind == ZV_PT_SYSCALL_EXIT) {
		i->op = 2;
		i->exit.rval = (int64_t)s->regs.rax;
		i->exit.is_error = (int64_t)s->regs.rax < 0 && (int64_t)s->regs.rax >= -4095;
	}
}

static long serve(struct zv_thread *t, struct zv_ucontext *uc, struct zv_pt_slot *s)
{
	switch (s->cmd) {
	case ZV_PT_CMD_READ:
		return s->arg[1] > ZV_PT_BUF ? -EINVAL : zv_pt_mem_read(s->arg[0], s->buf, s->arg[1]);
	case ZV_PT_CMD_WRITE:
		return s->arg[1] > ZV_PT_BUF ? -EINVAL : zv_pt_mem_write(s->arg[0], s->buf, s->arg[1]);
	case ZV_PT_CMD_GETFP:
		return zv_pt_fp_get(uc, s->buf, ZV_PT_BUF);
	case ZV_PT_CMD_SETFP:
		return s->arg[0] > ZV_PT_BUF ? -EINVAL : zv_pt_fp_set(uc, s->buf, s->arg[0], (int)s->arg[1]);
	case ZV_PT_CMD_DEBUGREG:
		return zv_pt_debugreg_set(t, (int)s->arg[0], s->arg[1]);
	case ZV_PT_CMD_PROCFILE: {
		char name[16];
		zv_strlcpy(name, (const char *)s->buf, sizeof name);
		return zv_event_own_text(name, (char *)s->buf, ZV_PT_BUF);
	}
	case ZV_PT_CMD_KILL:
		zv_die_by_signal(SIGKILL_);
	default:
		return -EINVAL;
	}
}

/* The tracer is gone: PTRACE_O_EXITKILL kills, else the thread goes on
 * untraced, as the host detaches tracees when their tracer exits. */
static void orphaned(struct zv_thread *t)
{
	if (t->pt.slot->options & PT_O_EXITKILL)
		zv_die_by_signal(SIGKILL_);
	zv_pt_untraced(t);
}

/* 0x10000 | the wait status of this process's end, once exit_group or a
 * fatal signal ends it as a whole; 0 until then. */
static int process_ending(void)
{
	uint64_t e = __atomic_load_n(&zv_pt_me.ending, __ATOMIC_SEQ_CST);
	return e && (int)(e >> 32) == (int)zv_getpid() ? (int)(uint32_t)e : 0;
}

/* A stop that comes while the process ends does not happen, as natively
 * (a killed thread does not stop): the thread's end is in its slot, and
 * it waits for the host to end it. */
static void __attribute__((noreturn)) ended(struct zv_thread *t, int ending)
{
	struct zv_pt_slot *s = t->pt.slot;
	if (zv_pt_slot_end(s, ending & 0xffff))
		zv_pt_bell_notify(t, end_code(ending & 0xffff), end_status(ending & 0xffff));
	zv_host_set_mask(~0UL, NULL);
	for (;;) {
		struct { long s, ns; } ts = { 1, 0 };
		zv_sys2(__NR_nanosleep, &ts, 0);
	}
}

/* Whether a stop may wait with the host's mask as it is: a syscall stop
 * on the call's own SIGSYS frame (sys_uc), whose handler runs with an
 * empty sa_mask, so the live mask is the guest's, SIGSYS and the faults
 * open (unless the guest held a fault: faults_blocked). A guest signal
 * arriving there interrupts kernel text and is deferred (sys/hostsig.c
 * in_kernel), exactly as when the held mask came back at the stop's end:
 * it is delivered on the way out, after the resume, as a signal pending
 * at a native stop is; one the guest blocks stays pending on the host.
 * Other stops run where the mask is unknown or full (a signal's handler),
 * and zvisor's own signals (--checkpoint-on) must wait for the resume. */
static int keeps_mask(const struct zv_thread *t, const struct zv_ucontext *uc, int kind)
{
	return (kind == ZV_PT_SYSCALL_ENTRY || kind == ZV_PT_SYSCALL_EXIT) && t->sys_uc == uc &&
	       !t->faults_blocked && !(zv_kernel_signals() & ~ZV_SIGBIT(31));
}

/* The siginfo PTRACE_GETSIGINFO reads at a stop that is no signal's: the
 * host's ptrace_do_notify gives syscall, event and seccomp stops, and a
 * seized thread's group stop (PTRACE_EVENT_STOP), si_code the stop's
 * exit code (SIGTRAP | 0x80, SIGTRAP | event << 8, ...) and si_pid and
 * si_uid the tracee's; a group stop of an attached thread has none
 * (EINVAL). gdb's $_siginfo at a `catch syscall` stop reads it. */
static int notify_info(const struct zv_thread *t, int kind, int status, zv_siginfo *out)
{
	if (kind == ZV_PT_SIGNAL || (kind == ZV_PT_GROUP && !(status >> 16)))
		return 0;
	memset(out, 0, sizeof *out);
	out->si_signo = (status >> 8) & 0x7f; /* (0x80: TRACESYSGOOD's bit) */
	out->si_code = (status >> 8) & 0xffff;
	out->kill.pid = t->tid;
	out->kill.uid = zv_sender_uid(t, t->htid, 0, (uint32_t)zv_sys0(__NR_getuid));
	return 1;
}

#define SIGCONT_BIT ZV_SIGBIT(18)

/* A SIGCONT that came to a seized thread in a group stop its tracer left
 * with PTRACE_LISTEN: natively it wakes, and traps again at
 * PTRACE_EVENT_STOP with SIGTRAP (the group stop is over); the SIGCONT,
 * deferred meanwhile, has its signal-delivery stop once resumed. */
static int continued(struct zv_thread *t, struct zv_pt_slot *s, int kind, uint64_t had)
{
	if (kind != ZV_PT_GROUP || !s->listening ||
	    !(__atomic_load_n(&t->pending_set, __ATOMIC_ACQUIRE) & SIGCONT_BIT & ~had))
		return 0;
	s->status = SIGTRAP_ << 8 | 0x7f | PT_EVENT_STOP << 16;
	s->has_si = notify_info(t, kind, s->status, &s->si);
	s->listening = 0;
	zv_pt_job_cont(t); /* (natively the parent's CLD_CONTINUED comes before this trap) */
	__atomic_add_fetch(&s->stops, 1, __ATOMIC_RELEASE);
	zv_pt_bell_notify(t, CLD_STOPPED_, SIGTRAP_);
	return 1;
}

int zv_pt_stop(struct zv_thread *t, struct zv_ucontext *uc, int kind, int status, const zv_siginfo *si, uint64_t msg)
{
	struct zv_pt_slot *s = t->pt.slot;
	if (!s)
		return si ? si->si_signo : 0;
	uint64_t mask, had = t->pending_set;
	int keep = keeps_mask(t, uc, kind);
	/* (a group stop is woken by SIGCONT: continued) */
	if (!keep)
		zv_host_set_mask(~(ZV_FAULT_SIGNALS | ZV_SIGBIT(31) | (kind == ZV_PT_GROUP ? SIGCONT_BIT : 0)), &mask);
	zv_pt_step_end(t, uc);
	zv_pt_regs_from(t, uc, &s->regs);
	s->regs_dirty = 0;
	s->mask_dirty = 0;
	s->sigmask = zv_guest_mask(t, uc);
	s->kind = kind;
	s->status = status;
	s->msg = msg;
	s->has_si = si != NULL;
	if (si)
		s->si = *si;
	else
		s->has_si = notify_info(t, kind, status, &s->si);
	s->listening = 0;
	syscall_info(t, s, kind);
	if (zv_pt_me.bell && zv_pt_me.bell->rusage)
		zv_pt_rusage(s->ru);
	uint32_t served = __atomic_load_n(&s->cmd_seq, __ATOMIC_ACQUIRE);
	__atomic_store_n(&s->ans_seq, served, __ATOMIC_RELEASE);
	uint32_t was = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	int ending = process_ending();
	if (ending || was == ZV_PT_EXITED ||
	    !__atomic_compare_exchange_n(&s->state, &was, ZV_PT_STOPPED, 0, __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
		if ((ending = process_ending()))
			ended(t, ending); /* (the process's end marked this slot's, or does so next) */
		__atomic_store_n(&s->state, ZV_PT_STOPPED, __ATOMIC_RELEASE);
	}
	if (__atomic_add_fetch(&s->stops, 1, __ATOMIC_RELEASE) == 1)
		zv_pt_futex_wake(&s->stops); /* a new task's first: its parent's event waits for it (layer.c) */
	/* (the host's ptrace_stop: CLD_STOPPED for a group stop or
	 * PTRACE_EVENT_STOP, CLD_TRAPPED for the others) */
	zv_pt_bell_notify(t, kind == ZV_PT_GROUP ? CLD_STOPPED_ : CLD_TRAPPED_, (status >> 8) & 0x7f);
	if (kind == ZV_PT_GROUP)
		zv_pt_job_stop(t, (status >> 8) & 0xff); /* its real parent's, once published */
	int mode = ZV_PT_CONT, sig = 0;
	for (;;) {
		uint32_t now = __atomic_load_n(&s->cmd_seq, __ATOMIC_ACQUIRE);
		if (now == served && continued(t, s, kind, had))
			had |= SIGCONT_BIT;
		if (kind == ZV_PT_GROUP && (__atomic_load_n(&t->pending_set, __ATOMIC_ACQUIRE) & SIGCONT_BIT & ~had))
			zv_pt_job_cont(t); /* a SIGCONT while left in the group stop */
		if (now == served) {
			long r = zv_peer_pending() ? 0 : zv_pt_sleep(&s->cmd_seq, served, &s->sleeping, 500);
			/* (not before a command that came meanwhile: a knock
			 * of a new tracer's attach after a detach not yet
			 * taken would find the thread traced still) */
			if (zv_peer_pending() && __atomic_load_n(&s->cmd_seq, __ATOMIC_ACQUIRE) == served)
				zv_peer_serve_pending(t);
			/* (a signal deferred meanwhile ends the wait too: a
			 * stream of them must not hide the tracer's end) */
			if ((r == -ETIMEDOUT || r == -EINTR) && !zv_pt_tracer_alive()) {
				orphaned(t);
				sig = kind == ZV_PT_SIGNAL && si ? si->si_signo : 0;
				if (!keep)
					zv_host_set_mask(mask, NULL);
				return sig;
			}
			continue;
		}
		served = now;
		if (s->cmd == ZV_PT_CMD_RESUME) {
			mode = (int)s->arg[0];
			sig = (int)s->arg[1];
			/* answered without a wake: a resume's sender never waits */
			__atomic_store_n(&s->ans_seq, served, __ATOMIC_RELEASE);
			break;
		}
		s->ret = serve(t, uc, s);
		__atomic_store_n(&s->ans_seq, served, __ATOMIC_RELEASE);
		zv_pt_futex_wake(&s->ans_seq);
	}
	if (s->regs_dirty)
		zv_pt_regs_to(t, uc, &s->regs);
	if (s->mask_dirty)
		zv_signal_set_mask(t, uc, s->sigmask);
	if (kind == ZV_PT_SIGNAL && si && s->has_si)
		*(zv_siginfo *)si = s->si; /* SETSIGINFO: the signal delivered is described so */
	t->pt.mode = mode;
	if (mode == ZV_PT_DETACH) {
		zv_pt_untraced(t);
	} else {
		if (mode == ZV_PT_STEP || mode == ZV_PT_SYSEMU_STEP)
			zv_pt_step_begin(t, uc);
		zv_pt_set_bounce(t);
	}
	if (!keep)
		zv_host_set_mask(mask, NULL);
	return sig;
}

/* What wait4 reports of a stopped tracee: RUSAGE_BOTH of its process
 * (itself and its waited-for children), as the host's wait does. */
void zv_pt_rusage(uint64_t ru[18])
{
	uint64_t c[18];
	zv_sys2(__NR_getrusage, 0 /* RUSAGE_SELF */, ru);
	if (zv_sys2(__NR_getrusage, -1 /* RUSAGE_CHILDREN */, c) == 0) {
		for (int i = 0; i < 4; i += 2) { /* utime, stime: timevals */
			ru[i] += c[i];
			ru[i + 1] += c[i + 1];
			if (ru[i + 1] >= 1000000) {
				ru[i]++;
				ru[i + 1] -= 1000000;
			}
		}
		for (int i = 4; i < 18; i++)
			ru[i] = i == 4 ? (ru[i] > c[i] ? ru[i] : c[i]) : ru[i] + c[i]; /* maxrss: the larger */
	}
}

void zv_pt_exited(struct zv_thread *t, int status)
{
	struct zv_pt_slot *s = t->pt.slot;
	if (!s)
		return;
	if (zv_pt_me.bell && zv_pt_me.bell->rusage)
		zv_pt_rusage(s->ru);
	s->end_status = status;
	s->kind = -1;
	__atomic_store_n(&s->state, ZV_PT_EXITED, __ATOMIC_RELEASE);
	__atomic_add_fetch(&s->stops, 1, __ATOMIC_RELEASE);
	zv_pt_bell_notify(t, end_code(status), end_status(status));
}
