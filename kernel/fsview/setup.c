/* The view at start: the root opened, the binds laid over it (the default
 * /proc, /dev and /sys, a preset's, the user's, in that order: a later bind
 * of the same guest path wins, as a later mount does), and the working
 * directory chosen. Each host directory the view keeps open is a hidden fd
 * (sys/fs.c), carried across exec (state.c). */
#include "fsview/fsview.h"
#include "fsview/setup.h"
#include "fsview/atcalls.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <asm/stat.h>
#include <linux/fcntl.h>
#include <linux/magic.h>

/* PRoot's -R (host: a networked rootfs that runs as the host's user) and -S
 * (build: one that runs as root, with its own users); "$HOME" is zvisor's
 * HOME, "*path*" the root at its own host path. A source the host lacks is
 * left out. /etc/mtab is bound as the symlink it is (into /proc). */
static const char *const preset_host[] = {
	"/etc/host.conf", "/etc/hosts", "/etc/hosts.equiv", "/etc/mtab", "/etc/netgroup", "/etc/networks",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/localtime", "/dev", "/sys",
	"/proc", "/tmp", "/run", "/var/run/dbus/system_bus_socket", "$HOME", "*path*", NULL,
};
static const char *const preset_build[] = {
	"/etc/host.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/resolv.conf", "/dev", "/sys", "/proc", "/tmp",
	"/run/shm", "$HOME", "*path*", NULL,
};

__attribute__((noreturn)) static void die2(const char *opt, const char *path, long err)
{
	zv_dprintf(2, "zvisor: %s: %s: %s\n", opt, path, zv_strerror((int)-err));
	zv_exit_group(2);
}

long fsv_fd_host(int fd, char *out, size_t n)
{
	char link[40];
	zv_snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	long k = zv_sys4(__NR_readlinkat, AT_FDCWD, link, out, n - 1);
	if (k < 0)
		return k;
	if ((size_t)k >= n - 1)
		return -ENAMETOOLONG;
	out[k] = 0;
	return k;
}

/* A guest path made absolute and lexically clean (no ".", "..", "//" or
 * trailing '/'); its length. */
static size_t clean(const char *p, char *out, size_t n)
{
	size_t k = 0;
	out[k++] = '/';
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t len = (size_t)(e - p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (k > 1 && out[k - 1] != '/')
				k--;
			if (k > 1)
				k--;
		} else if (len && !(len == 1 && p[0] == '.') && k + len + 2 < n) {
			if (k > 1)
				out[k++] = '/';
			memcpy(out + k, p, len);
			k += len;
		}
		p = e;
	}
	out[k] = 0;
	return k;
}

static int hide(int fd, int *keeper)
{
	*keeper = zv_hide_fd(fd);
	zv_keep_hidden_fd(keeper);
	return *keeper;
}

/* A bind of host (as given) at guest (NULL: the host path). required: a
 * source that cannot be opened ends zvisor; else it is left out. link: a
 * symlink source stays the symlink. */
static void add_bind(const char *host, const char *guest, int required, int link)
{
	char canon[FSV_PATH_MAX], g[FSV_PATH_MAX];
	struct stat st;
	const char *opt = required ? "--bind" : "--bind-preset";
	if (fsv.nbinds >= FSV_MAX_BINDS) {
		if (required)
			die2(opt, host, -E2BIG);
		return;
	}
	int kind = FSV_BIND_DIR;
	long fd = -1;
	if (link && zv_sys4(__NR_newfstatat, AT_FDCWD, host, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (st.st_mode & FSV_S_IFMT) == FSV_S_IFLNK)
		kind = FSV_BIND_LINK;
	else if ((fd = zv_openat(AT_FDCWD, host, O_PATH | O_CLOEXEC, 0)) < 0) {
		if (required)
			die2(opt, host, fd);
		return;
	}
	if (kind == FSV_BIND_DIR && (zv_sys2(__NR_fstat, fd, &st) < 0 || (st.st_mode & FSV_S_IFMT) != FSV_S_IFDIR))
		kind = FSV_BIND_FILE;
	if (kind == FSV_BIND_DIR) {
		long e = fsv_fd_host((int)fd, canon, sizeof canon);
		if (e < 0) {
			zv_close((int)fd);
			if (required)
				die2(opt, host, e);
			return;
		}
	} else {
		/* a file or symlink: its parent's fd and its name there */
		char parent[FSV_PATH_MAX];
		if (fd >= 0) {
			long e = fsv_fd_host((int)fd, canon, sizeof canon);
			zv_close((int)fd);
			if (e < 0) {
				if (required)
					die2(opt, host, e);
				return;
			}
		} else {
			zv_strlcpy(canon, host, sizeof canon);
		}
		zv_strlcpy(parent, canon, sizeof parent);
		char *slash = zv_strrchr(parent, '/');
		*slash = 0;
		fd = zv_openat(AT_FDCWD, parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (fd < 0) {
			if (required)
				die2(opt, host, fd);
			return;
		}
		if (parent[0] && kind == FSV_BIND_LINK) {
			/* the symlink's parent, canonical, with its name */
			char pc[FSV_PATH_MAX];
			if (fsv_fd_host((int)fd, pc, sizeof pc) > 0)
				zv_snprintf(canon, sizeof canon, "%s/%s", pc[1] ? pc : "", slash + 1);
		}
	}
	size_t gn = clean(guest ? guest : (host[0] == '/' ? host : canon), g, sizeof g);
	if (gn == 1) {
		zv_close((int)fd);
		if (required) {
			zv_dprintf(2, "zvisor: --bind: %s: cannot bind over the root (use --root)\n", host);
			zv_exit_group(2);
		}
		return;
	}
	struct fsv_bind *b = &fsv.binds[fsv.nbinds];
	const char *base = zv_strrchr(g, '/') + 1;
	const char *name = zv_strrchr(canon, '/') + 1;
	if (fsv_pool_add(g, gn, &b->guest) < 0 || fsv_pool_add(canon, zv_strlen(canon), &b->host) < 0 ||
	    fsv_pool_add(name, zv_strlen(name), &b->name) < 0) {
		zv_close((int)fd);
		if (required)
			die2(opt, host, -ENAMETOOLONG);
		return;
	}
	b->base = (uint16_t)(b->guest + (base - g));
	b->kind = (uint8_t)kind;
	struct { long type; long rest[15]; } sfs;
	b->procfs = kind == FSV_BIND_DIR && zv_sys2(__NR_fstatfs, fd, &sfs) == 0 && sfs.type == PROC_SUPER_MAGIC &&
		    st.st_ino == 1;
	fsv_names_add(fsv_str(b->guest));
	fsv.nbinds++;
	hide((int)fd, &b->fd);
}

/* "HOST[:GUEST]" */
static void user_bind(const char *spec)
{
	char host[FSV_PATH_MAX];
	const char *colon = zv_strchr(spec, ':');
	size_t hn = colon ? (size_t)(colon - spec) : zv_strlen(spec);
	if (!hn || hn >= sizeof host || (colon && !colon[1])) {
		zv_dprintf(2, "zvisor: --bind: '%s' is not HOST[:GUEST]\n", spec);
		zv_exit_group(2);
	}
	memcpy(host, spec, hn);
	host[hn] = 0;
	add_bind(host, colon ? colon + 1 : NULL, 1, 0);
}

static void add_preset(const char *const *list, char **envp)
{
	for (; *list; list++) {
		const char *p = *list;
		if (!zv_strcmp(p, "$HOME")) {
			p = zv_env_value(envp, "HOME");
			if (!p || !p[0])
				continue;
		} else if (!zv_strcmp(p, "*path*")) {
			if (!fsv_opts.root)
				continue;
			p = fsv.root_host;
		}
		add_bind(p, NULL, 0, !zv_strcmp(p, "/etc/mtab"));
	}
}

/* zvisor's cache directory (made if need be) into dir, or NULL. */
static const char *cache_dir(char **envp, char *dir, size_t n)
{
	const char *xdg = zv_env_value(envp, "XDG_CACHE_HOME"), *home = zv_env_value(envp, "HOME");
	if (xdg && xdg[0] == '/')
		zv_snprintf(dir, n, "%s/zvisor", xdg);
	else if (home && home[0] == '/')
		zv_snprintf(dir, n, "%s/.cache/zvisor", home);
	else
		return NULL;
	for (char *s = dir + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			zv_sys2(__NR_mkdir, dir, 0700);
			*s = '/';
		}
	zv_sys2(__NR_mkdir, dir, 0700);
	return dir;
}

/* Each bind laid where its guest path's directories lead in the view made
 * by the binds before it, as mount(8) follows them (Debian's /var/run ->
 * /run: a bind at /var/run/X is at /run/X, seen through both names). Its
 * last component is not followed: a bind over a symlink replaces it. */
static void lay_binds(void)
{
	int n = fsv.nbinds, moved = 0;
	for (int i = 0; i < n; i++) {
		struct fsv_bind *b = &fsv.binds[i];
		const char *g = fsv_str(b->guest), *base = fsv_str(b->base);
		size_t pn = (size_t)(base - g) - 1;
		if (!pn)
			continue;
		char parent[FSV_PATH_MAX], v[FSV_PATH_MAX], ng[FSV_PATH_MAX];
		memcpy(parent, g, pn);
		parent[pn] = 0;
		fsv.nbinds = i;
		fsv_dc_flush();
		struct fsv_res res;
		long vn = fsv_resolve(fsv.rootfd, parent, FSV_DIR, 0, &res);
		if (vn == 0 && res.viewlen != (size_t)-1 && res.viewlen)
			vn = (long)zv_strlcpy(v, res.view, sizeof v);
		else if (vn == 0)
			vn = fsv_dirfd_view(res.dirfd, v, sizeof v);
		fsv_res_done(&res);
		if (vn <= 0 || ((size_t)vn == pn && !memcmp(v, parent, pn)))
			continue;
		int k = zv_snprintf(ng, sizeof ng, "%s/%s", vn == 1 ? "" : v, base);
		uint16_t off;
		if (k <= 0 || (size_t)k >= sizeof ng || fsv_pool_add(ng, (size_t)k, &off) < 0)
			continue;
		b->guest = off;
		b->base = (uint16_t)(off + (size_t)k - zv_strlen(base));
		moved = 1;
	}
	fsv.nbinds = n;
	fsv_dc_flush();
	if (!moved)
		return;
	fsv.basenames[0] = fsv.gluenames[0] = 0;
	memset(fsv.basefirst, 0, sizeof fsv.basefirst);
	memset(fsv.gluefirst, 0, sizeof fsv.gluefirst);
	for (int i = 0; i < n; i++)
		fsv_names_add(fsv_str(fsv.binds[i].guest));
}

int zv_fsv_on(void) { return fsv.on; }

void zv_fsv_start(char **envp)
{
	if (!fsv_opts.any)
		return;
	const char *root = fsv_opts.root ? fsv_opts.root : "/";
	long fd = zv_openat(AT_FDCWD, root, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		die2("--root", root, fd);
	long n = fsv_fd_host((int)fd, fsv.root_host, sizeof fsv.root_host);
	if (n < 0)
		die2("--root", root, n);
	fsv.root_host_len = (size_t)n;
	struct stat st;
	zv_sys2(__NR_fstat, fd, &st);
	fsv.root_dev = st.st_dev;
	fsv.root_ino = st.st_ino;
	fsv.gluefd = -1;
	hide((int)fd, &fsv.rootfd);
	fsv.vrootfd = fsv.rootfd;
	zv_strlcpy(fsv.vroot, "/", sizeof fsv.vroot);
	fsv.vroot_len = 1;
	if (!fsv_opts.no_default && fsv_opts.preset == FSV_PRESET_NONE) {
		add_bind("/proc", NULL, 0, 0);
		add_bind("/dev", NULL, 0, 0);
		add_bind("/sys", NULL, 0, 0);
	}
	if (fsv_opts.preset)
		add_preset(fsv_opts.preset == FSV_PRESET_HOST ? preset_host : preset_build, envp);
	for (int i = 0; i < fsv_opts.nbinds; i++)
		user_bind(fsv_opts.binds[i]);
	fsv_shared_make();
	fsv_hooks_on();
	lay_binds();
	fsv_alias_find();
	/* binds under directories the root lacks: those are made up */
	char cache[FSV_PATH_MAX];
	fsv_glue_make(cache_dir(envp, cache, sizeof cache));
	/* the working directory: --cwd, or the host's when the view reaches it */
	char view[FSV_PATH_MAX], host[FSV_PATH_MAX];
	if (fsv_opts.cwd) {
		struct fsv_res res;
		long r = fsv_resolve(fsv.rootfd, fsv_opts.cwd, FSV_DIR, 0, &res);
		if (r == 0)
			r = zv_sys1(__NR_fchdir, res.dirfd);
		if (r == 0 && res.viewlen != (size_t)-1 && res.viewlen)
			zv_strlcpy(view, res.view, sizeof view);
		else
			view[0] = 0;
		fsv_res_done(&res);
		if (r < 0 && !fsv_opts.cwd_soft)
			die2("--cwd", fsv_opts.cwd, r);
		if (r < 0) { /* PRoot's warning, and / */
			if (fsv_opts.cwd_soft == 1)
				zv_dprintf(2, "zvisor: proot: cannot chdir to %s in the guest root (%s): the "
					   "working directory is /\n", fsv_opts.cwd, zv_strerror((int)-r));
			zv_sys1(__NR_fchdir, fsv.rootfd);
		}
	} else if (zv_sys2(__NR_getcwd, host, sizeof host) < 0 || fsv_view_of_host(host, view, sizeof view) < 0) {
		zv_sys1(__NR_fchdir, fsv.rootfd);
	}
	fsv_cwd_forget();
	if (fsv_opts.cwd && view[0])
		fsv_cwd_entered(view, zv_strlen(view)); /* the path it was entered by */
	long probe = zv_sys6(464 /* getxattrat */, -1, (long)"", 0, (long)"", 0, 0);
	fsv_have_xattrat = probe != -ENOSYS;
}
