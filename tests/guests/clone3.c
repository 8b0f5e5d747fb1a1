/* Raw clone3 (DESIGN 5.3, 5.4): a fork-like child, a CLONE_VM child on a new
 * stack that holds no return address, CLONE_VM|CLONE_VFORK on a new stack and
 * on the parent's stack, CLONE_PIDFD, and the errors for bad arguments. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif

struct clone_args_v2 { /* struct clone_args, CLONE_ARGS_SIZE_VER2 = 88 */
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
		set_tid, set_tid_size, cgroup;
};

extern char **environ;
static int failed;

/* clone3(args, size); the child calls fn(arg) below its stack pointer (new
 * stack or not) and exits with its return value without returning here. */
static long clone3_call(struct clone_args_v2 *args, size_t size, int (*fn)(void *), void *arg)
{
	register long r12 __asm__("r12") = (long)fn;
	register long r13 __asm__("r13") = (long)arg;
	long ret;
	__asm__ volatile("mov $435, %%eax\n"
			 "syscall\n"
			 "test %%rax, %%rax\n"
			 "jnz 1f\n"
			 "sub $256, %%rsp\n" /* keep off a shared stack's red zone */
			 "and $-16, %%rsp\n"
			 "xor %%ebp, %%ebp\n"
			 "mov %%r13, %%rdi\n"
			 "call *%%r12\n"
			 "mov %%eax, %%edi\n"
			 "mov $60, %%eax\n"
			 "syscall\n"
			 "hlt\n"
			 "1:\n"
			 : "=a"(ret)
			 : "D"(args), "S"(size), "r"(r12), "r"(r13)
			 : "rcx", "r11", "memory");
	return ret;
}

static const char *errname(int e)
{
	switch (e) {
	case EINVAL: return "EINVAL";
	case E2BIG: return "E2BIG";
	case EFAULT: return "EFAULT";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	default: return "other";
	}
}

static void expect_exit(const char *what, long pid, int code)
{
	int st = 0;
	if (pid < 0) {
		printf("%s: clone3 failed: %s\n", what, errname((int)-pid));
		failed = 1;
		return;
	}
	if (waitpid((pid_t)pid, &st, __WALL) == pid && WIFEXITED(st) && WEXITSTATUS(st) == code) {
		printf("%s: exit %d\n", what, code);
	} else {
		printf("%s: unexpected status %#x\n", what, st);
		failed = 1;
	}
}

static volatile int shared;

static int child_write(void *msg)
{
	shared = 42;
	write(1, msg, strlen(msg));
	return 3;
}

static int child_exec(void *msg)
{
	char *argv[] = { "echo", msg, NULL };
	execve("/bin/echo", argv, environ);
	return 127;
}

static long raw_clone3(struct clone_args_v2 *args, size_t size)
{
	long ret;
	__asm__ volatile("mov $435, %%eax\n syscall\n"
			 : "=a"(ret) : "D"(args), "S"(size) : "rcx", "r11", "memory");
	return ret;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	size_t ssz = 256 * 1024;
	char *stack = mmap(NULL, ssz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct clone_args_v2 a;

	memset(&a, 0, sizeof(a));
	a.exit_signal = SIGCHLD;
	long r = clone3_call(&a, sizeof(a), child_write, "clone3 fork-like child\n");
	if (r == -ENOSYS) {
		printf("clone3: ENOSYS\n");
		return 0;
	}
	expect_exit("clone3 fork-like", r, 3);
	printf("parent sees shared = %d\n", shared);

	memset(&a, 0, sizeof(a));
	a.flags = CLONE_VM;
	a.exit_signal = SIGCHLD;
	a.stack = (uint64_t)(uintptr_t)stack;
	a.stack_size = ssz;
	expect_exit("clone3 CLONE_VM new stack",
		    clone3_call(&a, sizeof(a), child_write, "clone3 CLONE_VM child\n"), 3);
	printf("parent sees shared = %d\n", shared);
	shared = 0;

	a.flags = CLONE_VM | CLONE_VFORK;
	expect_exit("clone3 CLONE_VM|CLONE_VFORK new stack",
		    clone3_call(&a, sizeof(a), child_exec, "clone3 vfork child on its own stack"), 0);

	memset(&a, 0, sizeof(a));
	a.flags = CLONE_VM | CLONE_VFORK;
	a.exit_signal = SIGCHLD;
	expect_exit("clone3 CLONE_VM|CLONE_VFORK parent's stack",
		    clone3_call(&a, sizeof(a), child_exec, "clone3 vfork child on the parent's stack"), 0);

	int pidfd = -1;
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_PIDFD;
	a.pidfd = (uint64_t)(uintptr_t)&pidfd;
	a.exit_signal = SIGCHLD;
	r = clone3_call(&a, sizeof(a), child_write, "clone3 CLONE_PIDFD child\n");
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	int pr = poll(&pfd, 1, 10000);
	printf("pidfd %s, readable after exit: %s\n", pidfd > 2 ? "valid" : "invalid",
	       pr == 1 && (pfd.revents & POLLIN) ? "yes" : "no");
	expect_exit("clone3 CLONE_PIDFD", r, 3);
	close(pidfd);

	/* bad arguments */
	memset(&a, 0, sizeof(a));
	r = raw_clone3(&a, 8);
	printf("clone3 size 8: %s\n", r < 0 ? errname((int)-r) : "succeeded");
	a.flags = 1UL << 40;
	r = raw_clone3(&a, sizeof(a));
	printf("clone3 unknown flag: %s\n", r < 0 ? errname((int)-r) : "succeeded");
	memset(&a, 0, sizeof(a));
	a.stack = 0;
	a.stack_size = 4096;
	r = raw_clone3(&a, sizeof(a));
	printf("clone3 stack_size without stack: %s\n", r < 0 ? errname((int)-r) : "succeeded");
	r = raw_clone3((struct clone_args_v2 *)8, sizeof(a));
	printf("clone3 bad pointer: %s\n", r < 0 ? errname((int)-r) : "succeeded");

	/* a struct that ends where an unreadable page begins: a nonzero byte
	 * of a tail the host does not know comes first (E2BIG), else the
	 * hole (EFAULT), as the host reads it */
	char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED || mprotect(two + 4096, 4096, PROT_NONE)) {
		perror("mmap");
		return 1;
	}
	struct clone_args_v2 *end = (struct clone_args_v2 *)(two + 4096 - sizeof(*end) - 8);
	memset(end, 0, sizeof(*end) + 8);
	end->exit_signal = SIGCHLD;
	((uint64_t *)(end + 1))[0] = 0xfacefeedUL;
	r = raw_clone3(end, sizeof(*end) + 16);
	printf("clone3 nonzero tail, then a hole: %s\n", r < 0 ? errname((int)-r) : "succeeded");
	((uint64_t *)(end + 1))[0] = 0;
	r = raw_clone3(end, sizeof(*end) + 16);
	printf("clone3 zero tail, then a hole: %s\n", r < 0 ? errname((int)-r) : "succeeded");
	r = raw_clone3((struct clone_args_v2 *)(two + 4096 - 40), sizeof(*end));
	printf("clone3 struct over a hole: %s\n", r < 0 ? errname((int)-r) : "succeeded");
	return failed;
}
