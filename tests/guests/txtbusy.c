/* A running program's file refuses writes (ETXTBSY): every call that
 * writes or truncates it, while a copy of this program runs it (also after
 * its exec'ing parent is gone, through a fork child), and no longer once
 * it exits or execs something else; an execve of a file open for writing.
 * "locks": the guest's own fcntl locks on such a file, and /proc/locks,
 * are as without the denial. Modes run, locks; the copies run "child
 * FD" (pause after writing a byte to FD), "forker FD" and "execaway FD". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#endif

static char copy[4200], copy2[4200];

static const char *err(long r)
{
	static char b[32];
	if (r >= 0)
		return "ok";
	switch (errno) {
	case ETXTBSY: return "ETXTBSY";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case EACCES: return "EACCES";
	case ENOENT: return "ENOENT";
	}
	snprintf(b, sizeof b, "errno %d", errno);
	return b;
}

static void show_open(const char *what, long fd)
{
	printf("%s: %s\n", what, err(fd));
	if (fd >= 0)
		close((int)fd);
}

static void copy_self(const char *to)
{
	int in = open("/proc/self/exe", O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	long n;
	if (in < 0 || out < 0) {
		printf("FAIL: copy to %s: %s\n", to, strerror(errno));
		exit(1);
	}
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			exit(1);
	close(in);
	close(out);
}

/* Starts the copy with role; returns its pid once it runs (a byte on a pipe). */
static pid_t start(const char *role, int *keep)
{
	int p[2];
	char fd[16], c;
	if (pipe(p))
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		snprintf(fd, sizeof fd, "%d", p[1]);
		execl(copy, copy, role, fd, (char *)0);
		_exit(127);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		printf("FAIL: %s did not start\n", role);
	if (keep)
		*keep = p[0];
	else
		close(p[0]);
	return pid;
}

static long size_of(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : st.st_size;
}

static void writes(const char *tag)
{
	long before = size_of(copy);
	char what[128];
#define TRY(name, call) snprintf(what, sizeof what, "%s %s", tag, name), show_open(what, call)
	TRY("open O_WRONLY", open(copy, O_WRONLY));
	TRY("open O_RDWR", open(copy, O_RDWR));
	TRY("open O_RDONLY|O_TRUNC", open(copy, O_RDONLY | O_TRUNC));
	TRY("open O_WRONLY|O_CREAT", open(copy, O_WRONLY | O_CREAT, 0755));
	TRY("open O_WRONLY|O_CREAT|O_TRUNC", open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755));
	TRY("openat O_RDWR|O_APPEND", openat(AT_FDCWD, copy, O_RDWR | O_APPEND));
	TRY("creat", creat(copy, 0755));
	struct { unsigned long long flags, mode, resolve; } how = { O_WRONLY, 0, 0 };
	long r = syscall(SYS_openat2, AT_FDCWD, copy, &how, sizeof how);
	if (r < 0 && errno == ENOSYS)
		r = -1, errno = ETXTBSY; /* a host without openat2: as on one with it */
	TRY("openat2 O_WRONLY", r);
	printf("%s truncate: %s\n", tag, err(truncate(copy, 1)));
	printf("%s O_RDONLY open: %s\n", tag, err(open(copy, O_RDONLY) >= 0 ? 0 : -1));
	printf("%s size kept: %d\n", tag, size_of(copy) == before);
}

/* The copies go beside this program (its directory allows exec). */
static void name_copies(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	self[n > 0 ? n : 0] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(self, ".");
	snprintf(copy, sizeof copy, "%s/txtbusy-%d.tmp", self, getpid());
	snprintf(copy2, sizeof copy2, "%s/txtbusy2-%d.tmp", self, getpid());
}

static void run(void)
{
	name_copies();
	copy_self(copy);
	int pipefd;
	pid_t pid = start("child", &pipefd);
	writes("running:");
	printf("running: /proc/self/exe O_WRONLY: %s\n", err(open("/proc/self/exe", O_WRONLY)));
	/* a new file beside it: O_CREAT|O_TRUNC makes it, and again truncates it */
	int fd = open(copy2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	printf("new file: %s, %ld bytes written\n", err(fd), fd >= 0 ? (long)write(fd, "abc", 3) : -1L);
	if (fd >= 0)
		close(fd);
	fd = open(copy2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	printf("its O_TRUNC: %s, size %ld\n", err(fd), size_of(copy2));
	if (fd >= 0)
		close(fd);
	unlink(copy2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pipefd);
	writes("after exit:");

	/* a fork child keeps the program running after the exec'd process exits */
	copy_self(copy);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	pid = start("forker", &pipefd);
	int st;
	waitpid(pid, &st, 0);
	printf("forker exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	show_open("fork child runs it: open O_WRONLY", open(copy, O_WRONLY));
	pid_t gc = -1;
	if (read(pipefd, &gc, sizeof gc) != sizeof gc)
		printf("FAIL: no grandchild pid\n");
	kill(gc, SIGKILL);
	close(pipefd);
	waitpid(gc, NULL, 0); /* ours: the subreaper's */
	show_open("fork child gone: open O_WRONLY", open(copy, O_WRONLY));

	/* an exec of another program ends the denial */
	pid = start("execaway", &pipefd);
	show_open("before its exec: open O_WRONLY", open(copy, O_WRONLY));
	kill(pid, SIGUSR1);
	waitpid(pid, &st, 0);
	show_open("after its exec: open O_WRONLY", open(copy, O_WRONLY));
	close(pipefd);

	/* the other way: an execve of a file open for writing */
	fd = open(copy, O_WRONLY);
	pid = fork();
	if (pid == 0) {
		execl(copy, copy, "exit", (char *)0);
		printf("execve of a file open for writing: %s\n", err(-1));
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	close(fd);
	unlink(copy);
}

static void locks(void)
{
	name_copies();
	copy_self(copy);
	int pipefd;
	pid_t pid = start("child", &pipefd);
	int fd = open(copy, O_RDONLY);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	int r = fcntl(fd, F_GETLK, &fl);
	printf("F_GETLK whole file: %d, type %s\n", r, fl.l_type == F_UNLCK ? "F_UNLCK" : "locked");
	fl = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_END, .l_start = 0, .l_len = 0 };
	r = fcntl(fd, F_OFD_GETLK, &fl);
	printf("F_OFD_GETLK from the end: %d, type %s, whence %d\n", r, fl.l_type == F_UNLCK ? "F_UNLCK" : "locked",
	       fl.l_whence);
	fl = (struct flock){ .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 100, .l_len = 0 };
	printf("F_SETLK read lock from 100: %d\n", fcntl(fd, F_SETLK, &fl));
	/* /proc/locks: this file's lines */
	struct stat st;
	fstat(fd, &st);
	char key[64], line[256];
	snprintf(key, sizeof key, " %02x:%02x:%lu ", major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino);
	int n = 0;
	FILE *f = fopen("/proc/locks", "r");
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, key)) {
			char kind[16], adv[16], type[16], start[32], end[32];
			int lpid;
			n++;
			if (sscanf(line, "%*d: %15s %15s %15s %d %*s %31s %31s", kind, adv, type, &lpid, start, end) == 6)
				printf("/proc/locks: %s %s %s %s %s %s\n", kind, adv, type,
				       lpid == getpid() ? "(this process)" : "(another)", start, end);
		}
	if (f)
		fclose(f);
	printf("/proc/locks lines for the file: %d\n", n);
	pid_t c = fork();
	if (c == 0) {
		int fd2 = open(copy, O_RDONLY);
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
		int r = fcntl(fd2, F_GETLK, &q);
		printf("child F_GETLK whole file: %d, type %s, start %ld, len %ld, pid is parent's %d\n", r,
		       q.l_type == F_RDLCK ? "F_RDLCK" : q.l_type == F_UNLCK ? "F_UNLCK" : "other", (long)q.l_start,
		       (long)q.l_len, q.l_pid == getppid());
		q = (struct flock){ .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
		r = fcntl(fd2, F_GETLK, &q);
		printf("child F_GETLK before it: %d, type %s\n", r, q.l_type == F_UNLCK ? "F_UNLCK" : "locked");
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pipefd);
	unlink(copy);
}

static void ready(const char *fdarg)
{
	int fd = atoi(fdarg);
	if (write(fd, "x", 1) != 1)
		_exit(1);
}

static void on_usr1(int sig)
{
	(void)sig;
	execl("/bin/sh", "sh", "-c", "exit 0", (char *)0);
	_exit(126);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 2 && !strcmp(argv[1], "child")) {
		ready(argv[2]);
		for (;;)
			pause();
	}
	if (argc > 2 && !strcmp(argv[1], "forker")) {
		ready(argv[2]);
		pid_t gc = fork();
		if (gc == 0)
			for (;;)
				pause();
		if (write(atoi(argv[2]), &gc, sizeof gc) != sizeof gc)
			_exit(1);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "execaway")) {
		signal(SIGUSR1, on_usr1);
		ready(argv[2]);
		for (;;)
			pause();
	}
	if (argc > 1 && !strcmp(argv[1], "exit"))
		return 0;
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		printf("run\nlocks\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "locks"))
		locks();
	else
		run();
	return 0;
}
