/* --kill-on-exit (zvisor proot's, as PRoot's): when the first guest
 * process ends, the processes of the same run that are left are killed.
 *
 * Every process of the run holds one hidden file, a memfd made at start:
 * fork copies it and exec carries it (exec state field 'z'). So the run's
 * processes are those with that file open, whatever
 * became of their parents, sessions and process groups (a daemon that
 * double-forked and called setsid is found too): at the end, /proc is
 * scanned for them and each gets SIGKILL, until a scan finds none (one
 * forked during a scan is found by the next). Not found: a process that
 * the host started outside zvisor, and the run's processes when the first
 * one is killed by SIGKILL (it runs no code then). */
#include "zvisor.h"
#include "cmdline.h"
#include "sys/calls.h"
#include "sys/execstate.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <asm/stat.h>
#include <linux/fcntl.h>

struct dirent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static int kill_fd = -1; /* hidden: the run's mark */
int zv_killexit_wanted;  /* --kill-on-exit was given */

static void keep(int fd)
{
	kill_fd = zv_hide_fd(fd);
	zv_keep_hidden_fd(&kill_fd);
}

int zv_killexit_start(void)
{
	long fd = zv_sys2(__NR_memfd_create, "zvisor-run", 0);
	if (fd < 0)
		return (int)fd;
	keep((int)fd);
	return 0;
}

static int encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return kill_fd >= 0 ? zv_snprintf(buf, n, "%d", kill_fd) : -1;
}

static const char *decode(const char *s, struct zv_exec_carry *x)
{
	keep((int)zv_parse_dec(s, &s));
	return s;
}

ZV_EXEC_FIELD(killexit, 330, 'z', encode, decode);

/* Whether process pid has the file (dev, ino) open. */
static int holds(const char *pid, uint64_t dev, uint64_t ino)
{
	char path[40], buf[2048];
	zv_snprintf(path, sizeof path, "/proc/%s/fd", pid);
	long dfd = zv_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return 0;
	int found = 0;
	long n;
	while (!found && (n = zv_sys3(__NR_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long k = 0; k < n && !found;) {
			struct dirent64 *d = (struct dirent64 *)(buf + k);
			struct stat st;
			k += d->reclen;
			if (d->name[0] != '.' && zv_sys4(__NR_newfstatat, dfd, d->name, &st, 0) == 0)
				found = st.st_dev == dev && st.st_ino == ino;
		}
	}
	zv_close((int)dfd);
	return found;
}

/* One pass over /proc: SIGKILL to every other process holding the file;
 * how many there were. */
static int kill_pass(uint64_t dev, uint64_t ino, long self)
{
	char buf[4096];
	long dfd = zv_openat(AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return 0;
	int killed = 0;
	long n;
	while ((n = zv_sys3(__NR_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long k = 0; k < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + k);
			k += d->reclen;
			unsigned long pid;
			if (zv_parse_ulong(d->name, &pid) < 0 || (long)pid == self)
				continue;
			if (holds(d->name, dev, ino) && zv_sys2(__NR_kill, pid, 9 /* SIGKILL */) == 0)
				killed++;
		}
	}
	zv_close((int)dfd);
	return killed;
}

/* The first guest process ends (after the other reports: order 960). */
static void at_leader_exit(int fd, int leader)
{
	struct stat st;
	if (!leader || kill_fd < 0 || zv_sys2(__NR_fstat, kill_fd, &st) < 0)
		return;
	long self = zv_getpid();
	for (int pass = 0; pass < 100 && kill_pass(st.st_dev, st.st_ino, self); pass++)
		;
}

ZV_LAYER(killexit, 960) = { .name = "killexit", .report = at_leader_exit };
