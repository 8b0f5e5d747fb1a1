/* The guest's own seccomp filter (getppid -> EPERM) must hold in a forked
 * child that execs /proc/self/exe and in the process after it execs itself,
 * and PR_GET_SECCOMP must say 2 in both. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

int main(int argc, char **argv)
{
	if (argc > 1) {
		errno = 0;
		long r = syscall(SYS_getppid);
		printf("%s: getppid %ld %s, PR_GET_SECCOMP %d\n", argv[1], r, strerror(errno),
		       prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
		return 0;
	}
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	printf("install: %d\n", prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "child", "forked child after exec", (char *)0);
		_exit(9);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child status %d\n", WEXITSTATUS(st));
	fflush(stdout);
	execl("/proc/self/exe", argv[0], "after exec", (char *)0);
	return 1;
}
