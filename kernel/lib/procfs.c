/* /proc/PID/status and /proc/PID/stat of another process (see procfs.h). */
#include "lib/procfs.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/errno.h>
#include <linux/fcntl.h>

/* The file whole (what fits), NUL-terminated: its length, or -errno. */
static long read_file(const char *path, char *buf, size_t size)
{
	long fd = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long n = zv_read((int)fd, buf, size - 1);
	zv_close((int)fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

const char *zv_procfs_status_line(int pid, const char *key, char *buf, size_t size, long *err)
{
	char path[48];
	if (pid)
		zv_snprintf(path, sizeof path, "/proc/%d/status", pid);
	else
		zv_strlcpy(path, "/proc/self/status", sizeof path);
	long n = read_file(path, buf, size);
	*err = n == -ENOENT || n >= 0 ? -ESRCH : n;
	if (n <= 0)
		return NULL;
	size_t kl = zv_strlen(key);
	for (char *p = buf; p && *p; p = zv_strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!zv_strncmp(p, key, kl) && p[kl] == ':')
			return p + kl + 1;
	*err = -1;
	return NULL;
}

long zv_procfs_status_field(int pid, const char *key, int nth)
{
	char buf[2048];
	long err;
	const char *q = zv_procfs_status_line(pid, key, buf, sizeof buf, &err);
	if (!q)
		return err;
	for (int i = 0;; i++) {
		while (*q == ' ' || *q == '\t')
			q++;
		const char *e;
		long v = (long)zv_parse_dec(q, &e);
		if (i == nth)
			return e == q ? -1 : v;
		q = e;
	}
}

const char *zv_procfs_stat_fields(int pid, char *buf, size_t size)
{
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/%d/stat", pid);
	long n = read_file(path, buf, size);
	if (n <= 0)
		return NULL;
	const char *p = buf + n;
	while (p > buf && *p != ')')
		p--;
	return *p == ')' && p[1] == ' ' && p[2] ? p + 2 : NULL;
}
