/* The owner stat shows of a hosted process's /proc/PID entries (and
 * task/TID's). The host's is the run's user for all of them; natively a
 * task's directories of mode 0555 (/proc/PID, task, task/TID, attr) are
 * its euid's and egid's, its other entries too while its process is
 * dumpable, else root's (fs/proc/base.c task_dump_owner). A process of
 * the run shows its virtual ones: this process's threads their own, the
 * others what they published (procids.c); one without a slot is the id
 * map's, left as it is. */
#include "fakeid/fakeid.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

/* The host's /proc, as major << 32 | minor + 1 once known (0: not yet). */
static uint64_t proc_dev;

static int on_proc(uint64_t dev)
{
	if (!proc_dev) {
		struct zv_fid_stat s;
		if (zv_fid_fstatat(AT_FDCWD, "/proc", 0, &s) < 0)
			return 0;
		proc_dev = s.dev + 1;
	}
	return dev + 1 == proc_dev;
}

static int number(const char **p)
{
	const char *e;
	long v = zv_parse_dec(*p, &e);
	if (e == *p || (*e && *e != '/') || v <= 0 || v > 0x3fffffff)
		return 0;
	*p = e;
	return (int)v;
}

/* The task a /proc path names: "/proc/N[/task/M][/...]" gives M (else N)
 * and N's process if M is there (else 0). 0 if it names none, or an entry
 * of the task's network namespace (net/...), which is not the task's. */
static int task_of(const char *p, int *tgid)
{
	if (!zv_startswith(p, "/proc/"))
		return 0;
	p += 6;
	int tid = number(&p);
	*tgid = 0;
	if (tid && zv_startswith(p, "/task/") && p[6]) {
		const char *q = p + 6;
		int t = number(&q);
		if (!t)
			return 0;
		*tgid = tid;
		tid = t;
		p = q;
	}
	return tid && !zv_startswith(p, "/net/") ? tid : 0;
}

/* What (dirfd, path, flags) is, as the host names it. */
static long host_name(int dirfd, const char *path, int flags, char *buf, size_t cap)
{
	char link[48];
	long fd = -1;
	if (!*path && (flags & AT_EMPTY_PATH)) {
		if (dirfd == AT_FDCWD)
			zv_strlcpy(link, "/proc/thread-self/cwd", sizeof link);
		else
			zv_snprintf(link, sizeof link, "/proc/thread-self/fd/%d", dirfd);
	} else {
		fd = zv_openat(dirfd, path, O_PATH | O_CLOEXEC | (flags & AT_SYMLINK_NOFOLLOW ? O_NOFOLLOW : 0), 0);
		if (fd < 0)
			return fd;
		zv_snprintf(link, sizeof link, "/proc/thread-self/fd/%ld", fd);
	}
	long n = zv_sys4(__NR_readlinkat, AT_FDCWD, link, buf, cap - 1);
	if (fd >= 0)
		zv_close((int)fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

void zv_fid_proc_owner(int dirfd, const char *path, int flags, struct zv_fid_stat *s)
{
	if (!on_proc(s->dev))
		return;
	char name[64];
	int tgid, tid, d;
	if (host_name(dirfd, path, flags, name, sizeof name) < 0 || !(tid = task_of(name, &tgid)))
		return;
	struct zv_creds c;
	struct zv_thread *t = zv_thread_find(tid);
	if (t && t->cred_valid) {
		c = t->cred;
		d = zv_fid.dumpable;
	} else if (!zv_fid_task_creds(tid, tgid, &c, &d)) {
		return;
	}
	int owner = s->mode == (S_IFDIR | 0555) || d == ZV_FID_DUMP_USER;
	s->uid = owner ? c.euid : 0;
	s->gid = owner ? c.egid : 0;
}
