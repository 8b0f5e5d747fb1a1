/* rootprobe: the file-system and identity calls that a root of a program's
 * own must answer as the host's kernel does in a chroot, one per word of
 * its command line, each printing one line (tests/test_rootfs*.py run it
 * under chroot and under zvisor run --root, and compare):
 *
 *   getcwd                  chdir P        fchdir P     chroot P
 *   readlink P              readdir P      stat P       lstat P
 *   cat P                   access P       open P       symlink T L
 *   link A B                rename A B     unlink P     mkdir P
 *   rmdir P                 mknod P c|b|p MAJ MIN       chown P U G
 *   chmod P MODE(octal)     ids            argv         exe
 *   exec P ARGS...          (the rest of the words are its argv, argv[0] = P)
 *
 * An error prints its errno's name. Paths are given as they are: the calls
 * are made with raw system calls where libc could rewrite them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "errname.h"

static int status;

static void result(const char *what, const char *arg, long r)
{
	if (r < 0) {
		printf("%s %s: %s\n", what, arg, errname(errno));
		status = 1;
	} else {
		printf("%s %s: ok\n", what, arg);
	}
}

static void print_stat(const char *what, const char *p, int flags)
{
	struct stat st;
	if (fstatat(AT_FDCWD, p, &st, flags) < 0) {
		result(what, p, -1);
		return;
	}
	printf("%s %s: mode=0%o uid=%u gid=%u nlink=%lu", what, p, st.st_mode, st.st_uid, st.st_gid,
	       (unsigned long)st.st_nlink);
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		printf(" rdev=%u,%u", major(st.st_rdev), minor(st.st_rdev));
	if (S_ISREG(st.st_mode))
		printf(" size=%lld", (long long)st.st_size);
	printf("\n");
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void readdir_sorted(const char *p)
{
	DIR *d = opendir(p);
	if (!d) {
		result("readdir", p, -1);
		return;
	}
	char *names[4096];
	int n = 0;
	struct dirent *e;
	static const char types[] = { [DT_REG] = 'f', [DT_DIR] = 'd', [DT_LNK] = 'l', [DT_CHR] = 'c',
				      [DT_BLK] = 'b', [DT_FIFO] = 'p', [DT_SOCK] = 's', [DT_UNKNOWN] = '?' };
	while ((e = readdir(d)) && n < 4096) {
		char *s;
		if (asprintf(&s, "%s %c", e->d_name, e->d_type < sizeof types && types[e->d_type] ?
			     types[e->d_type] : '?') < 0)
			exit(3);
		names[n++] = s;
	}
	closedir(d);
	qsort(names, n, sizeof names[0], cmp);
	printf("readdir %s:", p);
	for (int i = 0; i < n; i++)
		printf(" %s%s", names[i], i + 1 < n ? "," : "");
	printf("\n");
}

static void cat(const char *p)
{
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		result("cat", p, -1);
		return;
	}
	char buf[4096];
	long n;
	printf("cat %s: ", p);
	fflush(stdout);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		fwrite(buf, 1, n, stdout);
	close(fd);
}

static void readlink_one(const char *p)
{
	char buf[4096];
	long n = syscall(SYS_readlinkat, AT_FDCWD, p, buf, sizeof buf - 1);
	if (n < 0) {
		result("readlink", p, -1);
		return;
	}
	buf[n] = 0;
	printf("readlink %s: %s\n", p, buf);
}

static void ids(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	printf("ids: uid=%u,%u,%u gid=%u,%u,%u", r, e, s, gr, ge, gs);
	gid_t g[64];
	int n = getgroups(64, g);
	printf(" groups=");
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", g[i]);
	printf(" auxv=%lu,%lu,%lu,%lu\n", getauxval(AT_UID), getauxval(AT_EUID), getauxval(AT_GID),
	       getauxval(AT_EGID));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rootprobe CALL [ARGS] [CALL [ARGS]]...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *c = argv[i];
#define ARG(k) (i + (k) < argc ? argv[i + (k)] : (fprintf(stderr, "%s: missing argument\n", c), exit(2), ""))
		if (!strcmp(c, "getcwd")) {
			char buf[4096];
			long r = syscall(SYS_getcwd, buf, sizeof buf);
			if (r < 0)
				result("getcwd", "", r);
			else
				printf("getcwd: %s\n", buf);
		} else if (!strcmp(c, "chdir")) {
			result(c, ARG(1), syscall(SYS_chdir, ARG(1)));
			i++;
		} else if (!strcmp(c, "fchdir")) {
			int fd = open(ARG(1), O_RDONLY | O_DIRECTORY);
			result(c, ARG(1), fd < 0 ? fd : syscall(SYS_fchdir, fd));
			if (fd >= 0)
				close(fd);
			i++;
		} else if (!strcmp(c, "chroot")) {
			result(c, ARG(1), syscall(SYS_chroot, ARG(1)));
			i++;
		} else if (!strcmp(c, "readlink")) {
			readlink_one(ARG(1));
			i++;
		} else if (!strcmp(c, "readdir")) {
			readdir_sorted(ARG(1));
			i++;
		} else if (!strcmp(c, "stat") || !strcmp(c, "lstat")) {
			print_stat(c, ARG(1), c[0] == 'l' ? AT_SYMLINK_NOFOLLOW : 0);
			i++;
		} else if (!strcmp(c, "cat")) {
			cat(ARG(1));
			i++;
		} else if (!strcmp(c, "access")) {
			result(c, ARG(1), syscall(SYS_faccessat, AT_FDCWD, ARG(1), R_OK));
			i++;
		} else if (!strcmp(c, "open")) {
			long fd = syscall(SYS_openat, AT_FDCWD, ARG(1), O_RDONLY);
			result(c, ARG(1), fd);
			if (fd >= 0)
				close((int)fd);
			i++;
		} else if (!strcmp(c, "symlink")) {
			result(c, ARG(2), syscall(SYS_symlinkat, ARG(1), AT_FDCWD, ARG(2)));
			i += 2;
		} else if (!strcmp(c, "link")) {
			result(c, ARG(2), syscall(SYS_linkat, AT_FDCWD, ARG(1), AT_FDCWD, ARG(2), 0));
			i += 2;
		} else if (!strcmp(c, "rename")) {
			result(c, ARG(2), syscall(SYS_renameat, AT_FDCWD, ARG(1), AT_FDCWD, ARG(2)));
			i += 2;
		} else if (!strcmp(c, "unlink")) {
			result(c, ARG(1), syscall(SYS_unlinkat, AT_FDCWD, ARG(1), 0));
			i++;
		} else if (!strcmp(c, "mkdir")) {
			result(c, ARG(1), syscall(SYS_mkdirat, AT_FDCWD, ARG(1), 0755));
			i++;
		} else if (!strcmp(c, "rmdir")) {
			result(c, ARG(1), syscall(SYS_unlinkat, AT_FDCWD, ARG(1), AT_REMOVEDIR));
			i++;
		} else if (!strcmp(c, "mknod")) {
			const char *t = ARG(2);
			mode_t m = (t[0] == 'c' ? S_IFCHR : t[0] == 'b' ? S_IFBLK : S_IFIFO) | 0644;
			dev_t d = makedev(atoi(ARG(3)), atoi(ARG(4)));
			result(c, ARG(1), syscall(SYS_mknodat, AT_FDCWD, ARG(1), m, d));
			i += 4;
		} else if (!strcmp(c, "chown")) {
			result(c, ARG(1), syscall(SYS_fchownat, AT_FDCWD, ARG(1), atoi(ARG(2)), atoi(ARG(3)),
						  AT_SYMLINK_NOFOLLOW));
			i += 3;
		} else if (!strcmp(c, "chmod")) {
			result(c, ARG(1), syscall(SYS_fchmodat, AT_FDCWD, ARG(1), strtol(ARG(2), NULL, 8)));
			i += 2;
		} else if (!strcmp(c, "ids")) {
			ids();
		} else if (!strcmp(c, "argv")) {
			printf("argv:");
			for (int k = 0; k < argc; k++)
				printf(" %s", argv[k]);
			printf("\n");
		} else if (!strcmp(c, "exe")) {
			readlink_one("/proc/self/exe");
			printf("execfn: %s\n", (const char *)getauxval(AT_EXECFN));
		} else if (!strcmp(c, "exec")) {
			fflush(stdout);
			execv(ARG(1), argv + i + 1);
			result(c, ARG(1), -1);
			return status;
		} else {
			fprintf(stderr, "rootprobe: unknown call '%s'\n", c);
			return 2;
		}
		fflush(stdout);
	}
	return status;
}
