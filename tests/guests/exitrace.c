/* Processes that end while their threads run, for a tracer to see every
 * thread's end (strace -f inside zvisor: tests/test_strace.py).
 *   exit: each child starts threads and calls exit(4) at once, racing the
 *         last thread's start;
 *   kill: each child's threads all run calls when its parent SIGKILLs it;
 *   self: this process, the tracer's own child, does as an exit child;
 *   selfkill: this process SIGKILLs itself while its threads run.
 * exit and kill print "MODE: N of N" when every child ended as it should. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 20
#define THREADS 3

static int running;

static void *spin(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	for (;;)
		getppid();
	return NULL;
}

static void child(int kill_mode, int ready)
{
	pthread_t th;
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th, NULL, spin, NULL))
			_exit(1);
	if (!kill_mode)
		exit(4);
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < THREADS)
		usleep(1000);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	if (!strcmp(mode, "self") || !strcmp(mode, "selfkill")) {
		int p[2];
		char c;
		if (pipe(p))
			return 1;
		if (!strcmp(mode, "self"))
			child(0, p[1]);
		if (fork() == 0) /* the ready byte comes to a child: the signal to its parent */
			return read(p[0], &c, 1) == 1 && kill(getppid(), SIGKILL) == 0 ? 0 : 1;
		child(1, p[1]);
	}
	int kill_mode = !strcmp(mode, "kill");
	int good = 0;
	for (int i = 0; i < CHILDREN; i++) {
		int p[2];
		if (pipe(p))
			return 1;
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			close(p[0]);
			child(kill_mode, p[1]);
		}
		close(p[1]);
		char c;
		if (kill_mode && read(p[0], &c, 1) == 1)
			kill(pid, SIGKILL);
		close(p[0]);
		int st;
		if (waitpid(pid, &st, 0) == pid &&
		    (kill_mode ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL : WIFEXITED(st) && WEXITSTATUS(st) == 4))
			good++;
	}
	printf("%s: %d of %d\n", kill_mode ? "kill" : "exit", good, CHILDREN);
	return good == CHILDREN ? 0 : 1;
}
