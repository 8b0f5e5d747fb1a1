/* A fixed, deterministic set of syscalls for `zvisor run --count`, compared
 * with `strace -f -c`: known numbers of calls and of failing calls. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	char buf[256];
	for (int i = 0; i < 3; i++)
		syscall(SYS_getpid);			/* 3 getpid */
	syscall(SYS_getppid);				/* 1 getppid */
	int fd = open("/dev/null", O_RDONLY);		/* 1 openat */
	read(fd, buf, sizeof(buf));			/* 1 read */
	close(fd);					/* 1 close */
	for (int i = 0; i < 2; i++)
		open("/nonexistent/file", O_RDONLY);	/* 2 openat, 2 errors */
	close(-1);					/* 1 close, 1 error */
	int p[2];
	pipe(p);					/* 1 pipe2 */
	int d = dup(p[1]);				/* 1 dup */
	close(d);
	close(p[0]);
	close(p[1]);					/* 3 close */
	struct utsname u;
	uname(&u);					/* 1 uname */
	getcwd(buf, sizeof(buf));			/* 1 getcwd */
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts); /* 1 clock_gettime */
	clock_gettime(CLOCK_MONOTONIC, &ts);		/* vDSO: not a syscall */
	for (int i = 0; i < 5; i++)
		syscall(SYS_sched_yield);		/* 5 sched_yield */
	pid_t pid = fork();				/* 1 clone */
	if (pid == 0)
		_exit(0);				/* (exit_group: not counted) */
	waitpid(pid, NULL, 0);				/* 1 wait4 */
	pid = vfork();					/* 1 vfork */
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);				/* 1 wait4 */
	const char msg[] = "syscalls done\n";
	write(1, msg, strlen(msg));			/* 1 write */
	return 0;					/* 1 exit_group */
}
