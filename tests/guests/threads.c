/* Threads and fork (DESIGN 5.3, 5.4): every thread needs its own kernel area
 * before it runs guest code, 64 threads in syscalls at once must not mix up
 * their state, and fork from a multithreaded process must give a child that
 * works (no lock held by another thread may deadlock it). Finally the process
 * exits while a thread is still blocked in a host syscall. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 64
#define ROUNDS 200

static pthread_barrier_t start;
static atomic_int bad;

/* Each thread: getpid, gettid, then a round trip of its own token through
 * its own pipe; any mixed-up result is counted. */
static void *pinger(void *arg)
{
	long id = (long)arg;
	int p[2];
	pid_t tid = (pid_t)syscall(SYS_gettid);
	if (pipe(p)) {
		atomic_fetch_add(&bad, 1);
		return NULL;
	}
	pthread_barrier_wait(&start);
	for (long r = 0; r < ROUNDS; r++) {
		long token[2] = { id, r }, back[2] = { -1, -1 };
		if (getpid() != (pid_t)syscall(SYS_getpid) || (pid_t)syscall(SYS_gettid) != tid)
			atomic_fetch_add(&bad, 1);
		if (write(p[1], token, sizeof(token)) != sizeof(token) ||
		    read(p[0], back, sizeof(back)) != sizeof(back) || back[0] != id || back[1] != r)
			atomic_fetch_add(&bad, 1);
	}
	close(p[0]);
	close(p[1]);
	return (void *)(id * 3);
}

static void test_many_threads(void)
{
	pthread_t th[NTHREADS];
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, pinger, (void *)i)) {
			printf("pthread_create failed\n");
			exit(1);
		}
	long sum = 0;
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		sum += (long)ret;
	}
	printf("%d threads x %d rounds: %s, join sum %ld\n", NTHREADS, ROUNDS,
	       atomic_load(&bad) ? "FAIL" : "OK", sum);
}

/* Background threads keep making syscalls, allocating and using stdio while
 * the main thread forks. */
static atomic_int stop;
static void *busy(void *arg)
{
	FILE *f = fopen("/dev/null", "w");
	while (!atomic_load(&stop)) {
		void *m = malloc(64 + (size_t)arg * 32);
		fprintf(f, "%p\n", m);
		free(m);
		getppid();
	}
	fclose(f);
	return NULL;
}

static void *child_thread(void *arg)
{
	return (void *)(long)(getpid() == *(pid_t *)arg ? 11 : 99);
}

static void test_fork_mt(void)
{
	pthread_t th[8];
	for (long i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, busy, (void *)i);
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			/* child: syscalls, malloc, stdio, a new thread, then exit */
			pid_t me = getpid();
			char *m = malloc(1000);
			int fd = open("/dev/null", O_WRONLY);
			int w = write(fd, "x", 1);
			close(fd);
			free(m);
			pthread_t t;
			void *ret = NULL;
			if (pthread_create(&t, NULL, child_thread, &me) || pthread_join(t, &ret))
				_exit(98);
			if (w != 1 || (long)ret != 11 || getppid() == me)
				_exit(97);
			_exit(40 + i % 3); /* exit() would flush FILEs that other threads held locked at fork */
		}
		int st;
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 40 + i % 3)
			ok++;
		else
			printf("fork %d: child status %#x\n", i, st);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	printf("fork in a multithreaded process: %d/20 children OK\n", ok);
	if (ok != 20)
		atomic_fetch_add(&bad, 1);
}

/* A thread that never returns from read(): exit_group must still end it. */
static int never[2];
static void *blocked(void *arg)
{
	char c;
	read(never[0], &c, 1);
	return NULL;
}

int main(void)
{
	test_many_threads();
	test_fork_mt();
	pthread_t t;
	pipe(never);
	pthread_create(&t, NULL, blocked, NULL);
	pthread_detach(t);
	usleep(20000);
	printf("exiting with a thread blocked in read\n");
	return atomic_load(&bad) ? 1 : 0;
}
