/* The guest's own sandboxing (DESIGN 5.9): Syscall User Dispatch, seccomp
 * filters (errno and trap), strict mode and PTRACE_TRACEME must give the
 * native result or a documented errno (zvisor documents EINVAL for the ones
 * it refuses), never a hang or a kernel crash. Each section prints one line
 * "NAME: result"; a refused call prints "NAME: ERRNO". */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

/* kernel ABI constants, spelled out so that the musl build needs no
 * <linux/...> headers */
#define PR_SET_SYSCALL_USER_DISPATCH_ 59
#define PR_SYS_DISPATCH_OFF_ 0
#define PR_SYS_DISPATCH_ON_ 1
#define SELECTOR_ALLOW 0
#define SELECTOR_BLOCK 1
#define SECCOMP_SET_MODE_FILTER_ 1
#define SECCOMP_MODE_STRICT_ 1
#define SECCOMP_MODE_FILTER_ 2
#define RET_ALLOW 0x7fff0000u
#define RET_ERRNO 0x00050000u
#define RET_TRAP 0x00030000u
#define AUDIT_ARCH_X86_64_ 0xc000003eu
#define BPF_LD_W_ABS 0x20
#define BPF_JEQ_K 0x15
#define BPF_RET_K 0x06

struct bpf_insn { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct bpf_prog { unsigned short len; struct bpf_insn *insns; };

static const char *errname(int e)
{
	switch (e) {
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case ENOSYS: return "ENOSYS";
	case EBUSY: return "EBUSY";
	default: return "other";
	}
}

static long raw0(long nr)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr) : "rcx", "r11", "memory");
	return r;
}

static volatile char selector = SELECTOR_ALLOW;
static volatile int trap_code, trap_nr;

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	selector = SELECTOR_ALLOW; /* before anything else, even rt_sigreturn */
	trap_code = si->si_code;
	trap_nr = si->si_syscall;
	uc->uc_mcontext.gregs[REG_RAX] = si->si_syscall == SYS_getppid ? 4242 : 4343;
}

/* A filter: the given syscall gets `action`, everything else is allowed. */
static long install(int via_prctl, int nr, uint32_t action)
{
	struct bpf_insn f[] = {
		{ BPF_LD_W_ABS, 0, 0, 4 },			/* arch */
		{ BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64_ },
		{ BPF_RET_K, 0, 0, RET_ALLOW },
		{ BPF_LD_W_ABS, 0, 0, 0 },			/* nr */
		{ BPF_JEQ_K, 0, 1, (uint32_t)nr },
		{ BPF_RET_K, 0, 0, action },
		{ BPF_RET_K, 0, 0, RET_ALLOW },
	};
	struct bpf_prog prog = { sizeof(f) / sizeof(f[0]), f };
	if (via_prctl)
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER_, &prog, 0, 0);
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER_, 0, &prog);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);

	/* what the guest sees before it sandboxes itself */
	printf("initial: PR_GET_SECCOMP %d, PR_GET_NO_NEW_PRIVS %d\n", prctl(PR_GET_SECCOMP, 0, 0, 0, 0),
	       prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));

	/* Syscall User Dispatch with no exempt region: a blocked getppid traps
	 * into our handler, which emulates it */
	long r = prctl(PR_SET_SYSCALL_USER_DISPATCH_, PR_SYS_DISPATCH_ON_, 0, 0, &selector);
	if (r) {
		printf("sud: %s\n", errname(errno));
	} else {
		selector = SELECTOR_BLOCK;
		long v = raw0(SYS_getppid);
		selector = SELECTOR_ALLOW;
		long off = prctl(PR_SET_SYSCALL_USER_DISPATCH_, PR_SYS_DISPATCH_OFF_, 0, 0, 0);
		printf("sud: on, getppid trapped with si_code %d si_syscall %d, returned %ld; off %ld\n",
		       trap_code, trap_nr, v, off);
	}

	/* strict mode in a child: write works, getpid is fatal */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT_, 0, 0, 0))
			_exit(100 + errno);
		syscall(SYS_write, 1, "", 0);
		syscall(SYS_getpid);
		syscall(SYS_exit, 0);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) > 100)
		printf("strict: %s\n", errname(WEXITSTATUS(st) - 100));
	else
		printf("strict: child %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exited",
		       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

	/* PTRACE_TRACEME in a child */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(ptrace(PTRACE_TRACEME, 0, 0, 0) ? 100 + errno : 0);
	waitpid(pid, &st, 0);
	if (WIFSTOPPED(st)) { /* a ptrace stop reported to us, its tracer */
		printf("traceme: child stopped by signal %d\n", WSTOPSIG(st));
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) > 100)
		printf("traceme: %s\n", errname(WEXITSTATUS(st) - 100));
	else
		printf("traceme: child %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exited",
		       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

	int set = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	printf("no_new_privs: set %d, now %d\n", set, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));

	/* seccomp(): getppid fails with EPERM, everything else still works */
	if (install(0, SYS_getppid, RET_ERRNO | EPERM)) {
		printf("seccomp_errno: %s\n", errname(errno));
	} else {
		long v = raw0(SYS_getppid); /* -EPERM */
		int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
		printf("seccomp_errno: getppid %ld, getpid works %d, PR_GET_SECCOMP %d\n", v,
		       raw0(SYS_getpid) > 0, mode);
	}

	/* a SECCOMP_RET_TRAP filter: the guest's own SIGSYS handler gets it */
	trap_code = trap_nr = 0;
	if (install(0, SYS_getuid, RET_TRAP)) {
		printf("seccomp_trap: %s\n", errname(errno));
	} else {
		long v = raw0(SYS_getuid);
		printf("seccomp_trap: getuid trapped with si_code %d si_syscall %d, returned %ld\n",
		       trap_code, trap_nr, v);
	}

	/* the prctl interface */
	if (install(1, SYS_getpgrp, RET_ERRNO | EACCES)) {
		printf("prctl_seccomp: %s\n", errname(errno));
	} else {
		long v = raw0(SYS_getpgrp); /* -EACCES */
		printf("prctl_seccomp: getpgrp %ld\n", v);
	}

	/* a filter that rejects the kernel's own host calls would break it;
	 * after all this the guest must still print, fork and exit normally */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(9);
	waitpid(pid, &st, 0);
	printf("after: write works, fork child exit %d\n", WEXITSTATUS(st));
	return 0;
}
