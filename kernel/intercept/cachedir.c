/* Where the site cache lives (intercept/sitecache.c, sharedtext.c): the
 * user's $XDG_CACHE_HOME/zvisor, else ~/.cache/zvisor, if it is the user's
 * own directory or can be made; else, for a user without a writable home
 * (a daemon, nobody, a CI sandbox, a read-only home), a per-user directory
 * that is safe in a shared /tmp: $XDG_RUNTIME_DIR/zvisor, else
 * /tmp/zvisor-UID, made 0700 and used only if it is a directory (not a
 * symlink) that the user owns and no one else may enter, as tmux and
 * ssh-agent check theirs. The choice is made at the first use of the cache
 * in each image (one stat when the first place is right). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "intercept/sitecache.h"
#include "sys/execstate.h"
#include <asm/stat.h>
#include <linux/fcntl.h>

static char dir[256];     /* the cache directory; empty: none */
static char runtime[200]; /* $XDG_RUNTIME_DIR, for the fallback */
static int chosen;        /* dir was checked (or there is none) */
static int warn_fd;       /* where a refused place is said (-1: not in this image) */
static volatile int choosing;

static int make_dir(const char *path)
{
	long r = zv_sys3(__NR_mkdirat, AT_FDCWD, path, 0700);
	return r == 0 || r == -EEXIST;
}

/* The user the cache is kept for (asked once per image). */
static long euid = -1;
long zv_sitecache_euid(void)
{
	if (euid < 0)
		euid = zv_sys0(__NR_geteuid);
	return euid;
}

/* Whether path is a directory of this user's that it may write: with
 * private, also one no one else may enter or read (lstat: not a symlink). */
static int own_dir(const char *path, int private)
{
	struct stat st;
	if (zv_sys4(__NR_newfstatat, AT_FDCWD, path, &st, 0x100 /* AT_SYMLINK_NOFOLLOW */) != 0)
		return 0;
	return (st.st_mode & 0170000) == 0040000 && st.st_uid == (uint32_t)zv_sitecache_euid() &&
	       (st.st_mode & 0300) == 0300 && (!private || !(st.st_mode & 077));
}

/* The first place: there, or made with its parent (0700). */
static int first_place(void)
{
	if (own_dir(dir, 0))
		return 1;
	char base[256];
	zv_strlcpy(base, dir, sizeof base);
	char *slash = base + zv_strlen(base);
	while (slash > base && *slash != '/')
		slash--;
	*slash = 0;
	return make_dir(base) && make_dir(dir) && own_dir(dir, 0);
}

/* A per-user place for a user without one: made private, or refused. */
static int private_place(const char *path)
{
	zv_strlcpy(dir, path, sizeof dir);
	make_dir(dir);
	if (own_dir(dir, 1))
		return 1;
	if (warn_fd >= 0)
		zv_dprintf(warn_fd, "zvisor: not using %s for the cache: not a private directory of this user's\n", dir);
	return 0;
}

/* Under a root of the guest's own (--root) the guest's HOME is no host path
 * for zvisor's cache: the first image's choice holds for the whole tree,
 * carried across a host exec in field C and kept by an in-process one. */
static int keep_dir;

void zv_sitecache_keep_dir(void) { keep_dir = 1; }

static int encode_dir(char *buf, size_t n, const struct zv_exec_carry *x)
{
	(void)x;
	const char *d = keep_dir ? zv_sitecache_dir() : "";
	if (!d[0] || zv_strchr(d, ','))
		return -1;
	return zv_snprintf(buf, n, "%s", d);
}

static const char *decode_dir(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	size_t k = 0;
	while (s[k] && s[k] != ',' && k + 1 < sizeof dir) {
		dir[k] = s[k];
		k++;
	}
	dir[k] = 0;
	keep_dir = chosen = 1;
	warn_fd = -1;
	while (s[k] && s[k] != ',')
		k++;
	return s + k;
}
ZV_EXEC_FIELD(sitecache_dir, 310, 'C', encode_dir, decode_dir);

/* The places the last choice was made from: an image exec'd in this
 * process with the same ones (the ids are the same, or the exec was the
 * host's: sys/exec_note.c) keeps the choice, without its stat. */
static char asked[256], asked_runtime[200];
static int asked_set;

/* The same across the host's execve (field D): the places asked, the
 * choice and the user, unless the ids may have changed since (they are
 * the host's to recompute). The new image keeps them, without the stat
 * and the geteuid, if its environment names the same places. */
static int carried;
static int encode_place(char *buf, size_t n, const struct zv_exec_carry *x)
{
	(void)x;
	if (keep_dir || !chosen || !asked_set || !dir[0] || euid < 0 || (zv_proc.exec_needs_host & ZV_EXEC_NEEDS_HOST_CREDS) ||
	    zv_strchr(asked, ',') || zv_strchr(asked, '|') || zv_strchr(asked_runtime, ',') ||
	    zv_strchr(asked_runtime, '|') || zv_strchr(dir, ',') || zv_strchr(dir, '|'))
		return -1;
	return zv_snprintf(buf, n, "%ld|%s|%s|%s", euid, asked, asked_runtime, dir);
}

static const char *copy_to(const char *s, char *out, size_t n)
{
	size_t k = 0;
	for (; *s && *s != ',' && *s != '|'; s++)
		if (k + 1 < n)
			out[k++] = *s;
	out[k] = 0;
	return *s == '|' ? s + 1 : s;
}

static const char *decode_place(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	long id = (long)zv_parse_dec(s, &s);
	if (*s == '|') {
		s = copy_to(s + 1, asked, sizeof asked);
		s = copy_to(s, asked_runtime, sizeof asked_runtime);
		s = copy_to(s, dir, sizeof dir);
		euid = id;
		carried = dir[0] != 0;
	}
	while (*s && *s != ',')
		s++;
	return s;
}
ZV_EXEC_FIELD(sitecache_place, 312, 'D', encode_place, decode_place);

void zv_cachedir_init(const char *xdg, const char *home, const char *xdg_runtime, int none, int warn)
{
	if (keep_dir)
		return; /* the first image's, under --root */
	char first[256] = "", run[200] = "";
	if (xdg && zv_strlen(xdg) < 150)
		zv_snprintf(first, sizeof first, "%s/zvisor", xdg);
	else if (home && zv_strlen(home) < 150)
		zv_snprintf(first, sizeof first, "%s/.cache/zvisor", home);
	if (xdg_runtime && zv_strlen(xdg_runtime) < 150)
		zv_strlcpy(run, xdg_runtime, sizeof run);
	if (carried) { /* the exec'ing image's choice, as if made in this one */
		carried = 0;
		chosen = asked_set = 1;
		warn_fd = -1;
	}
	if (chosen && !none && asked_set && !zv_strcmp(first, asked) && !zv_strcmp(run, asked_runtime))
		return;
	asked_set = !none;
	zv_strlcpy(asked, first, sizeof asked);
	zv_strlcpy(asked_runtime, run, sizeof asked_runtime);
	zv_strlcpy(dir, none ? "" : first, sizeof dir);
	zv_strlcpy(runtime, run, sizeof runtime);
	euid = -1;
	chosen = none;
	warn_fd = warn;
}

const char *zv_sitecache_dir(void)
{
	if (__atomic_load_n(&chosen, __ATOMIC_ACQUIRE))
		return dir;
	zv_lock(&choosing);
	if (!chosen && !(dir[0] && first_place())) {
		char path[256];
		if (runtime[0])
			zv_snprintf(path, sizeof path, "%s/zvisor", runtime);
		if (!(runtime[0] && private_place(path))) {
			zv_snprintf(path, sizeof path, "/tmp/zvisor-%ld", zv_sitecache_euid());
			if (!private_place(path))
				dir[0] = 0;
		}
	}
	__atomic_store_n(&chosen, 1, __ATOMIC_RELEASE);
	zv_unlock(&choosing);
	return dir;
}

int zv_sitecache_make_dir(void)
{
	const char *d = zv_sitecache_dir();
	return d[0] && make_dir(d);
}
