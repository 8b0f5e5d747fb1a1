/* pathcalls: the cost of one path-taking call, in a loop, for the paths
 * `zvisor run --root` treats differently (bench/fsview.py runs it natively
 * in a chroot and under zvisor, and counts zvisor's host calls per op).
 *
 *   pathcalls OP ITERATIONS     prints "OP ns_per_op=N"
 *
 * The tree (made by fsview.py under the root): /zvb/a/b/c/file, /zvb/lnk ->
 * a/b (a relative symlink), /lib -> usr/lib with /usr/lib/zvb/file (the
 * merged-/usr form ld.so and shells meet). The loop runs in /zvb/a/b/c. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

static struct stat st;
static struct statx sx;
static char buf[64];
static int dfd;

static void stat_abs(void) { syscall(SYS_newfstatat, AT_FDCWD, "/zvb/a/b/c/file", &st, 0); }
static void lstat_abs(void) { syscall(SYS_newfstatat, AT_FDCWD, "/zvb/a/b/c/file", &st, AT_SYMLINK_NOFOLLOW); }
static void statx_abs(void) { syscall(SYS_statx, AT_FDCWD, "/zvb/a/b/c/file", AT_SYMLINK_NOFOLLOW, 0x7ff, &sx); }
static void stat_dirfd(void) { syscall(SYS_newfstatat, dfd, "file", &st, AT_SYMLINK_NOFOLLOW); }
static void stat_cwd(void) { syscall(SYS_newfstatat, AT_FDCWD, "file", &st, 0); }
static void stat_rel(void) { syscall(SYS_newfstatat, AT_FDCWD, "../../../a/b/c/file", &st, 0); }
static void stat_link(void) { syscall(SYS_newfstatat, AT_FDCWD, "/zvb/lnk/c/file", &st, 0); }
static void stat_merged(void) { syscall(SYS_newfstatat, AT_FDCWD, "/lib/zvb/file", &st, 0); }
static void stat_missing(void) { syscall(SYS_newfstatat, AT_FDCWD, "/zvb/a/b/c/none", &st, 0); }
static void access_abs(void) { syscall(SYS_faccessat, AT_FDCWD, "/zvb/a/b/c/file", R_OK); }
static void open_abs(void) { close((int)syscall(SYS_openat, AT_FDCWD, "/zvb/a/b/c/file", O_RDONLY | O_CLOEXEC)); }
static void open_merged(void) { close((int)syscall(SYS_openat, AT_FDCWD, "/lib/zvb/file", O_RDONLY | O_CLOEXEC)); }
static void open_dirfd(void) { close((int)syscall(SYS_openat, dfd, "file", O_RDONLY | O_CLOEXEC)); }
static void getxattr_abs(void) { syscall(SYS_getxattr, "/zvb/a/b/c/file", "user.none", buf, sizeof buf); }
static void lgetxattr_abs(void) { syscall(SYS_lgetxattr, "/zvb/a/b/c/file", "user.none", buf, sizeof buf); }
static void readlink_abs(void) { syscall(SYS_readlinkat, AT_FDCWD, "/zvb/lnk", buf, sizeof buf); }
static void getpid_(void) { syscall(SYS_getppid); }

static const struct {
	const char *name;
	void (*fn)(void);
} ops[] = {
	{ "stat_abs", stat_abs }, { "lstat_abs", lstat_abs }, { "statx_abs", statx_abs },
	{ "stat_dirfd", stat_dirfd }, { "stat_cwd", stat_cwd }, { "stat_rel", stat_rel },
	{ "stat_link", stat_link }, { "stat_merged", stat_merged }, { "stat_missing", stat_missing },
	{ "access_abs", access_abs }, { "open_abs", open_abs }, { "open_merged", open_merged },
	{ "open_dirfd", open_dirfd }, { "getxattr_abs", getxattr_abs }, { "lgetxattr_abs", lgetxattr_abs },
	{ "readlink_abs", readlink_abs }, { "getppid", getpid_ },
};

int main(int argc, char **argv)
{
	if (argc < 3) {
		for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
			printf("%s\n", ops[i].name);
		return argc == 2 && !strcmp(argv[1], "--list") ? 0 : 2;
	}
	long n = atol(argv[2]);
	if (chdir("/zvb/a/b/c") < 0 || (dfd = open(".", O_RDONLY | O_DIRECTORY)) < 0) {
		perror("pathcalls: /zvb/a/b/c");
		return 1;
	}
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		if (strcmp(ops[i].name, argv[1]))
			continue;
		ops[i].fn(); /* warm */
		/* wall time, and the process's CPU time (steadier on a loaded machine) */
		struct timespec t0, t1, c0, c1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		for (long k = 0; k < n; k++)
			ops[i].fn();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n;
		double cpu = ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec)) / (double)n;
		printf("%s ns_per_op=%.1f cpu_ns_per_op=%.1f\n", argv[1], ns, cpu);
		return 0;
	}
	fprintf(stderr, "pathcalls: unknown op %s\n", argv[1]);
	return 2;
}
