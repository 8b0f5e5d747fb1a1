/* Kernel resources (DESIGN 2, 4): zvisor's own file descriptors are hidden.
 * A guest that closes every fd above 2, dup2s onto every fd number below its
 * RLIMIT_NOFILE, or lists /proc/self/fd sees what it would see natively, and
 * keeps working afterwards (stdio, fork, threads, exec). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static const char *errname(int e)
{
	return e == EBADF ? "EBADF" : e == EMFILE ? "EMFILE" : e == EINVAL ? "EINVAL" : "other";
}

/* Print the fds in /proc/self/fd, leaving out the directory's own fd. */
static void list_fds(const char *when)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		printf("%s: opendir /proc/self/fd: %s\n", when, errname(errno));
		return;
	}
	int self = dirfd(d), n = 0;
	char list[256] = "";
	size_t len = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || atoi(de->d_name) == self)
			continue;
		n++;
		if (len < sizeof(list) - 16)
			len += snprintf(list + len, sizeof(list) - len, " %s", de->d_name);
	}
	closedir(d);
	printf("%s: %d fds:%s%s\n", when, n, list, len >= sizeof(list) - 16 ? " ..." : "");
}

/* How many fds in [lo, hi) answer F_GETFD. */
static int count_open(int lo, int hi)
{
	int n = 0;
	for (int fd = lo; fd < hi; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

static void *thread_fn(void *arg)
{
	int p[2];
	if (pipe(p))
		return (void *)1;
	write(p[1], "t", 1);
	char c = 0;
	read(p[0], &c, 1);
	close(p[0]);
	close(p[1]);
	return (void *)(long)(c == 't' ? 0 : 1);
}

static void still_works(const char *when)
{
	int ok = 1;
	int fd = open("/dev/null", O_WRONLY);
	ok &= fd >= 0 && write(fd, "x", 1) == 1;
	close(fd);
	pthread_t t;
	void *ret = (void *)1;
	ok &= pthread_create(&t, NULL, thread_fn, NULL) == 0 && pthread_join(t, &ret) == 0 && !ret;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = { "true", NULL };
		execv("/bin/true", argv);
		_exit(127);
	}
	int st = -1;
	ok &= pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	printf("%s: open/write, thread, fork+exec: %s\n", when, ok ? "OK" : "FAIL");
}

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("RLIMIT_NOFILE soft %llu hard %llu\n", (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max);
	int soft = rl.rlim_cur > 1 << 20 ? 1 << 20 : (int)rl.rlim_cur;
	int probe_hi = soft < 65536 ? 65536 : soft;
	list_fds("at start");
	printf("open fds in [3, %d): %d\n", probe_hi, count_open(3, probe_hi));
	printf("lowest free fd: %d\n", fcntl(1, F_DUPFD, 0));

	/* close everything above stderr */
	/* The whole range, from 0, marked close-on-exec (4 = CLOSE_RANGE_CLOEXEC). */
	long r = syscall(SYS_close_range, 0, ~0U, 4);
	printf("close_range(0, ~0U, CLOEXEC): %ld, fd 1 cloexec %d\n", r, fcntl(1, F_GETFD) & FD_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		fcntl(fd, F_SETFD, 0);
	r = syscall(SYS_close_range, 3, ~0U, 0);
	printf("close_range(3, ~0U, 0): %ld\n", r);
	list_fds("after close_range");
	still_works("after close_range");

	/* occupy every fd number up to the limit */
	int ok = 0, first_fail = -1;
	for (int fd = 3; fd < soft; fd++) {
		if (dup2(1, fd) == fd)
			ok++;
		else if (first_fail < 0)
			first_fail = fd;
	}
	printf("dup2 onto 3..%d: %d succeeded, first failure %d\n", soft - 1, ok, first_fail);
	errno = 0;
	r = dup2(1, soft);
	printf("dup2 onto the limit %d: %ld %s\n", soft, r, errname(errno));
	errno = 0;
	r = open("/dev/null", O_RDONLY);
	printf("open with a full table: %ld %s\n", r, errname(errno));
	list_fds("full table");
	printf("stdout still works with a full table\n");
	fflush(stdout);

	r = syscall(SYS_close_range, 3, ~0U, 0);
	printf("close_range again: %ld\n", r);
	list_fds("after closing them");
	printf("open fds in [3, %d): %d\n", probe_hi, count_open(3, probe_hi));
	still_works("at the end");
	return 0;
}
