/* The program tests/test_gdb.py debugs with gdb, natively and inside zvisor. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int counter;
volatile int watched;

int f(int x)
{
	counter += x;
	return x * 2;
}

int g(int x)
{
	int y = x + 1;
	return y * 3;
}

static volatile int got;

static void on_usr1(int sig)
{
	got += sig;
}

static int pipefd[2];
static pid_t main_tid;

/* Whether the main thread sleeps in its read of the pipe, so that where
 * gdb finds it when the worker stops is always the same (its syscall
 * file: the number of the call it is blocked in). */
static int main_sleeps(void)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", main_tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return n > 2 && buf[0] == '0' && buf[1] == ' '; /* read */
}

static void *worker(void *arg)
{
	int n = (int)(long)arg;
	while (!main_sleeps())
		usleep(1000);
	g(n);
	if (write(pipefd[1], "x", 1) != 1)
		abort();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int s = 0;
	if (!strcmp(m, "crash")) {
		int *p = NULL;
		return *p;
	}
	if (!strcmp(m, "watch")) {
		for (int i = 0; i < 3; i++)
			watched = i * 10;
		printf("watched %d\n", watched);
		return 0;
	}
	if (!strcmp(m, "fork")) {
		pid_t c = fork();
		if (c == 0) {
			for (int i = 0; i < 5; i++)
				s += g(i);
			printf("child %d\n", s);
			return 0;
		}
		waitpid(c, NULL, 0);
		return 0;
	}
	if (!strcmp(m, "exec")) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			execl("/bin/echo", "echo", "exec'd", (char *)NULL);
			_exit(127);
		}
		waitpid(c, NULL, 0);
		return 0;
	}
	if (!strcmp(m, "signal")) {
		signal(SIGUSR1, on_usr1);
		raise(SIGUSR1);
		printf("got %d\n", got);
		return 0;
	}
	if (!strcmp(m, "threads")) {
		pthread_t t;
		char c;
		main_tid = gettid();
		if (pipe(pipefd))
			abort();
		pthread_create(&t, NULL, worker, (void *)7L);
		if (read(pipefd[0], &c, 1) != 1)
			abort();
		pthread_join(t, NULL);
		return 0;
	}
	for (int i = 0; i < 3; i++)
		s += f(i);
	s = g(s);
	printf("s=%d\n", s);
	return 0;
}
