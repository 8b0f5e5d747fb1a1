/* execve and execveat errors only the host's own exec can see (LTP
 * execve04, execveat02): a bad dirfd under AT_EMPTY_PATH, the working
 * directory (AT_FDCWD and ""), a symlink under AT_SYMLINK_NOFOLLOW, a
 * dirfd that is not a directory, a file open for
 * writing (ETXTBSY), a directory and a file without execute permission
 * (EACCES), an unreadable argv; then the same file runs once its writer is
 * closed. Each exec is tried in a child, which exits 0 if it ran /bin/true's
 * copy. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "errname.h"

#ifndef SYS_execveat
#define SYS_execveat 322
#endif

static char dir[64], prog[128], link_[128], plain[128];
static char *args[] = { "true", NULL };

/* Runs one exec in a child: prints its errno, or "ran" and the status. */
static void try(const char *what, int dfd, const char *path, char **argv, int flags)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		exit(2);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		syscall(SYS_execveat, dfd, path, argv, (char *[]){ NULL }, flags);
		int e = errno;
		if (write(pfd[1], &e, sizeof e) != sizeof e)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	int e = 0, st;
	long n = read(pfd[0], &e, sizeof e);
	close(pfd[0]);
	waitpid(pid, &st, 0);
	if (n == sizeof e)
		printf("%-44s %s\n", what, errname(e));
	else
		printf("%-44s ran, exit %d\n", what, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void copy(const char *from, const char *to, int mode)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
	char buf[65536];
	long n;
	if (in < 0 || out < 0)
		exit(2);
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, n) != n)
			exit(2);
	close(in);
	close(out);
}

int main(void)
{
	strcpy(dir, "/tmp/zv-execcheck-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	snprintf(prog, sizeof prog, "%s/true", dir);
	snprintf(link_, sizeof link_, "%s/link", dir);
	snprintf(plain, sizeof plain, "%s/plain", dir);
	copy("/bin/true", prog, 0755);
	copy("/bin/true", plain, 0644);
	if (symlink(prog, link_) < 0)
		return 2;
	int filefd = open(prog, O_RDONLY);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	char **unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	try("bad dirfd, AT_EMPTY_PATH:", -1, "", args, AT_EMPTY_PATH);
	try("closed dirfd, relative path:", 1000, "true", args, 0);
	try("working directory, AT_EMPTY_PATH:", AT_FDCWD, "", args, AT_EMPTY_PATH);
	try("symlink, AT_SYMLINK_NOFOLLOW:", AT_FDCWD, link_, args, AT_SYMLINK_NOFOLLOW);
	try("symlink:", AT_FDCWD, link_, args, 0);
	try("dirfd of a regular file:", filefd, "true", args, 0);
	try("directory:", AT_FDCWD, dir, args, 0);
	try("no execute permission:", AT_FDCWD, plain, args, 0);
	try("dirfd and relative path:", dirfd, "true", args, 0);
	try("argv unreadable:", AT_FDCWD, prog, unmapped, 0);
	int writer = open(prog, O_WRONLY);
	try("open for writing:", AT_FDCWD, prog, args, 0);
	try("open for writing, by fd:", filefd, "", args, AT_EMPTY_PATH);
	close(writer);
	try("writer closed:", AT_FDCWD, prog, args, 0);

	unlink(link_);
	unlink(prog);
	unlink(plain);
	rmdir(dir);
	return 0;
}
