/* The cache directory stays bounded (DESIGN "The site cache and shared text"):
 * shared copies of rewritten code are 1-3 MiB each. Enforced by the process
 * that stores a file, before its rename: the entries (*.win, *.pgs; not
 * another writer's temporary files) are listed with their allocated size
 * and access time, and the least recently used go first. Access time is
 * the host's (relatime: a read after the last write, then once a day), so
 * the order is approximate; a copy still mapped by a running process stays
 * valid for it (its inode lives on). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/dirents.h"
#include "intercept/cachecap.h"
#include <asm/stat.h>
#include <linux/fcntl.h>

struct entry {
	int64_t atime, atime_ns;
	uint64_t bytes;
	char name[40];
};

static int is_entry(const char *name)
{
	size_t n = zv_strlen(name);
	return n > 4 && n < sizeof ((struct entry *)0)->name && (!zv_strcmp(name + n - 4, ".win") || !zv_strcmp(name + n - 4, ".pgs"));
}

struct listing {
	int dfd;
	struct entry *e;
	size_t max, n;
	uint64_t total;
};

static long one_entry(const char *name, void *arg)
{
	struct listing *l = arg;
	struct stat st;
	if (!is_entry(name) || zv_sys4(__NR_newfstatat, l->dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	uint64_t bytes = (uint64_t)st.st_blocks * 512;
	l->total += bytes;
	if (l->n < l->max) {
		l->e[l->n] = (struct entry){ (int64_t)st.st_atime, (int64_t)st.st_atime_nsec, bytes, "" };
		zv_strlcpy(l->e[l->n++].name, name, sizeof l->e[0].name);
	}
	return 0;
}

int zv_cachecap_fit(const char *dir, uint64_t need, uint64_t cap, void *scratch, size_t len)
{
	if (need > cap)
		return 0;
	long dfd = zv_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return 0;
	struct listing l = { (int)dfd, scratch, len / sizeof(struct entry), 0, 0 };
	zv_dirents_each((int)dfd, one_entry, &l);
	struct entry *e = l.e;
	size_t n = l.n;
	uint64_t total = l.total;
	while (total + need > cap) {
		size_t old = n;
		for (size_t i = 0; i < n; i++)
			if (e[i].name[0] && (old == n || e[i].atime < e[old].atime ||
					     (e[i].atime == e[old].atime && e[i].atime_ns < e[old].atime_ns)))
				old = i;
		if (old == n)
			break;
		if (zv_sys3(__NR_unlinkat, dfd, e[old].name, 0) == 0)
			total -= e[old].bytes < total ? e[old].bytes : total;
		e[old].name[0] = 0;
	}
	zv_close((int)dfd);
	return total + need <= cap;
}
