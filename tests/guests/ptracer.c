/* A small tracer of our own: ptrace between a parent and its child, each
 * mode one part of what gdb and strace need (tests/test_ptrace.py runs it
 * natively and under zvisor, where tracer and tracee are both guests).
 * Only facts that do not depend on libc's own calls are printed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

#include "say.h"

/* Functions whose bytes the tracer reads: getpid's syscall in a window of
 * 5 bytes before it (jump stubs rewrite it), and a few instructions to step. */
extern char sysfn[], sysfn_end[], stepfn[], stepfn_end[];
long sysfn_call(void) __asm__("sysfn");
void stepfn_call(void) __asm__("stepfn");
__asm__(".text\n.globl sysfn\n.type sysfn,@function\nsysfn:\n"
	"\tmov $39, %eax\n\tsyscall\n\tret\n.size sysfn, .-sysfn\nsysfn_end:\n"
	".globl stepfn\n.type stepfn,@function\nstepfn:\n"
	"\tnop\n\tmov $39, %eax\n\tsyscall\n\tnop\n\tret\n.size stepfn, .-stepfn\nstepfn_end:\n");

static volatile long value = 1234;

static int wait_stop(pid_t pid, const char *what)
{
	int st;
	CHECK(waitpid(pid, &st, __WALL) == pid);
	if (!WIFSTOPPED(st)) {
		say("%s: not stopped (%#x)\n", what, st);
		exit(1);
	}
	return st;
}

static pid_t traced_child(void (*body)(void))
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0);
		raise(SIGSTOP);
		body();
		_exit(0);
	}
	int st = wait_stop(pid, "first stop");
	say("first stop: %s\n", strsignal(WSTOPSIG(st)));
	return pid;
}

static void finish(pid_t pid)
{
	int st;
	CHECK(waitpid(pid, &st, __WALL) == pid);
	if (WIFEXITED(st))
		say("exited %d\n", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("killed by %s\n", strsignal(WTERMSIG(st)));
	else
		say("status %#x\n", st);
}

/* --- syscall: PTRACE_SYSCALL stops, with SYSGOOD and GET_SYSCALL_INFO */
static void syscall_body(void)
{
	syscall(SYS_getppid);
	syscall(SYS_write, 1, "child writes\n", 13);
	syscall(SYS_getppid);
	syscall(SYS_exit_group, 4);
}

static const char *name(long nr)
{
	switch (nr) {
	case SYS_getppid: return "getppid";
	case SYS_write: return "write";
	case SYS_exit_group: return "exit_group";
	default: return NULL;
	}
}

static void mode_syscall(void)
{
	pid_t pid = traced_child(syscall_body);
	CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD) == 0);
	int in = 0, stops = 0;
	for (;;) {
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (WIFEXITED(st)) {
			say("exited %d after %s stops\n", WEXITSTATUS(st), stops > 10 ? "many" : "few");
			break;
		}
		CHECK(WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80));
		stops++;
		struct user_regs_struct r;
		CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
		struct { uint8_t op, pad[3]; uint32_t arch; uint64_t ip, sp; uint64_t nr_or_rval, args[6]; } info;
		long n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info);
		CHECK(n > 0 && info.op == (in ? 2 : 1) && info.ip == r.rip);
		CHECK(!in || (long)info.nr_or_rval == (long)r.rax);
		CHECK(in || info.nr_or_rval == r.orig_rax);
		long peek = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user, regs.orig_rax), 0);
		CHECK(peek == (long)r.orig_rax);
		const char *nm = name((long)r.orig_rax);
		if (nm) {
			if (!in)
				say("entry %s (rax %ld)\n", nm, (long)r.rax);
			else
				say("exit %s = %s\n", nm, (long)r.rax == getpid() ? "parent's pid" : (long)r.rax == 13 ? "13" : "?");
		}
		in = !in;
	}
}

/* --- regs: a tracer changes a call's number, arguments and result */
static void regs_body(void)
{
	long r = syscall(SYS_getppid);
	say("getppid gave %ld\n", r);
	r = syscall(SYS_getuid);
	say("getuid was made %s\n", r == getppid() ? "getppid" : "itself");
	r = syscall(SYS_write, 1, "AAAAAA\n", 7);
	say("\nwrite gave %ld\n", r);
	r = syscall(SYS_write, 1, "not written\n", 12);
	say("skipped write gave %ld (%s)\n", r, r == -1 && errno == ENOSYS ? "ENOSYS" : "?");
}

static void mode_regs(void)
{
	pid_t pid = traced_child(regs_body);
	int in = 0, writes = 0;
	CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD) == 0);
	for (;;) {
		CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (WIFEXITED(st)) {
			say("exited %d\n", WEXITSTATUS(st));
			break;
		}
		struct user_regs_struct r;
		CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
		if (!in && r.orig_rax == SYS_getuid) {
			r.orig_rax = SYS_getppid;
			CHECK(ptrace(PTRACE_SETREGS, pid, 0, &r) == 0);
		} else if (in && r.orig_rax == SYS_getppid && r.rax != 4242 && r.rax == (unsigned long)getpid() && !writes) {
			r.rax = 4242;
			CHECK(ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, regs.rax), r.rax) == 0);
		} else if (!in && r.orig_rax == SYS_write && r.rdi == 1 && (r.rdx == 7 || r.rdx == 12)) {
			if (r.rdx == 7) {
				r.rdx = 3;
			} else {
				r.orig_rax = -1;
			}
			writes++;
			CHECK(ptrace(PTRACE_SETREGS, pid, 0, &r) == 0);
		}
		in = !in;
	}
}

/* --- exec: a TRACEME'd child execs; its tracer sees the exec stop */
static void mode_exec(int event)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0);
		execl("/proc/self/exe", "ptracer", "execchild", event ? "again" : NULL, (char *)NULL);
		_exit(127);
	}
	int st = wait_stop(pid, "exec");
	say("exec stop: %s%s\n", strsignal(WSTOPSIG(st)), st >> 16 ? " (event)" : "");
	if (event) {
		CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC) == 0);
		CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
		st = wait_stop(pid, "raise");
		say("stop: %s\n", strsignal(WSTOPSIG(st)));
		CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
		st = wait_stop(pid, "exec event");
		unsigned long msg = 0;
		CHECK(ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0);
		say("stop: %s event %d, message %s\n", strsignal(WSTOPSIG(st)), st >> 16,
		    msg == (unsigned long)pid ? "the pid" : "?");
	}
	struct user_regs_struct r;
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
	say("at exec: rax %ld, rsp %s\n", (long)r.rax, r.rsp ? "set" : "0");
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	finish(pid);
}

static void mode_execchild(int again)
{
	say("exec child runs\n");
	if (again) {
		raise(SIGSTOP);
		execl("/proc/self/exe", "ptracer", "execchild", (char *)NULL);
	}
	exit(3);
}

/* --- signals: signal-delivery stops, injected, suppressed, replaced */
static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	say("handler %s, code %d\n", strsignal(sig), si->si_code);
}

static void signals_body(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGTERM, SIG_IGN);
	raise(SIGUSR1);
	raise(SIGUSR2);
	say("survived SIGUSR2\n");
	kill(getpid(), SIGTERM);
	say("SIGTERM ignored\n");
	raise(SIGHUP);
	say("after SIGHUP\n");
}

static void mode_signals(void)
{
	pid_t pid = traced_child(signals_body);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	for (;;) {
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSTOPPED(st)) {
			say(WIFEXITED(st) ? "exited %d\n" : "killed %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			break;
		}
		int sig = WSTOPSIG(st);
		siginfo_t si;
		CHECK(ptrace(PTRACE_GETSIGINFO, pid, 0, &si) == 0);
		say("signal stop %s, code %d, from %s\n", strsignal(sig), si.si_code,
		    si.si_pid == pid ? "itself" : "elsewhere");
		int give = sig;
		if (sig == SIGUSR2)
			give = 0;
		if (sig == SIGHUP) {
			give = SIGUSR1;
			si.si_signo = SIGUSR1;
			si.si_code = -7;
			CHECK(ptrace(PTRACE_SETSIGINFO, pid, 0, &si) == 0);
		}
		CHECK(ptrace(PTRACE_CONT, pid, 0, give) == 0);
	}
}

/* --- peek: memory and code as the program has them, and a breakpoint */
static void peek_body(void)
{
	say("value %ld\n", value);
	long r = sysfn_call();
	say("sysfn gave %s\n", r == getpid() ? "its pid" : "?");
}

static void mode_peek(void)
{
	pid_t pid = traced_child(peek_body);
	errno = 0;
	long v = ptrace(PTRACE_PEEKDATA, pid, &value, 0);
	CHECK(errno == 0);
	say("peek value %ld\n", v);
	CHECK(ptrace(PTRACE_POKEDATA, pid, &value, 5678) == 0);
	unsigned char code[16];
	size_t len = sysfn_end - sysfn;
	for (size_t i = 0; i < len; i += 8) {
		long w = ptrace(PTRACE_PEEKTEXT, pid, sysfn + i, 0);
		memcpy(code + i, &w, 8);
	}
	say("code");
	for (size_t i = 0; i < len; i++)
		say(" %02x", code[i]);
	say("\n");
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", pid);
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	unsigned char mem[16] = { 0 };
	CHECK(pread(fd, mem, len, (off_t)(uintptr_t)sysfn) == (ssize_t)len);
	say("mem is the same code: %s\n", memcmp(mem, code, len) ? "no" : "yes");
	/* a breakpoint on the syscall */
	unsigned char int3 = 0xcc;
	CHECK(pwrite(fd, &int3, 1, (off_t)(uintptr_t)(sysfn + 5)) == 1);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	int st = wait_stop(pid, "breakpoint");
	struct user_regs_struct r;
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
	siginfo_t si;
	CHECK(ptrace(PTRACE_GETSIGINFO, pid, 0, &si) == 0);
	say("breakpoint: %s, code %#x, at sysfn+%ld\n", strsignal(WSTOPSIG(st)), si.si_code, (long)(r.rip - (uintptr_t)sysfn));
	CHECK(pwrite(fd, code + 5, 1, (off_t)(uintptr_t)(sysfn + 5)) == 1);
	r.rip--;
	CHECK(ptrace(PTRACE_SETREGS, pid, 0, &r) == 0);
	close(fd);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	finish(pid);
}

/* --- step: single steps through a function with a syscall */
static void step_body(void)
{
	stepfn_call();
	say("stepped through\n");
}

static void mode_step(void)
{
	pid_t pid = traced_child(step_body);
	long orig = ptrace(PTRACE_PEEKTEXT, pid, stepfn, 0);
	CHECK(ptrace(PTRACE_POKETEXT, pid, stepfn, (orig & ~0xffL) | 0xcc) == 0);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	wait_stop(pid, "breakpoint");
	CHECK(ptrace(PTRACE_POKETEXT, pid, stepfn, orig) == 0);
	struct user_regs_struct r;
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
	r.rip = (uintptr_t)stepfn;
	CHECK(ptrace(PTRACE_SETREGS, pid, 0, &r) == 0);
	say("steps:");
	for (int i = 0; i < 10; i++) {
		CHECK(ptrace(PTRACE_SINGLESTEP, pid, 0, 0) == 0);
		int st = wait_stop(pid, "step");
		CHECK(WSTOPSIG(st) == SIGTRAP);
		CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
		long off = (long)(r.rip - (uintptr_t)stepfn);
		if (off < 0 || off >= stepfn_end - stepfn) {
			say(" out (rax %s)\n", (long)r.rax == pid ? "its pid" : "?");
			break;
		}
		say(" %ld%s", off, r.eflags & 0x100 ? "TF" : "");
	}
	unsigned long dr6 = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user, u_debugreg[6]), 0);
	say("dr6 single step bit: %lu\n", (dr6 >> 14) & 1);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	finish(pid);
}

/* --- attach: ATTACH and SEIZE of a running child, INTERRUPT, DETACH */
static void mode_attach(void)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		char c;
		while (read(p[0], &c, 1) == 1)
			say("child read %c\n", c);
		_exit(0);
	}
	close(p[0]);
	CHECK(ptrace(PTRACE_ATTACH, pid, 0, 0) == 0);
	int st = wait_stop(pid, "attach");
	say("attach stop: %s\n", strsignal(WSTOPSIG(st)));
	CHECK(ptrace(PTRACE_ATTACH, pid, 0, 0) == -1 && errno == EPERM);
	CHECK(ptrace(PTRACE_DETACH, pid, 0, 0) == 0);
	CHECK(write(p[1], "a", 1) == 1);
	usleep(100000);
	CHECK(ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD) == 0);
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &(struct user_regs_struct){ 0 }) == -1 && errno == ESRCH);
	CHECK(ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0);
	st = wait_stop(pid, "interrupt");
	say("interrupt stop: %s event %d\n", strsignal(WSTOPSIG(st)), st >> 16);
	siginfo_t si;
	errno = 0;
	ptrace(PTRACE_GETSIGINFO, pid, 0, &si);
	CHECK(ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0);
	CHECK(write(p[1], "b", 1) == 1);
	st = wait_stop(pid, "syscall");
	struct user_regs_struct r;
	CHECK(ptrace(PTRACE_GETREGS, pid, 0, &r) == 0);
	say("syscall stop %#x: %s\n", WSTOPSIG(st), r.orig_rax == SYS_read ? "read" : "?");
	CHECK(ptrace(PTRACE_DETACH, pid, 0, 0) == 0);
	close(p[1]);
	finish(pid);
}

/* --- events: fork and exit events, and the auto-attached child; each
 * process's events in their order (the two processes' interleave) */
static void events_body(void)
{
	pid_t g = fork();
	if (g == 0)
		_exit(5);
	int st;
	waitpid(g, &st, 0);
	exit(6);
}

static void mode_events(void)
{
	pid_t pid = traced_child(events_body);
	CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK | PTRACE_O_TRACEEXIT) == 0);
	CHECK(ptrace(PTRACE_CONT, pid, 0, 0) == 0);
	pid_t g = 0;
	char ev_child[512] = "", ev_grand[512] = "";
	for (int done = 0; done < 2;) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		CHECK(w > 0);
		char *log = w == pid ? ev_child : ev_grand;
		size_t at = strlen(log);
		if (WIFEXITED(st)) {
			snprintf(log + at, 512 - at, " exited %d", WEXITSTATUS(st));
			done++;
			continue;
		}
		CHECK(WIFSTOPPED(st));
		int ev = st >> 16, give = 0;
		unsigned long msg = 0;
		if (ev)
			CHECK(ptrace(PTRACE_GETEVENTMSG, w, 0, &msg) == 0);
		if (ev == PTRACE_EVENT_FORK) {
			g = (pid_t)msg;
			snprintf(log + at, 512 - at, " fork-event");
		} else if (ev == PTRACE_EVENT_EXIT) {
			snprintf(log + at, 512 - at, " exit-event(%lu)", msg >> 8);
		} else {
			snprintf(log + at, 512 - at, " %s", WSTOPSIG(st) == SIGSTOP ? "SIGSTOP" : WSTOPSIG(st) == SIGCHLD ? "SIGCHLD" : "?");
			give = WSTOPSIG(st) == SIGSTOP ? 0 : WSTOPSIG(st);
		}
		CHECK(ptrace(PTRACE_CONT, w, 0, give) == 0);
	}
	say("child:%s\ngrandchild:%s\n", ev_child, ev_grand);
	CHECK(g > 0);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "--list"))
		say("syscall\nregs\nexec\nexecevent\nsignals\npeek\nstep\nattach\nevents\n");
	else if (!strcmp(m, "syscall"))
		mode_syscall();
	else if (!strcmp(m, "regs"))
		mode_regs();
	else if (!strcmp(m, "exec"))
		mode_exec(0);
	else if (!strcmp(m, "execevent"))
		mode_exec(1);
	else if (!strcmp(m, "execchild"))
		mode_execchild(argc > 2);
	else if (!strcmp(m, "signals"))
		mode_signals();
	else if (!strcmp(m, "peek"))
		mode_peek();
	else if (!strcmp(m, "step"))
		mode_step();
	else if (!strcmp(m, "attach"))
		mode_attach();
	else if (!strcmp(m, "events"))
		mode_events();
	else
		say("usage: ptracer MODE (--list)\n");
	return 0;
}
