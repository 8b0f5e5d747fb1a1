/* getdents of /proc and of a task directory (/proc/PID/task) in a restored
 * process: the entries named by the host's ids of a restored tree's
 * processes and threads take the ids the program knows (cr/pids.c), as
 * its paths do; a host process whose pid is one of those ids is left out
 * (the program's /proc/ID is the tree's). A name may grow: what no longer
 * fits the guest's buffer is read again by the next call (the directory's
 * offset set back to the last entry given). Other directories, and
 * listings that name no such id, pass as the host gives them. */
#include "zvisor.h"
#include "cr/cr.h"
#include "sys/layer.h"
#include "lib/kmem.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <asm/unistd_64.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/errno.h>

#define RECLEN 16
#define OFF 8

/* An entry's name offset: linux_dirent64's, or linux_dirent's. */
static size_t name_at(int v64) { return v64 ? 19 : 18; }

/* The id an entry's name is (digits only, no leading 0), or -1. */
static long id_of(const char *s)
{
	long x = 0;
	if (*s < '1' || *s > '9')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > 1 << 24)
			return -1;
		x = x * 10 + (*s - '0');
	}
	return x;
}

/* What the program sees for the host's entry id x: its id; 0 to leave it
 * out; x itself. */
static long shown(long x)
{
	long g = zv_cr_guest_id(x);
	if (g != x)
		return g;
	return zv_cr_host_id(x) != x ? 0 : x;
}

static int any_shown_other(const char *buf, long n, int v64)
{
	for (long off = 0; off < n; off += *(const unsigned short *)(buf + off + RECLEN)) {
		long x = id_of(buf + off + name_at(v64));
		if (x > 0 && shown(x) != x)
			return 1;
	}
	return 0;
}

/* Whether fd is /proc or a /proc/PID/task directory. */
static int pid_dir(int fd)
{
	char link[64], path[32];
	zv_snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	long n = zv_sys4(__NR_readlinkat, AT_FDCWD, path, link, sizeof link - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	if (!zv_strcmp(link, "/proc"))
		return 1;
	const char *s = link + 6;
	if (!zv_startswith(link, "/proc/"))
		return 0;
	while (*s >= '0' && *s <= '9')
		s++;
	return s > link + 6 && !zv_strcmp(s, "/task");
}

/* The host's n bytes (a copy in kernel memory) into the guest's buffer of
 * size cap, renamed: the bytes given (0: every entry was left out). If
 * one does not fit, *resume is the directory offset after the last entry
 * taken (-1 if none was: the buffer is too small). */
static long rename_all(const char *in, long n, char *out, size_t cap, int v64, long *resume)
{
	size_t w = 0, na = name_at(v64);
	long taken = -1;
	*resume = 0;
	for (long off = 0; off < n;) {
		const char *e = in + off;
		unsigned short reclen = *(const unsigned short *)(e + RECLEN);
		off += reclen;
		long x = id_of(e + na), y = x > 0 ? shown(x) : x;
		char name[24];
		const char *nm = e + na;
		if (y != x) {
			zv_snprintf(name, sizeof name, "%ld", y);
			nm = name;
		}
		size_t len = zv_strlen(nm), rl = (20 + len + 7) & ~(size_t)7;
		if (y && w + rl > cap) {
			*resume = taken;
			return (long)w;
		}
		taken = *(const long *)(e + OFF);
		if (!y)
			continue;
		memcpy(out + w, e, na); /* d_ino, d_off (and d_type in the 64-bit form) */
		*(unsigned short *)(out + w + RECLEN) = (unsigned short)rl;
		memset(out + w + na, 0, rl - na);
		memcpy(out + w + na, nm, len);
		if (!v64)
			out[w + rl - 1] = e[reclen - 1]; /* d_type, the record's last byte */
		w += rl;
	}
	return (long)w;
}

long zv_cr_pid_dents(struct zv_call *c)
{
	int v64 = c->nr == __NR_getdents64, fd = (int)c->a[0];
	size_t cap = (size_t)(unsigned)c->a[2];
	char *buf = (char *)c->a[1];
	/* where a first entry too long for a small buffer is read again */
	long before = cap < 64 ? zv_sys3(__NR_lseek, fd, 0, SEEK_CUR) : -1;
	for (;;) {
		long r = zv_next_as(c, c->nr, c->a);
		if (r <= 0 || !any_shown_other(buf, r, v64) || !pid_dir(fd))
			return r;
		/* the host's entries, then the guest's (each at most 8 bytes
		 * longer, and 24 bytes or more), copied out as a write fault would
		 * have it: the host filled only r bytes of the buffer */
		size_t room = (size_t)r + (size_t)r / 3 + 8;
		char *in = zv_kmap((size_t)r + room, 4096, -1);
		if (zv_is_err((long)in))
			return r;
		memcpy(in, buf, (size_t)r);
		long resume, w = rename_all(in, r, in + r, cap < room ? cap : room, v64, &resume);
		long f = w ? zv_guest_copy(buf, in + r, (size_t)w, (uint64_t)buf) : 0;
		zv_kunmap(in, (size_t)r + room);
		if (f < 0)
			return -EFAULT;
		if (resume < 0) { /* not even the first entry fits */
			if (before >= 0)
				zv_sys3(__NR_lseek, fd, before, SEEK_SET);
			return -EINVAL;
		}
		if (resume > 0)
			zv_sys3(__NR_lseek, fd, resume, SEEK_SET);
		if (w)
			return w;
		before = resume > 0 ? resume : before; /* all left out: the next entries */
	}
}
