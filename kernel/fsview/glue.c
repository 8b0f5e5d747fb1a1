/* The directories the view makes up: a bind below directories the root
 * lacks (-b F:/new/dir/file) needs them to exist, and a readdir of one lists
 * what it holds, as PRoot's glue does. Each is a directory of a tree in
 * zvisor's cache ("glue-HASH", HASH of what the tree holds: the same binds
 * share one), made once, read-only: a directory per made-up directory and a
 * stand-in of the bind's kind (empty directory, empty file, symlink) per
 * mountpoint in one. The walk goes into the tree's directory for a made-up
 * one (walkturns.c), a host path in it is named back by its view path
 * (view.c), and the stand-ins themselves are never reached: their names
 * are binds. */
#include "fsview/fsview.h"
#include "fsview/setup.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

/* Whether the root (and the binds) lack the directory at view path p (n
 * bytes), while the walk invents none. */
static int lacks(const char *p, size_t n)
{
	char d[FSV_PATH_MAX];
	memcpy(d, p, n);
	d[n] = 0;
	struct fsv_res res;
	long r = fsv_resolve(fsv.rootfd, d, FSV_DIR, 0, &res);
	fsv_res_done(&res);
	return r == -ENOENT;
}

/* The length of bind b's first made-up directory's view path, 0 if it has
 * none. */
static size_t first_made_up(const struct fsv_bind *b)
{
	const char *g = fsv_str(b->guest);
	size_t parent = (size_t)(fsv_str(b->base) - g) - 1;
	if (!parent || !lacks(g, parent))
		return 0;
	for (size_t k = 1; k <= parent; k++)
		if ((k == parent || g[k] == '/') && lacks(g, k))
			return k;
	return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
	return h;
}

/* Bind b's parent as a path of the tree (relative: no leading '/'), in out. */
static const char *tree_parent(const struct fsv_bind *b, char *out)
{
	const char *g = fsv_str(b->guest);
	size_t pn = (size_t)(fsv_str(b->base) - g) - 1;
	memcpy(out, g + 1, pn - 1);
	out[pn - 1] = 0;
	return out;
}

/* dir/s made, each of its directories. */
static void make_dirs(int dir, const char *s)
{
	char p[FSV_PATH_MAX];
	size_t n = zv_strlcpy(p, s, sizeof p);
	for (size_t k = 1; k <= n; k++)
		if (k == n || p[k] == '/') {
			p[k] = 0;
			zv_sys3(__NR_mkdirat, dir, p, 0755);
			p[k] = k == n ? 0 : '/';
		}
}

/* The tree's directories read-only, from a mountpoint's parent s up. */
static void seal_dirs(int dir, const char *s)
{
	char p[FSV_PATH_MAX];
	size_t n = zv_strlcpy(p, s, sizeof p);
	for (size_t k = n; k > 0; k--)
		if (k == n || p[k] == '/') {
			p[k] = 0;
			zv_sys4(__NR_fchmodat, dir, p, 0555, 0);
		}
	zv_sys4(__NR_fchmodat, dir, ".", 0555, 0);
}

static void stand_in(int dir, const struct fsv_bind *b)
{
	const char *g = fsv_str(b->guest) + 1;
	if (b->kind == FSV_BIND_DIR) {
		zv_sys3(__NR_mkdirat, dir, g, 0555);
	} else if (b->kind == FSV_BIND_LINK) {
		zv_sys3(__NR_symlinkat, ".", dir, g);
	} else {
		long fd = zv_openat(dir, g, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		if (fd >= 0)
			zv_close((int)fd);
	}
}

void fsv_glue_make(const char *cache)
{
	size_t from[FSV_MAX_BINDS];
	uint64_t h = 0xcbf29ce484222325ULL;
	int any = 0;
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		from[i] = first_made_up(b);
		if (!from[i])
			continue;
		any = 1;
		const char *g = fsv_str(b->guest);
		h = fnv(h, g, zv_strlen(g) + 1);
		h = fnv(h, &b->kind, 1);
		h = fnv(h, &from[i], sizeof from[i]);
	}
	if (!any || !cache)
		return;
	char dir[FSV_PATH_MAX], tmp[FSV_PATH_MAX];
	zv_snprintf(dir, sizeof dir, "%s/glue-%016lx", cache, (unsigned long)h);
	long fd = zv_openat(AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd == -ENOENT) {
		/* made under a name of this process's, then moved into place whole */
		zv_snprintf(tmp, sizeof tmp, "%s.%ld", dir, zv_getpid());
		zv_sys2(__NR_mkdir, tmp, 0755);
		long t = zv_openat(AT_FDCWD, tmp, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (t < 0)
			return;
		char parent[FSV_PATH_MAX];
		for (int i = 0; i < fsv.nbinds; i++)
			if (from[i]) {
				make_dirs((int)t, tree_parent(&fsv.binds[i], parent));
				stand_in((int)t, &fsv.binds[i]);
			}
		for (int i = 0; i < fsv.nbinds; i++) /* all made: then read-only */
			if (from[i])
				seal_dirs((int)t, tree_parent(&fsv.binds[i], parent));
		/* another run may have made it first: then this copy serves */
		fd = zv_sys2(__NR_rename, tmp, dir) == 0 ? zv_openat(AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0) : t;
		if (fd != t)
			zv_close((int)t);
	}
	if (fd < 0)
		return;
	char host[FSV_PATH_MAX];
	long k = fsv_fd_host((int)fd, host, sizeof host);
	if (k < 0 || fsv_pool_add(host, (size_t)k, &fsv.glue_host) < 0) {
		zv_close((int)fd);
		return;
	}
	fsv.glue_host_len = (size_t)k;
	fsv.gluefd = zv_hide_fd((int)fd);
	zv_keep_hidden_fd(&fsv.gluefd);
}
