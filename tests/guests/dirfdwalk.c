/* dirfdwalk: a process opens a directory by its absolute path, as ls -lR
 * does, then names files in it by that path and a '/' (stat, lstat,
 * access, readlink, fstatat), while the directory fd, the directory and
 * the path change under it: closed and the number reused, dup2'd over,
 * the directory renamed or replaced by a symlink, search permission taken
 * from the directory above it, another process or thread in between (one
 * that shares the fd table and not the memory too), an exec in between, a
 * deep tree, fds up to RLIMIT_NOFILE. Each name must be what the path names now, whatever the
 * fd holds. All under BASE (argv[1], an empty directory given by an
 * absolute path); prints what each lookup found. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basedir.h"

static int opendir_fd(const char *rel)
{
	return open(at(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* What rel is to the path calls that walk: its size (each file's text has
 * a length of its own), and whether access and lstat agree. */
static void show(const char *what, const char *rel)
{
	struct stat st, lst;
	const char *p = at(rel);
	int s = stat(p, &st), l = lstat(p, &lst), a = access(p, R_OK);
	char link[64] = { 0 };
	ssize_t n = readlink(p, link, sizeof link - 1);
	if (s)
		printf("%s: stat=%s", what, strerror(errno));
	else
		printf("%s: size=%lld", what, (long long)st.st_size);
	printf(" lstat=%s access=%s readlink=%s\n", l ? "err" : S_ISLNK(lst.st_mode) ? "link" : "ok", a ? "no" : "ok",
	       n >= 0 ? link : "no");
}

static void *closer(void *arg)
{
	int fd = *(int *)arg;
	close(fd);
	int k = open("c", O_RDONLY | O_DIRECTORY); /* relative: the same number, another directory */
	if (k != fd)
		printf("FAIL thread: fd %d, not %d\n", k, fd);
	return NULL;
}

struct table_child {
	int go;
	const char *what;
};

/* Waits for its parent's word, then names a file in the directory. */
static int table_child(void *arg)
{
	struct table_child *tc = arg;
	char x;
	if (read(tc->go, &x, 1) != 1)
		printf("FAIL read: %s\n", strerror(errno));
	show(tc->what, "a/f");
	fflush(stdout);
	return 0;
}

static void clone_files(void)
{
	int fd = opendir_fd("a"), k;
	int go[2];
	if (pipe(go))
		printf("FAIL pipe: %s\n", strerror(errno));
	static char stack[65536];
	struct table_child tc = { go[0], "files child a/f" };
	fflush(stdout);
	pid_t tpid = clone(table_child, stack + sizeof stack, CLONE_FILES | SIGCHLD, &tc);
	if (tpid < 0)
		printf("FAIL clone: %s\n", strerror(errno));
	close(fd);
	k = open("c", O_RDONLY | O_DIRECTORY);
	printf("files: same number %s\n", k == fd ? "yes" : "no");
	fflush(stdout);
	if (write(go[1], "x", 1) != 1)
		printf("FAIL write: %s\n", strerror(errno));
	waitpid(tpid, NULL, 0);
	close(k);
	close(go[0]);
	close(go[1]);
}

static void after_exec(int fd)
{
	/* the exec closed fd (close-on-exec); its number goes to another directory */
	int k = open("c", O_RDONLY | O_DIRECTORY);
	printf("exec: same number %s\n", k == fd ? "yes" : "no");
	show("exec a/f", "a/f");
}

int main(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] != '/') {
		fprintf(stderr, "usage: dirfdwalk /BASE\n");
		return 2;
	}
	snprintf(base, sizeof base, "%s", argv[1]);
	if (chdir(base)) {
		perror("chdir");
		return 1;
	}
	if (argc == 4 && !strcmp(argv[2], "exec")) {
		after_exec(atoi(argv[3]));
		return 0;
	}
	mkdir(at("a"), 0755);
	mkdir(at("c"), 0755);
	put("a/f", "one");
	put("c/f", "three");
	symlink("f", at("a/l"));

	/* the directory fd closed, its number reused by another directory */
	int fd = opendir_fd("a");
	show("open a/f", "a/f");
	show("open a/l", "a/l");
	close(fd);
	int k = open("c", O_RDONLY | O_DIRECTORY);
	printf("reuse: same number %s\n", k == fd ? "yes" : "no");
	show("reused a/f", "a/f");
	close(k);

	/* dup2 over it */
	fd = opendir_fd("a");
	show("dup2 before", "a/f");
	k = open("c", O_RDONLY | O_DIRECTORY);
	dup2(k, fd);
	show("dup2 after", "a/f");
	close(k);
	close(fd);

	/* the directory renamed while the fd is open; another takes its name */
	fd = opendir_fd("a");
	show("held a/f", "a/f");
	rename(at("a"), at("b"));
	show("moved a/f", "a/f");
	show("moved b/f", "b/f");
	mkdir(at("a"), 0755);
	put("a/f", "seven!!");
	show("new a/f", "a/f");
	/* the old directory through its fd: still the one renamed */
	struct stat st;
	printf("fd f: %s\n", fstatat(fd, "f", &st, 0) ? strerror(errno) : st.st_size == 3 ? "b's" : "other");
	close(fd);

	/* the directory replaced by a symlink */
	fd = opendir_fd("a");
	show("dir a/f", "a/f");
	rename(at("a"), at("a.old"));
	symlink("c", at("a"));
	show("link a/f", "a/f");
	unlink(at("a"));
	symlink("b", at("a"));
	show("link2 a/f", "a/f");
	close(fd);
	unlink(at("a"));
	rename(at("a.old"), at("a"));

	/* search permission taken from the directory above it (seen by a
	 * user other than root), a directory another process made */
	fflush(stdout);
	if (fork() == 0) {
		mkdir(at("p"), 0755);
		mkdir(at("p/q"), 0755);
		put("p/q/f", "four");
		_exit(0);
	}
	wait(NULL);
	stat(base, &st); /* (a walk: what the view had to learn is learnt) */
	fd = opendir_fd("p/q");
	show("perm before", "p/q/f");
	chmod(at("p"), 0);
	show("perm none", "p/q/f");
	chmod(at("p"), 0755);
	show("perm back", "p/q/f");
	chmod(at("p/q"), 0);
	show("perm own none", "p/q/f");
	chmod(at("p/q"), 0755);
	close(fd);

	/* a thread closes it and opens another at its number */
	fd = opendir_fd("a");
	show("thread before", "a/f");
	pthread_t th;
	pthread_create(&th, NULL, closer, &fd);
	pthread_join(th, NULL);
	show("thread after", "a/f");
	close(fd);

	/* a child that shares the fd table, not the memory: the parent closes
	 * the fd and opens another directory at its number (in a process of
	 * its own: one whose table was shared stays careful) */
	fflush(stdout);
	if (fork() == 0) {
		clone_files();
		fflush(stdout);
		_exit(0);
	}
	wait(NULL);

	/* a child: its own fd table, this memory's copy */
	fd = opendir_fd("a");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		show("child before", "a/f");
		close(fd);
		k = open("c", O_RDONLY | O_DIRECTORY);
		printf("child: same number %s\n", k == fd ? "yes" : "no");
		show("child after", "a/f");
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	show("parent after child", "a/f");
	/* vfork: the child shares this memory, its fds are its own */
	pid = vfork();
	if (pid == 0) {
		close(fd);
		k = open("c", O_RDONLY | O_DIRECTORY);
		_exit(k == fd ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	printf("vfork child reused the number: %s\n", WIFEXITED(status) && !WEXITSTATUS(status) ? "yes" : "no");
	show("parent after vfork", "a/f");
	close(fd);

	/* a deep tree: each level opened, then its names */
	char rel[4096] = "d";
	mkdir(at(rel), 0755);
	for (int i = 0; i < 60; i++) {
		size_t n = strlen(rel);
		snprintf(rel + n, sizeof rel - n, "/%s%d", i % 2 ? "deeper" : "d", i);
		if (mkdir(at(rel), 0755))
			printf("FAIL mkdir depth %d: %s\n", i, strerror(errno));
	}
	int deep = 0;
	for (char *p = rel; (p = strchr(p + 1, '/'));) {
		*p = 0;
		int dfd = opendir_fd(rel);
		char name[4096];
		snprintf(name, sizeof name, "%s/%s", rel, p + 1);
		char *slash = strchr(name + strlen(rel) + 1, '/');
		if (slash)
			*slash = 0;
		struct stat ds;
		deep += dfd >= 0 && stat(at(name), &ds) == 0 && S_ISDIR(ds.st_mode);
		close(dfd);
		*p = '/';
	}
	printf("deep: %d levels seen\n", deep);

	/* fds up to the limit: directories opened until EMFILE, their names stat'ed */
	for (int i = 0; i < 40; i++) {
		char m[32];
		snprintf(m, sizeof m, "m%d", i);
		mkdir(at(m), 0755);
		snprintf(m, sizeof m, "m%d/f", i);
		put(m, "x");
	}
	struct rlimit rl = { 40, 40 };
	if (setrlimit(RLIMIT_NOFILE, &rl))
		printf("FAIL setrlimit: %s\n", strerror(errno));
	int opened = 0, first = -1, last = -1, err = 0;
	for (int i = 0; i < 100; i++) {
		char m[32];
		snprintf(m, sizeof m, "m%d/f", i % 40);
		int probe = dup(0);
		if (probe >= 0) { /* a directory entered by the walk alone, which needs a free number */
			close(probe);
			show("limit m/f", m);
		}
		int dfd = opendir_fd(i % 2 ? "a" : "c");
		if (dfd < 0) {
			err = errno;
			break;
		}
		opened++;
		last = dfd;
		if (first < 0)
			first = dfd;
		show(i % 2 ? "limit a/f" : "limit c/f", i % 2 ? "a/f" : "c/f");
	}
	printf("limit: %d opened, then %s\n", opened, strerror(err));
	close(last);
	show("limit last a/f", "a/f");
	for (int i = first; i < last; i++)
		close(i);

	/* an exec: the fd is close-on-exec, its number taken again after it */
	fd = opendir_fd("a");
	show("exec before", "a/f");
	char num[16];
	snprintf(num, sizeof num, "%d", fd);
	fflush(stdout);
	execl("/proc/self/exe", argv[0], base, "exec", num, (char *)NULL);
	printf("FAIL exec: %s\n", strerror(errno));
	return 1;
}
