/* setpgid on a child after its execve, as LTP's setpgid03 checks it: the
 * host says EACCES once the child has made an exec (PF_FORKNOEXEC cleared),
 * but an image zvisor loads in the process makes no host execve. The parent
 * forks children that wait on a pipe, and sets each one's group:
 *   forked       a child that made no exec: allowed
 *   exec'd       a child that exec'd this program: EACCES
 *   exec'd twice a child that exec'd twice: EACCES
 *   grandchild   an exec'd child's own fork child, set by that child
 *                (made no exec of its own, though its parent did): allowed
 *   other        a pid that is not a child: ESRCH
 * Run as "setpgidexec" (the parent); "setpgidexec wait N" is a child's
 * image, which exec's itself again N times, then says so and waits. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *err(int r)
{
	static char buf[32];
	if (r == 0)
		return "ok";
	snprintf(buf, sizeof buf, "%s", errno == EACCES ? "EACCES" : errno == ESRCH ? "ESRCH"
					: errno == EPERM ? "EPERM" : strerror(errno));
	return buf;
}

/* A child: at fd 'ready' it writes one byte once it is the image asked
 * for, then waits for fd 'go' to be closed. */
static void wait_image(int ready, int go, int execs)
{
	if (execs > 0) {
		char n[16], r[16], g[16];
		snprintf(n, sizeof n, "%d", execs - 1);
		snprintf(r, sizeof r, "%d", ready);
		snprintf(g, sizeof g, "%d", go);
		execl("/proc/self/exe", "setpgidexec", "wait", n, r, g, (char *)NULL);
		_exit(99);
	}
	char c = 'r';
	if (write(ready, &c, 1) != 1)
		_exit(98);
	while (read(go, &c, 1) > 0)
		;
	_exit(0);
}

/* Forks a child that exec's 'execs' times; returns its pid once ready, and
 * the write end of its go pipe. */
static pid_t start(int execs, int *go_w)
{
	int ready[2], go[2];
	if (pipe(ready) || pipe(go))
		exit(2);
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		wait_image(ready[1], go[0], execs);
	}
	close(ready[1]);
	close(go[0]);
	char c;
	if (read(ready[0], &c, 1) != 1)
		exit(3);
	close(ready[0]);
	*go_w = go[1];
	return pid;
}

static void finish(pid_t pid, int go_w)
{
	int status;
	close(go_w);
	waitpid(pid, &status, 0);
}

/* A child that exec'd once, which forks and sets its own child's group. */
static void grandchild_case(void)
{
	int go;
	pid_t pid = start(0, &go);
	printf("grandchild: %s\n", err(setpgid(pid, pid)));
	fflush(stdout);
	finish(pid, go);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "wait"))
		wait_image(atoi(argv[3]), atoi(argv[4]), atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "grandchild")) {
		grandchild_case();
		return 0;
	}
	if (argc != 1)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);
	int go;
	pid_t pid = start(0, &go);
	printf("forked: %s\n", err(setpgid(pid, pid)));
	finish(pid, go);

	pid = start(1, &go);
	printf("exec'd: %s\n", err(setpgid(pid, pid)));
	printf("exec'd, own group: %s\n", err(setpgid(pid, 0)));
	finish(pid, go);

	pid = start(2, &go);
	printf("exec'd twice: %s\n", err(setpgid(pid, pid)));
	finish(pid, go);

	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "setpgidexec", "grandchild", (char *)NULL);
		_exit(99);
	}
	int status;
	waitpid(pid, &status, 0);

	/* the parent's parent: not a child of ours */
	printf("other: %s\n", err(setpgid(getppid(), getppid())));
	return 0;
}
