/* vfork and friends (DESIGN 5.3): the child runs on the parent's stack until
 * it execs or exits, so neither return path may depend on the guest stack.
 * Covers vfork+_exit, vfork+execve (of /bin/true and of this program),
 * posix_spawn, and a raw clone(CLONE_VM|CLONE_VFORK) with stack 0 as Go's
 * os/exec does it. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static int failed;

static void expect_exit(const char *what, pid_t pid, int code)
{
	int st = 0;
	if (pid < 0) {
		printf("%s: fork failed\n", what);
		failed = 1;
		return;
	}
	if (waitpid(pid, &st, 0) != pid)
		st = -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == code) {
		printf("%s: exit %d\n", what, code);
	} else {
		printf("%s: unexpected status %#x\n", what, st);
		failed = 1;
	}
}

/* Raw clone(CLONE_VM|CLONE_VFORK|SIGCHLD, stack 0): the child continues on
 * the parent's stack and must not return from here; it execs or exits in
 * assembly. */
static pid_t clone_vfork_exec(const char *path, char *const argv[])
{
	register long r12 __asm__("r12") = (long)path;
	register long r13 __asm__("r13") = (long)argv;
	register long r14 __asm__("r14") = (long)environ;
	long ret;
	__asm__ volatile("mov $56, %%eax\n"		/* clone */
			 "mov %[flags], %%rdi\n"
			 "xor %%esi, %%esi\n"		/* stack 0: share the parent's */
			 "xor %%edx, %%edx\n"
			 "xor %%r10d, %%r10d\n"
			 "xor %%r8d, %%r8d\n"
			 "syscall\n"
			 "test %%rax, %%rax\n"
			 "jnz 1f\n"
			 "mov $59, %%eax\n"		/* child: execve(path, argv, environ) */
			 "mov %%r12, %%rdi\n"
			 "mov %%r13, %%rsi\n"
			 "mov %%r14, %%rdx\n"
			 "syscall\n"
			 "mov $60, %%eax\n"		/* exit(127) if it failed */
			 "mov $127, %%edi\n"
			 "syscall\n"
			 "1:\n"
			 : "=&a"(ret)
			 : [flags] "i"(CLONE_VM | CLONE_VFORK | SIGCHLD), "r"(r12), "r"(r13), "r"(r14)
			 : "rdi", "rsi", "rdx", "r10", "r8", "rcx", "r11", "memory");
	return (pid_t)ret;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		printf("re-executed by a vfork child\n");
		return 5;
	}
	setvbuf(stdout, NULL, _IONBF, 0);

	/* vfork + _exit: the child's store to the shared memory is visible. */
	static volatile int shared;
	pid_t pid = vfork();
	if (pid == 0) {
		shared = 42;
		_exit(3);
	}
	expect_exit("vfork+_exit", pid, 3);
	printf("vfork child wrote %d\n", shared);

	/* vfork + execve of another program and of ourselves */
	char *true_argv[] = { "true", NULL };
	pid = vfork();
	if (pid == 0) {
		execve("/bin/true", true_argv, environ);
		_exit(127);
	}
	expect_exit("vfork+execve /bin/true", pid, 0);

	char *self_argv[] = { argv[0], "child", NULL };
	pid = vfork();
	if (pid == 0) {
		execve("/proc/self/exe", self_argv, environ);
		_exit(127);
	}
	expect_exit("vfork+execve self", pid, 5);

	/* vfork + failing execve: the child reports errno through _exit */
	pid = vfork();
	if (pid == 0) {
		execve("/nonexistent/program", true_argv, environ);
		_exit(100 + errno);
	}
	expect_exit("vfork+execve missing", pid, 102);

	/* posix_spawn and posix_spawnp (glibc uses clone(CLONE_VM|CLONE_VFORK) on
	 * a separate stack) */
	char *echo_argv[] = { "echo", "spawned by posix_spawn", NULL };
	if (posix_spawn(&pid, "/bin/echo", NULL, NULL, echo_argv, environ) == 0)
		expect_exit("posix_spawn /bin/echo", pid, 0);
	else
		printf("posix_spawn failed\n"), failed = 1;
	char *sh_argv[] = { "sh", "-c", "exit 9", NULL };
	if (posix_spawnp(&pid, "sh", NULL, NULL, sh_argv, environ) == 0)
		expect_exit("posix_spawnp sh -c 'exit 9'", pid, 9);
	else
		printf("posix_spawnp failed\n"), failed = 1;

	/* Go's os/exec way: clone(CLONE_VM|CLONE_VFORK) with a null stack */
	char *echo2_argv[] = { "echo", "spawned by clone(CLONE_VM|CLONE_VFORK, stack 0)", NULL };
	expect_exit("clone vfork null stack", clone_vfork_exec("/bin/echo", echo2_argv), 0);
	char *missing_argv[] = { "missing", NULL };
	expect_exit("clone vfork null stack, missing program",
		    clone_vfork_exec("/nonexistent/program", missing_argv), 127);

	/* A vfork child that chroots (as Go's SysProcAttr.Chroot does) keeps
	 * what it opens for that to itself: the parent execs as before. As
	 * non-root chroot fails alike natively and under zvisor. */
	pid = vfork();
	if (pid == 0) {
		if (chroot("/") != 0)
			_exit(1);
		execve("/bin/true", true_argv, environ);
		_exit(127);
	}
	expect_exit("vfork+chroot+execve", pid, getuid() == 0 ? 0 : 1);
	pid = vfork();
	if (pid == 0) {
		execve("/bin/true", true_argv, environ);
		_exit(127);
	}
	expect_exit("vfork+execve after a child's chroot", pid, 0);
	pid = fork();
	if (pid == 0) {
		execve("/bin/true", true_argv, environ);
		_exit(127);
	}
	expect_exit("fork+execve after a child's chroot", pid, 0);

	return failed;
}
