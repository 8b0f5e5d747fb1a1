/* A new fd takes the lowest free number, also while other threads make
 * calls for which the kernel reads /proc/self/maps (madvise's dropped
 * pages, mremap's grown code under SUD off: DESIGN 40).
 *   madvise: two threads drop pages;
 *   mremap:  two threads grow mappings;
 *   code:    two threads drop pages of this program's code;
 *   fork:    the same as madvise in a fork child of a threaded process,
 *            whose copy of the parent's memory is not its own;
 * while the main thread opens /dev/null and a socketpair and checks they
 * get 3, and 4 and 5 (stdin, stdout and stderr open). Prints "MODE: N
 * opens, lowest each time" or the first number that was not.
 *   limit:   with RLIMIT_NOFILE 64 and a second thread, opens until EMFILE:
 *            every number from 3 to 63, in order;
 *   spawn:   a threaded process's posix_spawn child (mode list) has only
 *            fds 0-2: none of the parent's close-on-exec ones. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <dirent.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define OPENS 3000

static volatile int stop;
static char *code;
static size_t code_len;

/* Plain memory: the kernel finds no code there, and so checks again at
 * each call (code would make it give up SUD off for good, and stop). */
static void *drop(void *arg)
{
	(void)arg;
	char *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	while (!stop) {
		p[0] = 1;
		madvise(p, 65536, MADV_DONTNEED);
	}
	munmap(p, 65536);
	return NULL;
}

/* Code: its pages come back with the file's bytes, which zpoline
 * rewrites again as the program runs them. */
extern char __executable_start[], etext[];
static void *drop_code(void *arg)
{
	(void)arg;
	uintptr_t lo = (uintptr_t)__executable_start & ~4095UL, hi = ((uintptr_t)etext + 4095) & ~4095UL;
	while (!stop) {
		madvise(code, code_len, MADV_DONTNEED);
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
	}
	return NULL;
}

static void *grow(void *arg)
{
	(void)arg;
	while (!stop) {
		char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		char *q = mremap(p, 4096, 8192, MREMAP_MAYMOVE);
		munmap(q == MAP_FAILED ? p : q, q == MAP_FAILED ? 4096 : 8192);
	}
	return NULL;
}

static int opens(const char *mode)
{
	for (int i = 0; i < OPENS; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int sv[2];
		int s = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
		if (fd != 3 || s != 0 || sv[0] != 4 || sv[1] != 5) {
			printf("%s: open %d gave %d, socketpair %d %d\n", mode, i, fd, sv[0], sv[1]);
			return 1;
		}
		close(fd);
		close(sv[0]);
		close(sv[1]);
	}
	printf("%s: %d opens, lowest each time\n", mode, OPENS);
	return 0;
}

static int run(const char *mode, void *(*fn)(void *))
{
	pthread_t th[2];
	stop = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, fn, NULL);
	int r = opens(mode);
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return r;
}

static volatile int idling;

/* Its first sleep comes before the fills: a call site's first use may have
 * the kernel patch it, through a file it opens for a moment when none of
 * its own is left (DESIGN 40). */
static void *idle(void *arg)
{
	(void)arg;
	do {
		usleep(1000);
		idling = 1;
	} while (!stop);
	return NULL;
}

static int fill(void)
{
	struct rlimit rl = { 64, 64 };
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		perror("setrlimit");
		return 2;
	}
	pthread_t th;
	pthread_create(&th, NULL, idle, NULL);
	while (!idling)
		usleep(100);
	int want = 3, fd;
	while ((fd = open("/dev/null", O_RDONLY)) >= 0) {
		if (fd != want) {
			printf("limit: open gave %d, not %d\n", fd, want);
			return 1;
		}
		want++;
	}
	int e = errno;
	madvise(code, code_len, MADV_DONTNEED); /* the kernel checks its maps with no fd free */
	for (int i = 3; i < want; i++)
		close(i);
	fd = open("/dev/null", O_RDONLY);
	stop = 1;
	pthread_join(th, NULL);
	printf("limit: 3 to %d, then %s; after closing, %d\n", want - 1, e == EMFILE ? "EMFILE" : strerror(e), fd);
	return 0;
}

/* The fds besides 0-2 and the listing's own. */
static int list(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d)) {
			printf("spawned: fd %s open\n", e->d_name);
			n++;
		}
	printf("spawned: %d other fds\n", n);
	return 0;
}

static int spawn(const char *self)
{
	pthread_t th;
	pthread_create(&th, NULL, idle, NULL);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* the guest's own, for comparison */
	char *args[] = { (char *)self, "list", NULL };
	pid_t pid;
	fflush(stdout);
	int r = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, NULL);
	int st = 0;
	waitpid(pid, &st, 0);
	stop = 1;
	pthread_join(th, NULL);
	close(fd);
	return r || !WIFEXITED(st) || WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "madvise";
	for (int fd = 3; fd < 64; fd++)
		close(fd);
	int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	code_len = 8192;
	code = mmap(NULL, code_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, self, 0);
	close(self);
	if (code == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (!strcmp(mode, "madvise"))
		return run(mode, drop);
	if (!strcmp(mode, "mremap"))
		return run(mode, grow);
	if (!strcmp(mode, "code"))
		return run(mode, drop_code);
	if (!strcmp(mode, "limit"))
		return fill();
	if (!strcmp(mode, "list"))
		return list();
	if (!strcmp(mode, "spawn"))
		return spawn(argv[0]);
	if (!strcmp(mode, "fork")) {
		pthread_t th;
		pthread_create(&th, NULL, drop, NULL); /* the parent has threads at the fork */
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			int r = run(mode, drop);
			fflush(stdout);
			_exit(r);
		}
		stop = 1;
		pthread_join(th, NULL);
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
	}
	fprintf(stderr, "fdorder: unknown mode %s\n", mode);
	return 2;
}
