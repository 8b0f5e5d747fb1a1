/* siginfo as strace prints it in "--- SIGX {...} ---" lines. */
#include "zvisor.h"
#include "trace/trace.h"

struct kinfo {
	int signo, err, code, pad;
	union {
		struct { int pid; unsigned uid; int status; int pad; long utime, stime; } chld;
		/* sigval is a union: si_int is the low half of si_ptr */
		struct { int pid; unsigned uid; union { int val_int; uint64_t val_ptr; }; } kill;
		struct { int tid, overrun; union { int val_int; uint64_t val_ptr; }; } timer;
		struct { uint64_t addr; } fault;
		struct { uint64_t call_addr; int syscall; unsigned arch; } sys;
	} u;
};

static const char *code_name(int sig, int code)
{
	switch (code) {
	case 0: return "SI_USER";
	case 0x80: return "SI_KERNEL";
	case -1: return "SI_QUEUE";
	case -2: return "SI_TIMER";
	case -3: return "SI_MESGQ";
	case -4: return "SI_ASYNCIO";
	case -5: return "SI_SIGIO";
	case -6: return "SI_TKILL";
	}
	static const char *const chld[] = { "CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED" };
	static const char *const segv[] = { "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR" };
	static const char *const bus[] = { "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR" };
	static const char *const ill[] = { "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK" };
	static const char *const fpe[] = { "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB" };
	if (code < 1)
		return NULL;
	switch (sig) {
	case 17: return code <= 6 ? chld[code - 1] : NULL;
	case 11: return code <= 4 ? segv[code - 1] : NULL;
	case 7: return code <= 3 ? bus[code - 1] : NULL;
	case 4: return code <= 8 ? ill[code - 1] : NULL;
	case 8: return code <= 8 ? fpe[code - 1] : NULL;
	case 31: return code == 1 ? "SYS_SECCOMP" : code == 2 ? "SYS_USER_DISPATCH" : NULL;
	case 5: return code == 1 ? "TRAP_BRKPT" : code == 2 ? "TRAP_TRACE" : NULL;
	}
	return NULL;
}

void zv_decode_siginfo(struct zv_tb *b, const void *p)
{
	const struct kinfo *si = p;
	tb_puts(b, "{si_signo=");
	tb_signame(b, si->signo);
	tb_puts(b, ", si_code=");
	const char *cn = code_name(si->signo, si->code);
	if (cn)
		tb_puts(b, cn);
	else
		tb_printf(b, "%d", si->code);
	if (si->err)
		tb_printf(b, ", si_errno=%d", si->err);
	if (si->code <= 0 && si->code != -2) { /* sent by a process */
		tb_printf(b, ", si_pid=%d, si_uid=%u", si->u.kill.pid, si->u.kill.uid);
		if (si->code == -1)
			tb_printf(b, ", si_int=%d, si_ptr=%p", si->u.kill.val_int, (void *)si->u.kill.val_ptr);
	} else if (si->code == -2) {
		tb_printf(b, ", si_timerid=%d, si_overrun=%d, si_int=%d, si_ptr=%p", si->u.timer.tid,
			  si->u.timer.overrun, si->u.timer.val_int, (void *)si->u.timer.val_ptr);
	} else if (si->signo == 17 && si->code != 0x80) {
		tb_printf(b, ", si_pid=%d, si_uid=%u, si_status=", si->u.chld.pid, si->u.chld.uid);
		if (si->code == 1)
			tb_printf(b, "%d", si->u.chld.status);
		else
			tb_signame(b, si->u.chld.status);
		tb_printf(b, ", si_utime=%ld, si_stime=%ld", si->u.chld.utime, si->u.chld.stime);
	} else if ((si->signo == 11 || si->signo == 7 || si->signo == 4 || si->signo == 8) && si->code != 0x80) {
		tb_puts(b, ", si_addr=");
		tb_ptr(b, si->u.fault.addr);
	} else if (si->signo == 31 && si->code == 1) {
		tb_puts(b, ", si_call_addr=");
		tb_ptr(b, si->u.sys.call_addr);
		tb_printf(b, ", si_syscall=%d, si_arch=AUDIT_ARCH_X86_64", si->u.sys.syscall);
	}
	tb_putc(b, '}');
}
