/* /proc magic links under openat2's resolve flags and O_NOFOLLOW, as LTP's
 * openat202 and openat203 use them: /proc/self/exe (which zvisor shows as
 * the guest's executable) must open as natively, refuse as natively
 * (RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, O_NOFOLLOW: ELOOP; scoped
 * or no-xdev lookups: EXDEV), and an open_how that is too short, too long
 * or unreadable gives the host's errno. A file that opens is compared with
 * the executable itself (argv[0], run by an absolute path). NULL pointers
 * are left out: zpoline maps page 0 (readable without protection keys).
 * Then linkat of an O_TMPFILE file through /proc/self/fd/N. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "errname.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define R_NO_XDEV 0x01
#define R_NO_MAGICLINKS 0x02
#define R_NO_SYMLINKS 0x04
#define R_BENEATH 0x08
#define R_IN_ROOT 0x10

struct how { uint64_t flags, mode, resolve; };

static struct stat exe;

/* What an open returned: an errno, or which file it opened. */
static void show(const char *what, long r)
{
	if (r < 0) {
		printf("%-46s %s\n", what, errname((int)-r));
		return;
	}
	struct stat st;
	const char *kind = "a file";
	if (fstat((int)r, &st) == 0) {
		if (st.st_dev == exe.st_dev && st.st_ino == exe.st_ino)
			kind = "the executable";
		else if (S_ISLNK(st.st_mode))
			kind = "a symlink";
		else if (S_ISDIR(st.st_mode))
			kind = "a directory";
	}
	printf("%-46s opened %s\n", what, kind);
	close((int)r);
}

static long openat2(int dfd, const char *path, void *how, size_t size)
{
	long r = syscall(SYS_openat2, dfd, path, how, size);
	return r < 0 ? -errno : r;
}

static long how2(int dfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct how h = { flags, 0, resolve };
	return openat2(dfd, path, &h, sizeof h);
}

static long sys_openat(int dfd, const char *path, int flags)
{
	long r = openat(dfd, path, flags);
	return r < 0 ? -errno : r;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argv[0][0] != '/' || stat(argv[0], &exe) < 0) {
		printf("run me by an absolute path\n");
		return 2;
	}
	char tmp[] = "/tmp/zv-magic-XXXXXX";
	if (!mkdtemp(tmp) || chdir(tmp) < 0)
		return 1;
	symlink("/proc/version", "foo_symlink");

	char pidexe[64];
	snprintf(pidexe, sizeof pidexe, "/proc/%d/exe", (int)getpid());
	const char *paths[] = { "/proc/self/exe", "/proc/thread-self/exe", pidexe, "/proc/self/cwd",
				"/proc/self/fd/0", "foo_symlink", "/proc/version" };
	const char *names[] = { "/proc/self/exe", "/proc/thread-self/exe", "/proc/PID/exe",
				"/proc/self/cwd", "/proc/self/fd/0", "foo_symlink", "/proc/version" };
	struct { const char *name; uint64_t flags, resolve; } modes[] = {
		{ "O_RDONLY", O_RDONLY, 0 },
		{ "O_RDONLY|O_CREAT", O_RDONLY | O_CREAT, 0 },
		{ "O_PATH", O_PATH, 0 },
		{ "NO_MAGICLINKS", O_RDONLY, R_NO_MAGICLINKS },
		{ "NO_MAGICLINKS O_CREAT", O_RDONLY | O_CREAT, R_NO_MAGICLINKS },
		{ "NO_SYMLINKS", O_RDONLY, R_NO_SYMLINKS },
		{ "NO_XDEV", O_RDONLY, R_NO_XDEV },
		{ "BENEATH", O_RDONLY, R_BENEATH },
		{ "IN_ROOT", O_RDONLY, R_IN_ROOT },
		{ "O_NOFOLLOW", O_RDONLY | O_NOFOLLOW, 0 },
		{ "O_NOFOLLOW|O_PATH", O_PATH | O_NOFOLLOW, 0 },
		{ "O_PATH NO_MAGICLINKS", O_PATH, R_NO_MAGICLINKS },
	};
	char what[128];
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
		for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
			snprintf(what, sizeof what, "openat2 %s %s:", names[i], modes[m].name);
			show(what, how2(AT_FDCWD, paths[i], modes[m].flags, modes[m].resolve));
		}
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		snprintf(what, sizeof what, "openat %s O_NOFOLLOW:", names[i]);
		show(what, sys_openat(AT_FDCWD, paths[i], O_RDONLY | O_NOFOLLOW));
		snprintf(what, sizeof what, "openat %s:", names[i]);
		show(what, sys_openat(AT_FDCWD, paths[i], O_RDONLY));
	}

	/* relative to a /proc directory: the host's result too */
	int self = open("/proc/self", O_PATH | O_DIRECTORY);
	show("openat2 self-dir + exe NO_MAGICLINKS:", how2(self, "exe", O_RDONLY, R_NO_MAGICLINKS));
	show("openat2 self-dir + exe BENEATH:", how2(self, "exe", O_RDONLY, R_BENEATH));
	close(self);

	/* open_how itself: sizes and pointers (openat203) */
	char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(page + 4096, 4096, PROT_NONE);
	struct how *end = (struct how *)(page + 4096 - sizeof(struct how));
	*end = (struct how){ O_RDONLY, 0, R_NO_MAGICLINKS };
	show("how at a page's end:", openat2(AT_FDCWD, "/proc/self/exe", end, sizeof *end));
	show("how one byte too long, unreadable:", openat2(AT_FDCWD, "/proc/self/exe", end, sizeof *end + 1));
	show("how unreadable:", openat2(AT_FDCWD, "/proc/self/exe", page + 4096, sizeof *end));
	show("how size 0:", openat2(AT_FDCWD, "/proc/self/exe", end, 0));
	show("how size 23:", openat2(AT_FDCWD, "/proc/self/exe", end, 23));
	struct { struct how h; uint64_t pad; } padded = { { O_RDONLY, 0, 0 }, 0xdead };
	show("how with a nonzero pad:", openat2(AT_FDCWD, "/proc/self/exe", &padded, sizeof padded));
	padded.pad = 0;
	show("how with a zero pad:", openat2(AT_FDCWD, "/proc/self/exe", &padded, sizeof padded));
	padded.h.resolve = R_NO_MAGICLINKS;
	show("how with a zero pad, NO_MAGICLINKS:", openat2(AT_FDCWD, "/proc/self/exe", &padded, sizeof padded));
	show("how with bad flags:", how2(AT_FDCWD, "/proc/self/exe", O_RDONLY, 1ULL << 40));
	show("bad dfd:", how2(-1, "exe", O_RDONLY, 0));
	struct how mode_bad = { O_RDONLY, 0600, 0 };
	show("mode without O_CREAT:", openat2(AT_FDCWD, "/proc/self/exe", &mode_bad, sizeof mode_bad));

	/* an O_TMPFILE file named through its fd's link (openat03): followed,
	 * the file's own mount; not followed, the link's in /proc */
	int t = open(".", O_TMPFILE | O_RDWR, 0600);
	char fdpath[64];
	snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", t);
	int e = linkat(AT_FDCWD, fdpath, AT_FDCWD, "named", AT_SYMLINK_FOLLOW);
	printf("%-46s %s\n", "linkat /proc/self/fd/N FOLLOW:", e < 0 ? errname(errno) : "ok");
	e = linkat(AT_FDCWD, fdpath, AT_FDCWD, "named2", 0);
	printf("%-46s %s\n", "linkat /proc/self/fd/N:", e < 0 ? errname(errno) : "ok");
	close(t);
	unlink("named");
	unlink("named2");
	unlink("foo_symlink");
	chdir("/");
	rmdir(tmp);
	return 0;
}
