/* Process and thread creation in a loop, the calls made while every signal
 * is blocked: posix_spawn's child (glibc blocks all around its
 * clone(CLONE_VM|CLONE_VFORK) and the child resets every disposition), a
 * vfork child, and a new thread's first moments; and posix_spawn from 8
 * threads at once (each child's kernel block is made while the others'
 * are). argv[1]: spawn, vfork, thread or threads; argv[2]: how many
 * (default 20; threads: 2400 in all). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *thread_main(void *arg)
{
	return arg;
}

/* A vfork child that execs /bin/true: 1 if it exited 0. */
static __attribute__((noinline)) int one_vfork(void)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old); /* as CPython's and Go's children */
	pid_t pid = vfork();
	if (pid == 0) {
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	int st = -1;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int one_spawn(void)
{
	char *args[] = { "true", NULL };
	pid_t pid;
	int st = -1;
	return posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) == 0 && waitpid(pid, &st, 0) == pid &&
	       WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

#define SPAWNERS 8
static int per_spawner, spawned;

static void *spawner(void *arg)
{
	for (int i = 0; i < per_spawner; i++)
		__atomic_add_fetch(&spawned, one_spawn(), __ATOMIC_SEQ_CST);
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "spawn";
	int n = argc > 2 ? atoi(argv[2]) : !strcmp(mode, "threads") ? 2400 : 20, ok = 0;
	if (!strcmp(mode, "threads")) {
		pthread_t th[SPAWNERS];
		per_spawner = n / SPAWNERS;
		for (int i = 0; i < SPAWNERS; i++)
			pthread_create(&th[i], NULL, spawner, NULL);
		for (int i = 0; i < SPAWNERS; i++)
			pthread_join(th[i], NULL);
		printf("threads: %d of %d\n", spawned, per_spawner * SPAWNERS);
		return spawned == per_spawner * SPAWNERS ? 0 : 1;
	}
	for (int i = 0; i < n; i++) {
		if (!strcmp(mode, "spawn")) {
			ok += one_spawn();
		} else if (!strcmp(mode, "vfork")) {
			ok += one_vfork();
		} else if (!strcmp(mode, "thread")) {
			pthread_t th;
			void *r = NULL;
			if (pthread_create(&th, NULL, thread_main, &ok) == 0 && pthread_join(th, &r) == 0)
				ok += r == &ok;
		} else {
			fprintf(stderr, "unknown mode %s\n", mode);
			return 2;
		}
	}
	printf("%s: %d of %d\n", mode, ok, n);
	return ok == n ? 0 : 1;
}
