/* Owners, modes and device nodes as root sets them natively, in a
 * directory DIR, for zvisor --fake-root to show the same: the chown and
 * chmod families and the set-ID bits they clear, mknod of devices, FIFOs
 * and sockets, every stat call, the modes a root creates files with and
 * uses them under, hard links, renames and unlinks, a user's limits after
 * dropping root, the attribute calls. Run as root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "errname.h"

/* The kernel's struct statx (glibc's and musl's may lack it). */
struct kstatx {
	unsigned mask, blksize;
	unsigned long long attributes;
	unsigned nlink, uid, gid;
	unsigned short mode, pad1;
	unsigned long long ino, size, blocks, attributes_mask;
	struct { long long sec; unsigned nsec; int pad; } atime, btime, ctime, mtime;
	unsigned rdev_major, rdev_minor, dev_major, dev_minor;
	unsigned long long spare[14];
};
#define KSTATX_BASIC 0x7ff
#ifndef SYS_statx
#define SYS_statx 332
#endif

static int dir; /* DIR, open */

static const char *kind(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "link";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "sock";
	default: return "?";
	}
}

static void line(const char *call, const char *name, const struct stat *st)
{
	printf("%s %s: %s %04o %d:%d links %d size %ld", call, name, kind(st->st_mode), st->st_mode & 07777,
	       st->st_uid, st->st_gid, (int)st->st_nlink, S_ISREG(st->st_mode) ? (long)st->st_size : 0L);
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		printf(" dev %u:%u", major(st->st_rdev), minor(st->st_rdev));
	printf("\n");
}

/* Every stat call of name (relative to DIR) must say the same. */
static void show(const char *name)
{
	struct stat st, st2;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW)) {
		printf("lstat %s: %s\n", name, errname(errno));
		return;
	}
	line("lstat", name, &st);
	struct kstatx sx;
	if (syscall(SYS_statx, dir, name, AT_SYMLINK_NOFOLLOW, KSTATX_BASIC, &sx) == 0 &&
	    (sx.mode != st.st_mode || sx.uid != st.st_uid || sx.gid != st.st_gid ||
	     makedev(sx.rdev_major, sx.rdev_minor) != st.st_rdev))
		printf("statx %s: differs: %o %d:%d\n", name, sx.mode, sx.uid, sx.gid);
	if (fstatat(dir, name, &st2, 0) == 0 && !S_ISLNK(st.st_mode) && memcmp(&st, &st2, sizeof st))
		printf("stat %s: differs\n", name);
	int fd = openat(dir, name, O_PATH | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &st2) == 0 && (st2.st_mode != st.st_mode || st2.st_uid != st.st_uid))
		printf("fstat(O_PATH) %s: differs\n", name);
	if (fd >= 0 && fstatat(fd, "", &st2, AT_EMPTY_PATH) == 0 && st2.st_uid != st.st_uid)
		printf("fstatat(EMPTY_PATH) %s: differs\n", name);
	close(fd);
}

#define DO(call) report(#call, (errno = 0, (call)) < 0 ? errno : 0)
static void report(const char *what, int err)
{
	printf("%s: %s\n", what, err ? errname(err) : "ok");
}

static void put(const char *name, mode_t mode)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, "data\n", 5) != 5)
		printf("put %s: FAIL %s\n", name, errname(errno));
	close(fd);
}

static void mode_own(void)
{
	put("f", 0644);
	show("f");
	DO(fchownat(dir, "f", 12, 34, 0));
	show("f");
	DO(fchmodat(dir, "f", 06755, 0));
	show("f");
	DO(fchownat(dir, "f", -1, -1, 0)); /* set-ID bits go, even for root */
	show("f");
	DO(fchmodat(dir, "f", 06745, 0));
	DO(fchownat(dir, "f", 0, 0, 0)); /* S_ISGID without group exec stays for root */
	show("f");
	int fd = openat(dir, "f", O_RDONLY);
	DO(fchown(fd, 56, 78));
	DO(fchmod(fd, 0600));
	show("f");
	int p = openat(dir, "f", O_PATH);
	DO(fchown(p, 1, 1));
	DO(fchmod(p, 0644));
	DO(fchownat(p, "", 90, 91, AT_EMPTY_PATH));
	show("f");
	close(fd);
	close(p);
	DO(symlinkat("f", dir, "l"));
	DO(fchownat(dir, "l", 5, 6, AT_SYMLINK_NOFOLLOW));
	DO(fchownat(dir, "l", 7, 8, 0)); /* follows: f's */
	show("l");
	show("f");
	DO(fchownat(dir, "f", 0, 0, 0x2 /* a bad flag */));
	DO(fchownat(dir, "missing", 0, 0, 0));
	DO(mkdirat(dir, "d", 02755));
	DO(fchownat(dir, "d", 3, 4, 0));
	show("d"); /* a directory keeps its set-ID bits */
	DO(fchmodat(dir, "d", 01777, 0));
	show("d");
	/* xattrs: the record's own is never seen */
	char list[256];
	ssize_t n = flistxattr(openat(dir, "f", O_RDONLY), list, sizeof list);
	printf("listxattr f: %zd\n", n);
	n = getxattr("f", "user.containers.override_stat", list, sizeof list);
	printf("getxattr f: %zd %s\n", n, errname(errno));
	DO(setxattr("f", "user.other", "v", 1, 0));
	n = listxattr("f", list, sizeof list);
	printf("listxattr f: %zd %s\n", n, n > 0 ? list : "");
}

/* The entries' types as readdir gives them (getdents64's d_type). */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void types(void)
{
	DIR *d = fdopendir(dup(dir));
	rewinddir(d);
	char *names[64];
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 64;)
		if (e->d_name[0] != '.') {
			char *s = malloc(300);
			snprintf(s, 300, "%s:%d", e->d_name, e->d_type);
			names[n++] = s;
		}
	closedir(d);
	qsort(names, n, sizeof names[0], by_name);
	printf("types:");
	for (int i = 0; i < n; i++)
		printf(" %s", names[i]);
	printf("\n");
}

static void mode_nodes(void)
{
	umask(022);
	DO(mknodat(dir, "null", S_IFCHR | 0666, makedev(1, 3)));
	DO(mknodat(dir, "sda", S_IFBLK | 0660, makedev(8, 0)));
	DO(mknodat(dir, "big", S_IFCHR | 0600, makedev(300, 70000)));
	DO(mknodat(dir, "fifo", S_IFIFO | 0644, 0));
	DO(mknodat(dir, "plain", S_IFREG | 0640, 0));
	DO(mknodat(dir, "null", S_IFCHR | 0666, makedev(1, 3)));
	DO(mknodat(dir, "bad", S_IFDIR | 0755, 0));
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "sock");
	DO(fchdir(dir));
	DO(bind(s, (struct sockaddr *)&a, sizeof a));
	close(s);
	DO(fchownat(dir, "sda", 0, 6, 0));
	DO(fchownat(dir, "fifo", 10, 10, 0));
	DO(fchownat(dir, "sock", 11, 11, 0));
	DO(fchmodat(dir, "null", 0600, 0));
	static const char *names[] = { "null", "sda", "big", "fifo", "plain", "sock" };
	for (int i = 0; i < 6; i++)
		show(names[i]);
	DO(renameat(dir, "null", dir, "null2"));
	DO(linkat(dir, "sda", dir, "sda2", 0));
	show("null2");
	show("sda2");
	DO(unlinkat(dir, "sda", 0));
	show("sda2");
	types();
	/* user attributes: regular files and directories only (LTP setxattr02) */
	DO(setxattr("null2", "user.zv", "v", 1, 0));
	DO(getxattr("null2", "user.zv", NULL, 0));
	DO(removexattr("sda2", "user.zv"));
	DO(lsetxattr("sda2", "user.zv", "v", 1, 0));
	DO(setxattr("plain", "user.zv", "v", 1, 0));
	DO(getxattr("plain", "user.zv", NULL, 0));
}

static void mode_modes(void)
{
	umask(022);
	put("ro", 0444);
	show("ro");
	int fd = openat(dir, "ro", O_WRONLY | O_APPEND);
	printf("open ro for writing: %s\n", fd >= 0 ? "ok" : errname(errno));
	close(fd);
	DO(mkdirat(dir, "rx", 0555));
	show("rx");
	put("rx/inside", 0600);
	show("rx/inside");
	DO(fchmodat(dir, "rx/inside", 0, 0));
	show("rx/inside");
	fd = openat(dir, "rx/inside", O_RDONLY);
	printf("open mode 0 for reading: %s\n", fd >= 0 ? "ok" : errname(errno));
	close(fd);
	DO(mkdirat(dir, "none", 0));
	show("none");
	DO(mknodat(dir, "none/node", S_IFREG | 0600, 0));
	fd = openat(dir, ".", O_TMPFILE | O_WRONLY, 0400);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0)
		line("fstat", "tmpfile", &st);
	close(fd);
	DO(symlinkat("ro", dir, "lnk"));
	DO(syscall(452 /* fchmodat2 */, dir, "lnk", 0600, AT_SYMLINK_NOFOLLOW));
	DO(syscall(452, dir, "ro", 0640, AT_SYMLINK_NOFOLLOW));
	show("ro");
	umask(0);
	put("open", 0777);
	show("open");
	DO(mkdirat(dir, "sticky", 01777));
	show("sticky");
	/* set-id bits a root's write keeps (CAP_FSETID; LTP openat03) */
	umask(022);
	put("setid", 06755);
	show("setid");
	put("setid2", 0755);
	DO(fchmodat(dir, "setid2", 06755, 0));
	put("setid2", 0755);
	show("setid2");
}

static void mode_links(void)
{
	put("a", 0644);
	DO(fchownat(dir, "a", 100, 200, 0));
	DO(linkat(dir, "a", dir, "b", 0));
	show("b");
	DO(fchownat(dir, "b", 101, 201, 0));
	show("a");
	DO(renameat(dir, "a", dir, "c"));
	show("c");
	DO(unlinkat(dir, "c", 0));
	show("b");
	DO(symlinkat("b", dir, "s"));
	DO(fchownat(dir, "s", 300, 400, AT_SYMLINK_NOFOLLOW));
	DO(renameat(dir, "s", dir, "s2"));
	show("s2");
	DO(linkat(dir, "s2", dir, "s3", 0));
	show("s3");
	put("t", 0600);
	DO(renameat(dir, "t", dir, "s2")); /* replaces one link of the symlink */
	show("s2");
	show("s3");
	DO(unlinkat(dir, "s3", 0));
	DO(symlinkat("b", dir, "s4")); /* a new symlink: the host's owner */
	show("s4");
}

/* After a drop to user 1000: what that user may change. */
static void mode_user(void)
{
	put("root-file", 0644);
	DO(mkdirat(dir, "home", 0755));
	DO(fchownat(dir, "home", 1000, 1000, 0));
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		gid_t g = 50;
		if (setgroups(1, &g) || setresgid(1000, 1000, 1000) || setresuid(1000, 1000, 1000))
			printf("user: FAIL drop\n");
		put("home/mine", 0640);
		show("home/mine");
		DO(mkdirat(dir, "home/sub", 0750));
		show("home/sub");
		DO(symlinkat("mine", dir, "home/ln"));
		show("home/ln");
		DO(mknodat(dir, "home/fifo", S_IFIFO | 0600, 0));
		show("home/fifo");
		DO(mknodat(dir, "home/node", S_IFCHR | 0600, makedev(1, 3)));
		DO(fchownat(dir, "home/mine", 0, -1, 0));
		DO(fchownat(dir, "home/mine", -1, 50, 0));
		DO(fchownat(dir, "home/mine", 1000, 51, 0));
		DO(fchownat(dir, "home/mine", 1000, 1000, 0));
		DO(fchmodat(dir, "home/mine", 02755, 0));
		show("home/mine");
		DO(fchownat(dir, "home/mine", -1, 50, 0));
		DO(fchmodat(dir, "home/mine", 02755, 0)); /* not in group 50's... it is: kept */
		show("home/mine");
		/* modes that take the owner's read or write (LTP stat01) */
		put("home/wo", 0644);
		DO(fchmodat(dir, "home/wo", 0222, 0));
		show("home/wo");
		put("home/ro", 0644);
		DO(fchmodat(dir, "home/ro", 0444, 0));
		show("home/ro");
		DO(fchmodat(dir, "home/ro", 0640, 0));
		show("home/ro");
		/* O_NOATIME: the owner's (LTP open02) */
		int fd = openat(dir, "root-file", O_RDONLY | O_NOATIME);
		printf("open root-file O_NOATIME: %s\n", fd >= 0 ? "ok" : errname(errno));
		close(fd);
		fd = openat(dir, "home/ro", O_RDONLY | O_NOATIME);
		printf("open home/ro O_NOATIME: %s\n", fd >= 0 ? "ok" : errname(errno));
		close(fd);
		DO(fchmodat(dir, "root-file", 0600, 0));
		DO(fchownat(dir, "root-file", 1000, 1000, 0));
		show("root-file");
		fflush(stdout);
		_exit(0);
	}
	waitpid(p, NULL, 0);
}

/* The attribute names of f, sorted, on one line. */
static void names(const char *who)
{
	char list[1024], *v[32];
	ssize_t n = listxattr("f", list, sizeof list);
	int k = 0;
	for (ssize_t at = 0; n > 0 && at < n && k < 32; at += strlen(list + at) + 1)
		v[k++] = list + at;
	qsort(v, k, sizeof v[0], by_name);
	printf("%s listxattr f:", who);
	for (int i = 0; i < k; i++)
		printf(" %s", v[i]);
	printf("%s\n", n < 0 ? errname(errno) : "");
}

static void get(const char *who, const char *name)
{
	char val[64];
	ssize_t n = getxattr("f", name, val, sizeof val - 1);
	if (n < 0)
		printf("%s getxattr %s: %s\n", who, name, errname(errno));
	else
		printf("%s getxattr %s: %zd bytes, %.*s\n", who, name, n, n > 1 && val[0] >= ' ' ? (int)n : 0, val);
}

/* Attributes the host keeps for root: setcap's security.capability (a
 * VFS_CAP_REVISION_2 value: cap_net_raw, effective), trusted.* and other
 * security.* names, set, read, listed and removed by root, and a chown
 * dropping the capabilities. (A user's
 * view of them is the host's when zvisor runs as root: not compared.) */
static void mode_privxattr(void)
{
	static const unsigned char cap[20] = { 0x01, 0, 0, 0x02, 0x00, 0x20, 0, 0 };
	put("f", 0644);
	DO(setxattr("f", "security.capability", cap, sizeof cap, 0));
	DO(setxattr("f", "trusted.zv", "tv", 2, 0));
	DO(setxattr("f", "trusted.zv", "tw", 2, XATTR_CREATE));
	DO(setxattr("f", "security.zv", "sv", 2, 0));
	DO(setxattr("f", "user.zv", "uv", 2, 0));
	get("root", "security.capability");
	get("root", "trusted.zv");
	get("root", "security.zv");
	get("root", "trusted.none");
	names("root");
	DO(removexattr("f", "trusted.zv"));
	DO(removexattr("f", "trusted.zv"));
	DO(removexattr("f", "security.none"));
	names("root");
	DO(setxattr("f", "trusted.zv", "tv", 2, 0));
	DO(chown("f", 0, 0)); /* file capabilities go with any chown (ATTR_KILL_PRIV) */
	get("root", "security.capability");
	DO(removexattr("f", "security.capability"));
	names("root");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "--list")) {
		printf("own\nnodes\nmodes\nlinks\nuser\nprivxattr\n");
		return 0;
	}
	if (argc < 3 || (dir = open(argv[2], O_RDONLY | O_DIRECTORY)) < 0 || chdir(argv[2])) {
		printf("usage: fakefiles own|nodes|modes|links|user|privxattr DIR\n");
		return 2;
	}
	if (!strcmp(m, "own"))
		mode_own();
	else if (!strcmp(m, "nodes"))
		mode_nodes();
	else if (!strcmp(m, "modes"))
		mode_modes();
	else if (!strcmp(m, "links"))
		mode_links();
	else if (!strcmp(m, "user"))
		mode_user();
	else if (!strcmp(m, "privxattr"))
		mode_privxattr();
	else
		return 2;
	return 0;
}
