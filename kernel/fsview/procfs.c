/* /proc as the guest sees it: the host's /proc bound over the view's, whose
 * magic links are the host's (an fd's file, the working directory), except
 * a process's root, which is the view's, and the process's own exe, which
 * is its program (zvisor on the host). */
#include "fsview/fsview.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "lib/string.h"

/* digits at *s, moved past them: whether there were any */
static int digits(const char **s, const char *end, long *v)
{
	const char *p = *s;
	*v = 0;
	while (p < end && *p >= '0' && *p <= '9')
		*v = *v * 10 + (*p++ - '0');
	if (p == *s)
		return 0;
	*s = p;
	return 1;
}

/* Whether dir (n bytes, a view path) is a pid's directory of a bind of the
 * host's /proc: "<bind>/<pid>" or "<bind>/<pid>/task/<tid>"; *pid is set. */
static int piddir(const char *dir, size_t n, long *pid)
{
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		if (!b->procfs)
			continue;
		const char *g = fsv_str(b->guest);
		size_t gn = zv_strlen(g);
		if (n <= gn + 1 || memcmp(dir, g, gn) || dir[gn] != '/')
			continue;
		const char *s = dir + gn + 1, *end = dir + n;
		long tid;
		if (!digits(&s, end, pid))
			continue;
		if (s == end)
			return 1;
		if (end - s > 6 && !memcmp(s, "/task/", 6)) {
			s += 6;
			if (digits(&s, end, &tid) && s == end)
				return 1;
		}
	}
	return 0;
}

int fsv_proc_magic(const char *dir, size_t dlen, const char *name, size_t n, char *buf, size_t bn,
		   const char **target)
{
	long pid;
	if (!fsv_proc_magic_name(name, n) || !piddir(dir, dlen, &pid))
		return 0;
	if (n == 4) { /* root: every process of the view has the view's */
		*target = "/";
		return 1;
	}
	/* exe: this process's program, or another's of the view (shared.c);
	 * a process outside the view keeps the host's link */
	if (pid == zv_proc.hpid && zv_proc.exe_path[0]) {
		*target = zv_proc.exe_path;
		return 1;
	}
	if (!fsv_exe_of((int)pid, buf, bn))
		return 0;
	*target = buf;
	return 1;
}

long fsv_proc_readlink(char *buf, long n, long cap)
{
	char host[FSV_PATH_MAX], guest[FSV_PATH_MAX];
	if (n <= 0 || buf[0] != '/' || n >= (long)sizeof host)
		return n;
	memcpy(host, buf, (size_t)n);
	host[n] = 0;
	/* a removed file or directory: the host names its last path with
	 * " (deleted)" after it; the guest's path, with the same words */
	static const char deleted[] = " (deleted)";
	size_t dn = sizeof deleted - 1;
	int gone = n > (long)dn && !memcmp(host + n - dn, deleted, dn);
	if (gone)
		host[n - dn] = 0;
	long g = fsv_guest_path(host, guest, sizeof guest - dn);
	if (g < 0)
		return n;
	if (gone) {
		memcpy(guest + g, deleted, dn);
		g += (long)dn;
	}
	if (g > cap)
		g = cap;
	memcpy(buf, guest, (size_t)g);
	return g;
}
