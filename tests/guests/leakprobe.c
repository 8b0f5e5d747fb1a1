/* leakprobe: every path-taking system call asked, under `zvisor run --root`,
 * for files that exist only on the host and for files that exist only in
 * the root. A call must never reach the host's (it fails), and must reach
 * the root's (or fail as it natively would, e.g. EPERM for mount).
 *
 *   leakprobe --list        the calls it probes, one per line (test_fsview.py
 *                           checks them against sysent's fsview column)
 *   leakprobe HOSTDIR       probes; prints "CALL: ok" per call, or
 *                           "CALL: LEAK ..." / "CALL: FAIL ..."
 *
 * HOSTDIR (an absolute host path the root does not have) holds file
 * ("HOST"), dir/, link -> hosttarget, sock (a socket file nobody listens
 * on) and prog (an executable). The root holds /r/file ("ROOT"), /r/dir/,
 * /r/link -> roottarget, /r/prog (this program), and symlinks that lead
 * out: /r/abs -> HOSTDIR/file, /r/absdir -> HOSTDIR, /r/esc and /r/escdir
 * (the same through enough ".."). The probe runs from /r. */
#define _GNU_SOURCE
/* a verdict's text is cut to its buffer where a path is long: that is fine */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/openat2.h>
#include <linux/io_uring.h>
#include <utime.h>
#include "errname.h"

#define NR_fchmodat2 452
#define NR_statmount 457
#define NR_listmount 458
#define NR_setxattrat 463
#define NR_getxattrat 464
#define NR_listxattrat 465
#define NR_removexattrat 466
#define NR_open_tree_attr 467
#define NR_file_getattr 468
#define NR_file_setattr 469

static const char *const calls[] = {
	"open", "stat", "lstat", "access", "connect", "sendto", "sendmsg", "bind", "sendmmsg", "accept",
	"recvfrom", "recvmsg", "getsockname", "getpeername", "accept4", "recvmmsg", "execve", "execveat",
	"truncate", "getcwd", "chdir", "fchdir", "chroot", "rename", "mkdir", "rmdir", "creat", "link",
	"unlink", "symlink", "readlink", "chmod", "chown", "lchown", "utime", "mknod", "statfs",
	"pivot_root", "acct", "mount", "umount2", "swapon", "swapoff", "quotactl", "setxattr", "lsetxattr",
	"getxattr", "lgetxattr", "listxattr", "llistxattr", "removexattr", "lremovexattr", "utimes",
	"inotify_add_watch", "openat", "mkdirat", "mknodat", "fchownat", "futimesat", "newfstatat",
	"unlinkat", "renameat", "renameat2", "linkat", "symlinkat", "readlinkat", "fchmodat", "faccessat",
	"faccessat2", "utimensat", "fanotify_mark", "name_to_handle_at", "open_by_handle_at", "statx",
	"open_tree", "move_mount", "fsopen", "fsmount", "fspick", "mount_setattr", "openat2",
	"io_uring_setup", "bpf", "uselib", "fchmodat2", "statmount", "listmount", "setxattrat",
	"getxattrat", "listxattrat", "removexattrat", "open_tree_attr", "file_getattr", "file_setattr",
};

/* Paths that exist only on the host: of a file, followed (H), not followed
 * by the call (HN: no symlink of the root as last component), of a
 * directory (HD), and new names in a host-only directory (HW). */
static char h[12][600], hn[12][600], hd[12][600], hw[12][600], hsock[600], hprog[600];
static const char *H[12], *HN[12], *HD[12], *HW[12];
static int nh, nhn, nhd, nhw, problems;

static void add(const char **list, char (*store)[600], int *n, const char *fmt, const char *a)
{
	snprintf(store[*n], 600, fmt, a);
	list[*n] = store[*n];
	(*n)++;
}

/* One call's verdict: host results must all be failures, the root's one of
 * the expected. */
struct verdict {
	const char *call;
	char why[300];
};

static void leak(struct verdict *v, const char *p, long r)
{
	if (r >= 0 && !v->why[0])
		snprintf(v->why, sizeof v->why, "LEAK through %s (returned %ld)", p, r);
}

static void expect(struct verdict *v, long r, int e1, int e2)
{
	int e = r < 0 ? errno : 0;
	if (e != e1 && e != e2 && !v->why[0])
		snprintf(v->why, sizeof v->why, "FAIL in the root: %s", e ? errname(e) : "succeeded");
}

static void done(struct verdict *v)
{
	printf("%s: %s\n", v->call, v->why[0] ? v->why : "ok");
	if (v->why[0])
		problems++;
}

#define EACH(list, n) for (int i_ = 0; i_ < (n); i_++) for (const char *p = (list)[i_]; p; p = NULL)
#define V(name) struct verdict v = { name, "" }

static int rootdir_fd;

static void probe_opens(void)
{
	{ V("open"); EACH(H, nh) { int fd = open(p, O_RDONLY); leak(&v, p, fd); if (fd >= 0) close(fd); }
	  EACH(HW, nhw) leak(&v, p, open(p, O_WRONLY | O_CREAT, 0600));
	  /* O_CREAT follows a dangling symlink: into the host's directory? */
	  leak(&v, "/r/absdir/dir/new", open("/r/absdir/dir/new", O_WRONLY | O_CREAT, 0600));
	  int fd = open("/r/file", O_RDONLY); expect(&v, fd, 0, 0); if (fd >= 0) close(fd); done(&v); }
	{ V("openat"); EACH(H, nh) leak(&v, p, openat(AT_FDCWD, p, O_RDONLY));
	  leak(&v, "abs", openat(rootdir_fd, "abs", O_RDONLY));
	  leak(&v, "esc", openat(rootdir_fd, "esc", O_RDONLY));
	  leak(&v, "escdir/file", openat(rootdir_fd, "escdir/file", O_RDONLY));
	  int fd = openat(rootdir_fd, "file", O_RDONLY); expect(&v, fd, 0, 0); if (fd >= 0) close(fd); done(&v); }
	{ V("openat2"); struct open_how how = { .flags = O_RDONLY };
	  EACH(H, nh) leak(&v, p, syscall(SYS_openat2, AT_FDCWD, p, &how, sizeof how));
	  struct open_how in_root = { .flags = O_RDONLY, .resolve = RESOLVE_IN_ROOT };
	  leak(&v, "IN_ROOT abs", syscall(SYS_openat2, rootdir_fd, "abs", &in_root, sizeof in_root));
	  leak(&v, "IN_ROOT esc", syscall(SYS_openat2, rootdir_fd, "esc", &in_root, sizeof in_root));
	  long fd = syscall(SYS_openat2, AT_FDCWD, "/r/file", &how, sizeof how);
	  expect(&v, fd, 0, 0); if (fd >= 0) close(fd); done(&v); }
	{ V("creat"); EACH(HW, nhw) leak(&v, p, creat(p, 0600));
	  int fd = creat("/r/dir/new", 0600); expect(&v, fd, 0, 0); if (fd >= 0) close(fd);
	  unlink("/r/dir/new"); done(&v); }
}

/* /proc's links name the guest's paths, and nothing past the length a
 * readlink returns is written (the host's longer path must not be there). */
static void proc_links(struct verdict *v)
{
	static const char *const links[][2] = {
		{ "/proc/self/cwd", "/r" }, { "/proc/self/root", "/" }, { "/proc/self/exe", "/r/prog" },
		{ "/proc/thread-self/cwd", "/r" },
	};
	char buf[512];
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		memset(buf, 'Z', sizeof buf);
		long n = readlinkat(AT_FDCWD, links[i][0], buf, sizeof buf);
		size_t want = strlen(links[i][1]);
		int tail = 1;
		for (size_t k = n > 0 ? (size_t)n : 0; k < sizeof buf; k++)
			tail &= buf[k] == 'Z';
		if ((n != (long)want || memcmp(buf, links[i][1], want) || !tail) && !v->why[0])
			snprintf(v->why, sizeof v->why, "LEAK through %s: %.*s", links[i][0], n > 0 ? (int)n : 0, buf);
	}
	int fd = open("/r/file", O_RDONLY);
	snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
	char got[512];
	memset(got, 'Z', sizeof got);
	long n = readlink(buf, got, sizeof got);
	if ((n != 7 || memcmp(got, "/r/file", 7) || got[7] != 'Z') && !v->why[0])
		snprintf(v->why, sizeof v->why, "LEAK through %s: %.*s", buf, n > 0 ? (int)n : 0, got);
	close(fd);
	/* a removed file: its path and the host's " (deleted)" */
	fd = open("/r/dir/gone", O_RDWR | O_CREAT | O_TRUNC, 0600);
	unlink("/r/dir/gone");
	snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
	n = readlink(buf, got, sizeof got);
	if ((n != 21 || memcmp(got, "/r/dir/gone (deleted)", 21)) && !v->why[0])
		snprintf(v->why, sizeof v->why, "LEAK through %s: %.*s", buf, n > 0 ? (int)n : 0, got);
	close(fd);
}

static void probe_stats(void)
{
	struct stat st;
	struct statx sx;
	{ V("stat"); EACH(H, nh) leak(&v, p, stat(p, &st)); expect(&v, stat("/r/file", &st), 0, 0); done(&v); }
	{ V("lstat"); EACH(HN, nhn) leak(&v, p, lstat(p, &st)); expect(&v, lstat("/r/abs", &st), 0, 0); done(&v); }
	{ V("newfstatat"); EACH(H, nh) leak(&v, p, fstatat(AT_FDCWD, p, &st, 0));
	  EACH(HN, nhn) leak(&v, p, fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW));
	  leak(&v, "abs", fstatat(rootdir_fd, "abs", &st, 0));
	  expect(&v, fstatat(rootdir_fd, "file", &st, 0), 0, 0); done(&v); }
	{ V("statx"); EACH(H, nh) leak(&v, p, statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx));
	  EACH(HN, nhn) leak(&v, p, statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx));
	  expect(&v, statx(AT_FDCWD, "/r/file", 0, STATX_BASIC_STATS, &sx), 0, 0); done(&v); }
	{ V("access"); EACH(H, nh) leak(&v, p, access(p, F_OK)); expect(&v, access("/r/file", R_OK), 0, 0); done(&v); }
	{ V("faccessat"); EACH(H, nh) leak(&v, p, syscall(SYS_faccessat, AT_FDCWD, p, F_OK));
	  expect(&v, syscall(SYS_faccessat, rootdir_fd, "file", F_OK), 0, 0); done(&v); }
	{ V("faccessat2"); EACH(H, nh) leak(&v, p, syscall(SYS_faccessat2, AT_FDCWD, p, F_OK, AT_EACCESS));
	  EACH(HN, nhn) leak(&v, p, syscall(SYS_faccessat2, AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW));
	  expect(&v, syscall(SYS_faccessat2, AT_FDCWD, "/r/file", F_OK, 0), 0, 0); done(&v); }
	{ V("statfs"); struct statfs sf; EACH(H, nh) leak(&v, p, statfs(p, &sf));
	  expect(&v, statfs("/r/file", &sf), 0, 0); done(&v); }
	char buf[256];
	{ V("readlink"); EACH(HN, nhn) leak(&v, p, readlink(p, buf, sizeof buf));
	  leak(&v, "host link", readlink(hn[0], buf, sizeof buf));
	  long n = readlink("/r/link", buf, sizeof buf); expect(&v, n, 0, 0);
	  if (n >= 0 && (n != 10 || memcmp(buf, "roottarget", 10)))
	  	snprintf(v.why, sizeof v.why, "FAIL: /r/link reads %.*s", (int)n, buf);
	  done(&v); }
	{ V("readlinkat"); EACH(HN, nhn) leak(&v, p, readlinkat(AT_FDCWD, p, buf, sizeof buf));
	  expect(&v, readlinkat(rootdir_fd, "link", buf, sizeof buf), 0, 0);
	  /* "" names the fd itself: an O_PATH|O_NOFOLLOW fd of a symlink */
	  int lfd = open("/r/link", O_PATH | O_NOFOLLOW), xfd = open("/proc/self/exe", O_PATH | O_NOFOLLOW);
	  long n = readlinkat(lfd, "", buf, sizeof buf);
	  if (n != 10 || memcmp(buf, "roottarget", 10))
	  	snprintf(v.why, sizeof v.why, "FAIL: readlinkat(fd of /r/link, \"\") reads %.*s", n > 0 ? (int)n : 0, buf);
	  n = readlinkat(xfd, "", buf, sizeof buf);
	  if ((n != 7 || memcmp(buf, "/r/prog", 7)) && !v.why[0])
	  	snprintf(v.why, sizeof v.why, "LEAK through readlinkat(fd of /proc/self/exe, \"\"): %.*s",
			 n > 0 ? (int)n : 0, buf);
	  expect(&v, readlinkat(rootdir_fd, "", buf, sizeof buf), ENOENT, ENOENT);
	  close(lfd); close(xfd);
	  proc_links(&v);
	  done(&v); }
}

/* Calls that change things: the test checks HOSTDIR is as it was after. */
static void probe_changes(void)
{
	{ V("mkdir"); EACH(HW, nhw) leak(&v, p, mkdir(p, 0700));
	  expect(&v, mkdir("/r/dir/d", 0700), 0, 0); rmdir("/r/dir/d"); done(&v); }
	{ V("mkdirat"); EACH(HW, nhw) leak(&v, p, mkdirat(AT_FDCWD, p, 0700));
	  leak(&v, "absdir/new", mkdirat(rootdir_fd, "absdir/new", 0700));
	  expect(&v, mkdirat(rootdir_fd, "dir/d", 0700), 0, 0); rmdir("/r/dir/d"); done(&v); }
	{ V("mknod"); EACH(HW, nhw) leak(&v, p, mknod(p, S_IFIFO | 0600, 0));
	  expect(&v, mknod("/r/dir/fifo", S_IFIFO | 0600, 0), 0, 0); unlink("/r/dir/fifo"); done(&v); }
	{ V("mknodat"); EACH(HW, nhw) leak(&v, p, mknodat(AT_FDCWD, p, S_IFIFO | 0600, 0));
	  expect(&v, mknodat(rootdir_fd, "dir/fifo", S_IFIFO | 0600, 0), 0, 0); unlink("/r/dir/fifo"); done(&v); }
	{ V("rmdir"); EACH(HD, nhd) leak(&v, p, rmdir(p));
	  mkdir("/r/dir/d", 0700); expect(&v, rmdir("/r/dir/d"), 0, 0); done(&v); }
	{ V("unlink"); EACH(HN, nhn) leak(&v, p, unlink(p));
	  close(creat("/r/dir/x", 0600)); expect(&v, unlink("/r/dir/x"), 0, 0); done(&v); }
	{ V("unlinkat"); EACH(HN, nhn) leak(&v, p, unlinkat(AT_FDCWD, p, 0));
	  EACH(HD, nhd) leak(&v, p, unlinkat(AT_FDCWD, p, AT_REMOVEDIR));
	  close(creat("/r/dir/x", 0600)); expect(&v, unlinkat(rootdir_fd, "dir/x", 0), 0, 0); done(&v); }
	{ V("rename"); EACH(HN, nhn) leak(&v, p, rename(p, "/r/dir/got"));
	  close(creat("/r/dir/x", 0600)); EACH(HW, nhw) leak(&v, p, rename("/r/dir/x", p));
	  expect(&v, rename("/r/dir/x", "/r/dir/y"), 0, 0); unlink("/r/dir/y"); done(&v); }
	{ V("renameat"); EACH(HN, nhn) leak(&v, p, renameat(AT_FDCWD, p, AT_FDCWD, "/r/dir/got"));
	  close(creat("/r/dir/x", 0600)); EACH(HW, nhw) leak(&v, p, renameat(AT_FDCWD, "/r/dir/x", AT_FDCWD, p));
	  expect(&v, renameat(rootdir_fd, "dir/x", rootdir_fd, "dir/y"), 0, 0); unlink("/r/dir/y"); done(&v); }
	{ V("renameat2"); EACH(HN, nhn) leak(&v, p, renameat2(AT_FDCWD, p, AT_FDCWD, "/r/dir/got", 0));
	  close(creat("/r/dir/x", 0600)); EACH(HW, nhw) leak(&v, p, renameat2(AT_FDCWD, "/r/dir/x", AT_FDCWD, p, RENAME_NOREPLACE));
	  expect(&v, renameat2(AT_FDCWD, "/r/dir/x", AT_FDCWD, "/r/dir/y", RENAME_NOREPLACE), 0, 0);
	  unlink("/r/dir/y"); done(&v); }
	{ V("link"); EACH(HN, nhn) leak(&v, p, link(p, "/r/dir/got"));
	  EACH(HW, nhw) leak(&v, p, link("/r/file", p));
	  expect(&v, link("/r/file", "/r/dir/hard"), 0, 0); unlink("/r/dir/hard"); done(&v); }
	{ V("linkat"); EACH(H, nh) leak(&v, p, linkat(AT_FDCWD, p, AT_FDCWD, "/r/dir/got", AT_SYMLINK_FOLLOW));
	  EACH(HW, nhw) leak(&v, p, linkat(AT_FDCWD, "/r/file", AT_FDCWD, p, 0));
	  expect(&v, linkat(rootdir_fd, "file", rootdir_fd, "dir/hard", 0), 0, 0); unlink("/r/dir/hard"); done(&v); }
	{ V("symlink"); EACH(HW, nhw) leak(&v, p, symlink("x", p));
	  expect(&v, symlink("x", "/r/dir/sl"), 0, 0); unlink("/r/dir/sl"); done(&v); }
	{ V("symlinkat"); EACH(HW, nhw) leak(&v, p, symlinkat("x", AT_FDCWD, p));
	  expect(&v, symlinkat("x", rootdir_fd, "dir/sl"), 0, 0); unlink("/r/dir/sl"); done(&v); }
	{ V("chmod"); EACH(H, nh) leak(&v, p, chmod(p, 0600)); expect(&v, chmod("/r/file", 0644), 0, 0); done(&v); }
	{ V("fchmodat"); EACH(H, nh) leak(&v, p, fchmodat(AT_FDCWD, p, 0600, 0));
	  expect(&v, fchmodat(rootdir_fd, "file", 0644, 0), 0, 0); done(&v); }
	{ V("fchmodat2"); long r = syscall(NR_fchmodat2, AT_FDCWD, "/r/file", 0644, 0);
	  if (r < 0 && errno == ENOSYS) { done(&v); } else {
	  EACH(H, nh) leak(&v, p, syscall(NR_fchmodat2, AT_FDCWD, p, 0600, 0));
	  EACH(HN, nhn) leak(&v, p, syscall(NR_fchmodat2, AT_FDCWD, p, 0600, AT_SYMLINK_NOFOLLOW));
	  expect(&v, r, 0, 0); done(&v); } }
	{ V("chown"); EACH(H, nh) leak(&v, p, chown(p, -1, -1)); expect(&v, chown("/r/file", -1, -1), 0, 0); done(&v); }
	{ V("lchown"); EACH(HN, nhn) leak(&v, p, lchown(p, -1, -1)); expect(&v, lchown("/r/abs", -1, -1), 0, 0); done(&v); }
	{ V("fchownat"); EACH(H, nh) leak(&v, p, fchownat(AT_FDCWD, p, -1, -1, 0));
	  EACH(HN, nhn) leak(&v, p, fchownat(AT_FDCWD, p, -1, -1, AT_SYMLINK_NOFOLLOW));
	  expect(&v, fchownat(rootdir_fd, "file", -1, -1, 0), 0, 0); done(&v); }
	{ V("utime"); EACH(H, nh) leak(&v, p, utime(p, NULL)); expect(&v, utime("/r/file", NULL), 0, 0); done(&v); }
	{ V("utimes"); EACH(H, nh) leak(&v, p, utimes(p, NULL)); expect(&v, utimes("/r/file", NULL), 0, 0); done(&v); }
	{ V("futimesat"); EACH(H, nh) leak(&v, p, syscall(SYS_futimesat, AT_FDCWD, p, NULL));
	  expect(&v, syscall(SYS_futimesat, rootdir_fd, "file", NULL), 0, 0); done(&v); }
	{ V("utimensat"); EACH(H, nh) leak(&v, p, utimensat(AT_FDCWD, p, NULL, 0));
	  EACH(HN, nhn) leak(&v, p, utimensat(AT_FDCWD, p, NULL, AT_SYMLINK_NOFOLLOW));
	  expect(&v, utimensat(rootdir_fd, "file", NULL, 0), 0, 0); done(&v); }
	{ V("truncate"); EACH(H, nh) leak(&v, p, truncate(p, 0));
	  expect(&v, truncate("/r/dir/t", 0), ENOENT, 0); done(&v); }
}

static void probe_xattrs(void)
{
	char buf[256];
	/* the root's file may or may not take user xattrs: either is native */
	{ V("setxattr"); EACH(H, nh) leak(&v, p, setxattr(p, "user.zv", "1", 1, 0));
	  expect(&v, setxattr("/r/file", "user.zv", "1", 1, 0), 0, ENOTSUP); done(&v); }
	{ V("lsetxattr"); EACH(HN, nhn) leak(&v, p, lsetxattr(p, "user.zv", "1", 1, 0));
	  expect(&v, lsetxattr("/r/file", "user.zv", "1", 1, 0), 0, ENOTSUP); done(&v); }
	{ V("getxattr"); EACH(H, nh) leak(&v, p, getxattr(p, "user.zv", buf, sizeof buf));
	  expect(&v, getxattr("/r/file", "user.zv", buf, sizeof buf), 0, ENOTSUP); done(&v); }
	{ V("lgetxattr"); EACH(HN, nhn) leak(&v, p, lgetxattr(p, "user.zv", buf, sizeof buf));
	  expect(&v, lgetxattr("/r/file", "user.zv", buf, sizeof buf), 0, ENOTSUP); done(&v); }
	{ V("listxattr"); EACH(H, nh) leak(&v, p, listxattr(p, buf, sizeof buf));
	  expect(&v, listxattr("/r/file", buf, sizeof buf), 0, ENOTSUP); done(&v); }
	{ V("llistxattr"); EACH(HN, nhn) leak(&v, p, llistxattr(p, buf, sizeof buf));
	  expect(&v, llistxattr("/r/file", buf, sizeof buf), 0, ENOTSUP); done(&v); }
	{ V("removexattr"); EACH(H, nh) leak(&v, p, removexattr(p, "user.zv"));
	  expect(&v, removexattr("/r/file", "user.zv"), 0, ENOTSUP); done(&v); }
	{ V("lremovexattr"); EACH(HN, nhn) leak(&v, p, lremovexattr(p, "user.zv"));
	  expect(&v, lremovexattr("/r/file", "user.zv"), ENODATA, ENOTSUP); done(&v); }
	struct { uint64_t value; uint32_t size, flags; } xa = { (uintptr_t)"1", 1, 0 };
	const char *const nm[4] = { "setxattrat", "getxattrat", "listxattrat", "removexattrat" };
	for (int k = 0; k < 4; k++) {
		V(nm[k]);
		long nr = NR_setxattrat + k;
		xa.value = k == 1 ? (uintptr_t)buf : (uintptr_t)"1";
		xa.size = k == 1 ? sizeof buf : 1;
		long r = k == 2 ? syscall(nr, AT_FDCWD, "/r/file", 0, buf, sizeof buf)
			: syscall(nr, AT_FDCWD, "/r/file", 0, "user.zv", &xa, sizeof xa);
		if (r < 0 && errno == ENOSYS) {
			done(&v);
			continue;
		}
		expect(&v, r, 0, errno == ENOTSUP || errno == ENODATA ? errno : 0);
		EACH(H, nh) leak(&v, p, k == 2 ? syscall(nr, AT_FDCWD, p, 0, buf, sizeof buf)
					     : syscall(nr, AT_FDCWD, p, 0, "user.zv", &xa, sizeof xa));
		EACH(HN, nhn) leak(&v, p, k == 2 ? syscall(nr, AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, buf, sizeof buf)
					       : syscall(nr, AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, "user.zv", &xa, sizeof xa));
		done(&v);
	}
	uint32_t fa[8] = { 0 }; /* struct file_attr */
	for (int k = 0; k < 2; k++) {
		V(k ? "file_setattr" : "file_getattr");
		long nr = k ? NR_file_setattr : NR_file_getattr;
		long r = syscall(nr, AT_FDCWD, "/r/file", fa, sizeof fa, 0);
		if (r < 0 && errno == ENOSYS) {
			done(&v);
			continue;
		}
		EACH(H, nh) leak(&v, p, syscall(nr, AT_FDCWD, p, fa, sizeof fa, 0));
		done(&v);
	}
}

/* Directories: chdir, fchdir, getcwd, chroot, inotify, fanotify. */
static void probe_dirs(void)
{
	char buf[600];
	{ V("chdir"); EACH(HD, nhd) leak(&v, p, chdir(p)); expect(&v, chdir("/r/dir"), 0, 0); chdir("/r"); done(&v); }
	{
		V("getcwd");
		if (!getcwd(buf, sizeof buf) || strcmp(buf, "/r"))
			snprintf(v.why, sizeof v.why, "FAIL: getcwd says %s", buf);
		done(&v);
	}
	{ V("fchdir"); int fd = open("/r/dir", O_RDONLY | O_DIRECTORY); expect(&v, fchdir(fd), 0, 0);
	  if (!getcwd(buf, sizeof buf) || strcmp(buf, "/r/dir"))
	  	snprintf(v.why, sizeof v.why, "FAIL: getcwd after fchdir says %s", buf);
	  close(fd); chdir("/r"); done(&v); }
	{ V("chroot"); pid_t c = fork();
	  if (c == 0) {
		int bad = 0;
		for (int i = 0; i < nhd; i++)
			bad |= chroot(HD[i]) == 0;
		if (chroot("/r/dir") < 0)
			_exit(bad ? 3 : errno == EPERM ? 0 : 2);
		/* inside: ".." stops at the new root; the old root is out of sight */
		bad |= open("/../file", O_RDONLY) >= 0 || open("../../r/file", O_RDONLY) >= 0;
		_exit(bad ? 3 : 0);
	  }
	  int st; waitpid(c, &st, 0);
	  if (WEXITSTATUS(st) == 3) snprintf(v.why, sizeof v.why, "LEAK through chroot");
	  else if (WEXITSTATUS(st)) snprintf(v.why, sizeof v.why, "FAIL: chroot /r/dir");
	  done(&v); }
	{ V("inotify_add_watch"); int in = inotify_init1(IN_CLOEXEC);
	  EACH(H, nh) leak(&v, p, inotify_add_watch(in, p, IN_ALL_EVENTS));
	  expect(&v, inotify_add_watch(in, "/r/file", IN_ALL_EVENTS), 0, 0); close(in); done(&v); }
	{ V("fanotify_mark"); int fan = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID, O_RDONLY);
	  if (fan >= 0) {
		EACH(H, nh) leak(&v, p, fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, p));
		expect(&v, fanotify_mark(fan, FAN_MARK_ADD, FAN_CLOSE_WRITE, AT_FDCWD, "/r/file"), 0, 0);
		close(fan);
	  }
	  done(&v); }
	{ V("name_to_handle_at"); struct { unsigned bytes; int type; unsigned char f[128]; } fh; int mnt;
	  EACH(H, nh) { fh.bytes = 128; leak(&v, p, name_to_handle_at(AT_FDCWD, p, (void *)&fh, &mnt, AT_SYMLINK_FOLLOW)); }
	  fh.bytes = 128; long r = name_to_handle_at(AT_FDCWD, "/r/file", (void *)&fh, &mnt, 0);
	  expect(&v, r, 0, EOPNOTSUPP);
	  struct verdict w = { "open_by_handle_at", "" };
	  /* refused: a handle names a file without a path, the host's too */
	  expect(&w, open_by_handle_at(rootdir_fd, (void *)&fh, O_RDONLY), EPERM, 0);
	  done(&v); done(&w); }
}

/* Mounts and the like: refused as an unprivileged user gets them. */
static void probe_refused(void)
{
	{ V("mount"); EACH(HD, nhd) leak(&v, p, mount("none", p, "tmpfs", 0, NULL));
	  expect(&v, mount("none", "/r/dir", "tmpfs", 0, NULL), EPERM, 0); done(&v); }
	{ V("umount2"); EACH(HD, nhd) leak(&v, p, umount2(p, MNT_DETACH)); expect(&v, umount2("/r/dir", 0), EPERM, 0); done(&v); }
	{ V("pivot_root"); EACH(HD, nhd) leak(&v, p, syscall(SYS_pivot_root, p, p));
	  expect(&v, syscall(SYS_pivot_root, "/r/dir", "/r/dir"), EPERM, 0); done(&v); }
	{ V("swapon"); EACH(H, nh) leak(&v, p, syscall(SYS_swapon, p, 0)); expect(&v, syscall(SYS_swapon, "/r/file", 0), EPERM, 0); done(&v); }
	{ V("swapoff"); EACH(H, nh) leak(&v, p, syscall(SYS_swapoff, p)); expect(&v, syscall(SYS_swapoff, "/r/file"), EPERM, 0); done(&v); }
	{ V("acct"); EACH(H, nh) leak(&v, p, acct(p)); expect(&v, acct("/r/file"), EPERM, 0); done(&v); }
	{ V("quotactl"); EACH(H, nh) leak(&v, p, syscall(SYS_quotactl, 0x800002 /* Q_SYNC */, p, 0, NULL)); done(&v); }
	{ V("move_mount"); EACH(HD, nhd) leak(&v, p, syscall(SYS_move_mount, AT_FDCWD, p, AT_FDCWD, "/r/dir", 0x4));
	  expect(&v, syscall(SYS_move_mount, AT_FDCWD, "/r/dir", AT_FDCWD, "/r/dir", 0), EPERM, 0); done(&v); }
	{ V("fsopen"); expect(&v, syscall(SYS_fsopen, "tmpfs", 0), EPERM, 0); done(&v); }
	{ V("fsmount"); expect(&v, syscall(SYS_fsmount, -1, 0, 0), EPERM, 0); done(&v); }
	{ V("fspick"); EACH(HD, nhd) leak(&v, p, syscall(SYS_fspick, AT_FDCWD, p, 0));
	  expect(&v, syscall(SYS_fspick, AT_FDCWD, "/r/dir", 0), EPERM, 0); done(&v); }
	{ V("mount_setattr"); EACH(HD, nhd) leak(&v, p, syscall(SYS_mount_setattr, AT_FDCWD, p, 0, NULL, 0));
	  expect(&v, syscall(SYS_mount_setattr, AT_FDCWD, "/r/dir", 0, NULL, 0), EPERM, 0); done(&v); }
	{ V("open_tree"); EACH(H, nh) leak(&v, p, syscall(SYS_open_tree, AT_FDCWD, p, 0));
	  long fd = syscall(SYS_open_tree, AT_FDCWD, "/r/file", 0); expect(&v, fd, 0, 0);
	  expect(&v, syscall(SYS_open_tree, AT_FDCWD, "/r/dir", 1 /* OPEN_TREE_CLONE */), EPERM, 0);
	  if (fd >= 0)
		close(fd);
	  done(&v); }
	{ V("open_tree_attr"); long fd = syscall(NR_open_tree_attr, AT_FDCWD, "/r/file", 0, NULL, 0);
	  if (!(fd < 0 && errno == ENOSYS)) { EACH(H, nh) leak(&v, p, syscall(NR_open_tree_attr, AT_FDCWD, p, 0, NULL, 0));
	  	if (fd >= 0) close(fd); }
	  done(&v); }
	{ V("statmount"); expect(&v, syscall(NR_statmount, NULL, NULL, 0, 0), ENOSYS, 0); done(&v); }
	{ V("listmount"); expect(&v, syscall(NR_listmount, NULL, NULL, 0, 0), ENOSYS, 0); done(&v); }
	{ V("uselib"); EACH(H, nh) leak(&v, p, syscall(SYS_uselib, p)); expect(&v, syscall(SYS_uselib, "/r/file"), ENOSYS, 0); done(&v); }
	{ V("bpf"); union { uint64_t pathname; uint32_t w[4]; } attr = { (uintptr_t)h[0] };
	  leak(&v, h[0], syscall(SYS_bpf, 7 /* BPF_OBJ_GET */, &attr, 16));
	  expect(&v, syscall(SYS_bpf, 7, &attr, 16), EPERM, 0); done(&v); }
	{ V("io_uring_setup"); struct io_uring_params par; memset(&par, 0, sizeof par);
	  long fd = syscall(SYS_io_uring_setup, 4, &par);
	  /* refused while a root is set: IORING_OP_OPENAT would open the host's */
	  expect(&v, fd, ENOSYS, 0); if (fd >= 0) close(fd); done(&v); }
}

static void sun_of(struct sockaddr_un *a, const char *p)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "%s", p);
}

static int same_name(const struct sockaddr_un *a, socklen_t len, const char *want)
{
	return a->sun_family == AF_UNIX && len == offsetof(struct sockaddr_un, sun_path) + strlen(want) + 1 &&
	       !strcmp(a->sun_path, want);
}

/* AF_UNIX: a host socket file (HOSTDIR/sock) would answer ECONNREFUSED;
 * the view has none (ENOENT). Addresses come back as the guest's. */
static void probe_sockets(void)
{
	struct sockaddr_un a, got;
	socklen_t len;
	int s, c, d;
	{ V("bind"); s = socket(AF_UNIX, SOCK_STREAM, 0);
	  sun_of(&a, hsock); leak(&v, hsock, bind(s, (void *)&a, sizeof a));
	  unlink("/r/dir/srv"); sun_of(&a, "/r/dir/srv");
	  expect(&v, bind(s, (void *)&a, sizeof a), 0, 0); listen(s, 4); done(&v); }
	{ V("getsockname"); memset(&got, 0, sizeof got); len = sizeof got; getsockname(s, (void *)&got, &len);
	  if (!same_name(&got, len, "/r/dir/srv")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  done(&v); }
	{ V("connect"); c = socket(AF_UNIX, SOCK_STREAM, 0); sun_of(&a, hsock);
	  if (connect(c, (void *)&a, sizeof a) == 0 || errno == ECONNREFUSED) snprintf(v.why, sizeof v.why, "LEAK through %s", hsock);
	  struct sockaddr_un cl; sun_of(&cl, "/r/dir/cli"); unlink("/r/dir/cli"); bind(c, (void *)&cl, sizeof cl);
	  sun_of(&a, "/r/dir/srv"); expect(&v, connect(c, (void *)&a, sizeof a), 0, 0); done(&v); }
	{ V("getpeername"); memset(&got, 0, sizeof got); len = sizeof got; getpeername(c, (void *)&got, &len);
	  if (!same_name(&got, len, "/r/dir/srv")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  done(&v); }
	{ V("accept"); memset(&got, 0, sizeof got); len = sizeof got; d = accept(s, (void *)&got, &len);
	  expect(&v, d, 0, 0); if (!same_name(&got, len, "/r/dir/cli")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  close(d); done(&v); }
	{ V("accept4"); int c2 = socket(AF_UNIX, SOCK_STREAM, 0); struct sockaddr_un cl; sun_of(&cl, "/r/dir/cli2");
	  unlink("/r/dir/cli2"); bind(c2, (void *)&cl, sizeof cl); connect(c2, (void *)&a, sizeof a);
	  memset(&got, 0, sizeof got); len = sizeof got; d = accept4(s, (void *)&got, &len, SOCK_CLOEXEC);
	  expect(&v, d, 0, 0); if (!same_name(&got, len, "/r/dir/cli2")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  close(d); close(c2); unlink("/r/dir/cli2"); done(&v); }
	close(c); close(s); unlink("/r/dir/srv"); unlink("/r/dir/cli");
	/* datagrams */
	int r = socket(AF_UNIX, SOCK_DGRAM, 0), w = socket(AF_UNIX, SOCK_DGRAM, 0);
	unlink("/r/dir/dg"); unlink("/r/dir/dgw");
	sun_of(&a, "/r/dir/dg"); bind(r, (void *)&a, sizeof a);
	struct sockaddr_un wa; sun_of(&wa, "/r/dir/dgw"); bind(w, (void *)&wa, sizeof wa);
	struct sockaddr_un ha; sun_of(&ha, hsock);
	{ V("sendto"); if (sendto(w, "x", 1, 0, (void *)&ha, sizeof ha) >= 0 || errno == ECONNREFUSED)
	  	snprintf(v.why, sizeof v.why, "LEAK through %s", hsock);
	  expect(&v, sendto(w, "x", 1, 0, (void *)&a, sizeof a), 0, 0); done(&v); }
	{ V("recvfrom"); char b; memset(&got, 0, sizeof got); len = sizeof got; long n = recvfrom(r, &b, 1, 0, (void *)&got, &len);
	  expect(&v, n, 0, 0); if (!same_name(&got, len, "/r/dir/dgw")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  done(&v); }
	{ V("sendmsg"); struct iovec io = { "y", 1 }; struct msghdr m = { .msg_name = &ha, .msg_namelen = sizeof ha, .msg_iov = &io, .msg_iovlen = 1 };
	  if (sendmsg(w, &m, 0) >= 0 || errno == ECONNREFUSED) snprintf(v.why, sizeof v.why, "LEAK through %s", hsock);
	  m.msg_name = &a; expect(&v, sendmsg(w, &m, 0), 0, 0); done(&v); }
	{ V("recvmsg"); char b; struct iovec io = { &b, 1 }; struct msghdr m = { .msg_name = &got, .msg_namelen = sizeof got, .msg_iov = &io, .msg_iovlen = 1 };
	  expect(&v, recvmsg(r, &m, 0), 0, 0);
	  if (!same_name(&got, m.msg_namelen, "/r/dir/dgw")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  done(&v); }
	{ V("sendmmsg"); struct iovec io = { "z", 1 }; struct mmsghdr mm = { .msg_hdr = { .msg_name = &ha, .msg_namelen = sizeof ha, .msg_iov = &io, .msg_iovlen = 1 } };
	  if (sendmmsg(w, &mm, 1, 0) == 1) snprintf(v.why, sizeof v.why, "LEAK through %s", hsock);
	  mm.msg_hdr.msg_name = &a; expect(&v, sendmmsg(w, &mm, 1, 0), 0, 0);
	  if (mm.msg_len != 1)
		snprintf(v.why, sizeof v.why, "FAIL: msg_len %u", mm.msg_len);
	  done(&v); }
	{ V("recvmmsg"); char b; struct iovec io = { &b, 1 }; struct mmsghdr mm = { .msg_hdr = { .msg_name = &got, .msg_namelen = sizeof got, .msg_iov = &io, .msg_iovlen = 1 } };
	  expect(&v, recvmmsg(r, &mm, 1, 0, NULL), 0, 0);
	  if (!same_name(&got, mm.msg_hdr.msg_namelen, "/r/dir/dgw")) snprintf(v.why, sizeof v.why, "FAIL: named %s", got.sun_path);
	  done(&v); }
	close(r); close(w); unlink("/r/dir/dg"); unlink("/r/dir/dgw");
}

static void probe_exec(char **argv)
{
	char *const args[] = { "leakprobe", "--exec-ok", NULL }, *const env[] = { NULL };
	{ V("execve");
	  for (int i = 0; i < nh + 1; i++) {
		const char *p = i < nh ? H[i] : hprog;
		pid_t c = fork();
		if (c == 0) {
			execve(p, args, env);
			_exit(errno == ENOENT || errno == EACCES ? 0 : 1);
		}
		int st; waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			snprintf(v.why, sizeof v.why, "LEAK through %s", p);
	  }
	  pid_t c = fork();
	  if (c == 0) { execve("/r/prog", args, env); _exit(1); }
	  int st; waitpid(c, &st, 0);
	  if (!WIFEXITED(st) || WEXITSTATUS(st) != 42) snprintf(v.why, sizeof v.why, "FAIL: exec of /r/prog");
	  done(&v); }
	{ V("execveat");
	  pid_t c = fork();
	  if (c == 0) {
		execveat(AT_FDCWD, hprog, args, env, 0);
		execveat(rootdir_fd, "../../../../../../../../../../..", args, env, 0);
		_exit(errno == ENOENT || errno == EACCES ? 0 : 1);
	  }
	  int st; waitpid(c, &st, 0);
	  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) snprintf(v.why, sizeof v.why, "LEAK through %s", hprog);
	  c = fork();
	  if (c == 0) { execveat(rootdir_fd, "prog", args, env, 0); _exit(1); }
	  waitpid(c, &st, 0);
	  if (!WIFEXITED(st) || WEXITSTATUS(st) != 42) snprintf(v.why, sizeof v.why, "FAIL: execveat of prog in /r");
	  done(&v); }
	(void)argv;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--exec-ok"))
		return 42;
	if (argc < 2 || !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
			printf("%s\n", calls[i]);
		return 0;
	}
	const char *hdir = argv[1];
	char dots[600];
	snprintf(dots, sizeof dots, "../../../../../../../../../../../..%s", hdir);
	/* host-only file, followed */
	add(H, h, &nh, "%s/file", hdir);
	add(H, h, &nh, "%s", "/r/abs");
	add(H, h, &nh, "%s", "/r/esc");
	add(H, h, &nh, "%s", "/r/absdir/file");
	add(H, h, &nh, "%s", "/r/escdir/file");
	add(H, h, &nh, "/proc/self/root%s/file", hdir);
	add(H, h, &nh, "/r/../../../../../..%s/file", hdir);
	add(H, h, &nh, "%s/file", dots);
	add(H, h, &nh, "/proc/self/cwd/%s/file", dots);
	/* not followed: no symlink of the root as the last component */
	add(HN, hn, &nhn, "%s/link", hdir);
	add(HN, hn, &nhn, "%s/file", hdir);
	add(HN, hn, &nhn, "%s", "/r/absdir/file");
	add(HN, hn, &nhn, "%s", "/r/escdir/link");
	add(HN, hn, &nhn, "/proc/self/root%s/file", hdir);
	add(HN, hn, &nhn, "%s/file", dots);
	add(HD, hd, &nhd, "%s/dir", hdir);
	add(HD, hd, &nhd, "%s", "/r/absdir/dir");
	add(HD, hd, &nhd, "%s", "/r/escdir/dir");
	add(HD, hd, &nhd, "%s/dir", dots);
	add(HW, hw, &nhw, "%s/dir/new", hdir);
	add(HW, hw, &nhw, "%s", "/r/absdir/dir/new");
	add(HW, hw, &nhw, "%s", "/r/escdir/dir/new");
	add(HW, hw, &nhw, "%s/dir/new", dots);
	snprintf(hsock, sizeof hsock, "%s/sock", hdir);
	snprintf(hprog, sizeof hprog, "%s/prog", hdir);
	if (chdir("/r") < 0 || (rootdir_fd = open("/r", O_RDONLY | O_DIRECTORY)) < 0) {
		printf("FAIL: no /r in the root\n");
		return 1;
	}
	probe_opens();
	probe_stats();
	probe_changes();
	probe_xattrs();
	probe_dirs();
	probe_refused();
	probe_sockets();
	probe_exec(argv);
	printf("%d problems\n", problems);
	return problems != 0;
}
