/* vfork and friends (DESIGN 5.3): the child runs on the parent's stack until
 * it execs or exits, so neither return path may depend on the guest stack.
 * Covers vfork+_exit, vfork+execve (of /bin/true and of this program),
 * posix_spawn, and a raw clone(CLONE_VM|CLONE_VFORK) with stack 0 as Go's
 * os/exec does it. The fds an exec'd program and the parent see after it:
 * zvisor hands the files it resolved to the next image across the host's
 * execve (DESIGN 27), never where the fd table is shared (CLONE_FILES). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

/* The fds open in this process below 32, in order (F_GETFD: no listing of
 * /proc/self/fd, whose size counts zvisor's hidden fds). */
static void list_fds(const char *who)
{
	char line[512];
	int n = snprintf(line, sizeof line, "%s: fds", who);
	for (int fd = 0; fd < 32; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n += snprintf(line + n, sizeof line - n, " %d", fd);
	printf("%s\n", line);
}

/* Raw clone(flags | CLONE_VM | CLONE_VFORK | SIGCHLD, stack 0): the child
 * continues on the parent's stack and must not return from here; it execs
 * or exits in assembly. */
static pid_t clone_vfork_exec_flags(const char *path, char *const argv[], long flags)
{
	register long r12 __asm__("r12") = (long)path;
	register long r13 __asm__("r13") = (long)argv;
	register long r14 __asm__("r14") = (long)environ;
	register long r15 __asm__("r15") = flags | CLONE_VM | CLONE_VFORK | SIGCHLD;
	long ret;
	__asm__ volatile("mov $56, %%eax\n"		/* clone */
			 "mov %%r15, %%rdi\n"
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
			 : "r"(r12), "r"(r13), "r"(r14), "r"(r15)
			 : "rdi", "rsi", "rdx", "r10", "r8", "rcx", "r11", "memory");
	return (pid_t)ret;
}

static pid_t clone_vfork_exec(const char *path, char *const argv[])
{
	return clone_vfork_exec_flags(path, argv, 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		printf("re-executed by a vfork child\n");
		return 5;
	}
	if (argc > 2 && !strcmp(argv[1], "fds")) {
		list_fds(argv[2]);
		return 6;
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

	/* The child's own pid and tid: the one its parent got. */
	static volatile pid_t seen_pid, seen_tid;
	pid = vfork();
	if (pid == 0) {
		seen_pid = getpid();
		seen_tid = (pid_t)syscall(SYS_gettid);
		_exit(0);
	}
	expect_exit("vfork+getpid", pid, 0);
	printf("vfork child's getpid %s, gettid %s\n", seen_pid == pid ? "is its pid" : "differs",
	       seen_tid == pid ? "is its pid" : "differs");

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

	/* The fds an exec'd program sees: a kept fd, not a close-on-exec one,
	 * nor any of the exec's own; and those of a parent whose fd table the
	 * child shared (CLONE_FILES), which the child's execve leaves as they
	 * were (it closes close-on-exec fds in a copy of its own). */
	int keep = open("/dev/null", O_RDONLY), gone = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (keep != 3 || gone != 4)
		printf("FAIL: /dev/null opened as %d and %d\n", keep, gone), failed = 1;
	char *fds_argv[] = { argv[0], "fds", "vfork+execve", NULL };
	pid = vfork();
	if (pid == 0) {
		execve("/proc/self/exe", fds_argv, environ);
		_exit(127);
	}
	expect_exit("vfork+execve, fds", pid, 6);
	char *spawn_fds_argv[] = { argv[0], "fds", "posix_spawn", NULL };
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, spawn_fds_argv, environ) == 0)
		expect_exit("posix_spawn, fds", pid, 6);
	else
		printf("posix_spawn failed\n"), failed = 1;
	char *clone_fds_argv[] = { argv[0], "fds", "clone vfork null stack", NULL };
	expect_exit("clone vfork null stack, fds", clone_vfork_exec("/proc/self/exe", clone_fds_argv), 6);
	expect_exit("clone vfork CLONE_FILES", clone_vfork_exec_flags("/bin/true", true_argv, CLONE_FILES), 0);
	list_fds("the parent after a CLONE_FILES child's execve");
	char *files_fds_argv[] = { argv[0], "fds", "clone vfork CLONE_FILES", NULL };
	expect_exit("clone vfork CLONE_FILES, fds", clone_vfork_exec_flags("/proc/self/exe", files_fds_argv, CLONE_FILES), 6);
	list_fds("the parent after that");
	close(keep);
	close(gone);

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
