/* The files of the guest's inotify watches, for a checkpoint (DESIGN 24):
 * the host tells each watch's inode, not its name, and a name from an
 * inode needs privilege (open_by_handle_at). So every inotify_add_watch
 * that succeeds notes its file's device, inode and absolute host path. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/resutil.h"
#include "sys/layer.h"
#include "lib/mutex.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/fcntl.h>
#include <asm/stat.h>

#define IN_DONT_FOLLOW_ 0x02000000
#define NOTES_MAX (4UL << 20) /* past that, later watches are not noted (a checkpoint refuses them) */

struct note {
	uint64_t dev, ino;
	uint32_t dont_follow, len; /* then len bytes of path (its NUL), padded to 8 */
};
static struct zv_cr_buf notes;
static volatile int lock;

/* path as an absolute host path into out: a relative one joined to the
 * cwd, a /proc/self/fd/N prefix (fsview's) read back; 0 or -1. */
static int absolute(const char *path, char *out, size_t n)
{
	size_t k = 0;
	if (zv_startswith(path, "/proc/self/fd/")) {
		const char *p = path + 14;
		while (*p >= '0' && *p <= '9')
			p++;
		char link[48];
		size_t ln = (size_t)(p - path);
		if (ln >= sizeof link)
			return -1;
		memcpy(link, path, ln);
		link[ln] = 0;
		long r = zv_sys4(__NR_readlinkat, AT_FDCWD, link, out, n - 1);
		if (r <= 0 || out[0] != '/')
			return -1;
		k = (size_t)r;
		path = p;
	} else if (path[0] != '/') {
		long r = zv_sys2(__NR_getcwd, out, n);
		if (r <= 0 || out[0] != '/')
			return -1;
		k = zv_strlen(out);
		if (k + 1 < n && out[k - 1] != '/')
			out[k++] = '/';
	}
	size_t rest = zv_strlen(path);
	if (k + rest + 1 > n)
		return -1;
	memcpy(out + k, path, rest + 1);
	return 0;
}

long zv_cr_sys_inotify_add_watch(struct zv_call *c)
{
	long r = zv_next(c);
	static char path[4096];
	if (r < 0 || notes.len > NOTES_MAX)
		return r;
	zv_mutex_lock(&lock);
	struct stat st;
	uint32_t nofollow = (c->a[2] & IN_DONT_FOLLOW_) != 0;
	if (absolute((const char *)c->a[1], path, sizeof path) == 0 &&
	    zv_sys4(__NR_newfstatat, AT_FDCWD, path, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0) == 0) {
		struct note h = { st.st_dev, st.st_ino, nofollow, (uint32_t)zv_strlen(path) + 1 };
		zv_cr_buf_put(&notes, &h, sizeof h);
		zv_cr_buf_put(&notes, path, h.len);
	}
	zv_mutex_unlock(&lock);
	return r;
}

const char *zv_cr_inotify_path(uint64_t dev, uint64_t ino, int *dont_follow)
{
	const char *found = NULL;
	for (size_t off = 0; off + sizeof(struct note) <= notes.len;) {
		const struct note *h = (const void *)(notes.p + off);
		if (h->dev == dev && h->ino == ino) { /* the last noted wins */
			found = (const char *)(h + 1);
			*dont_follow = (int)h->dont_follow;
		}
		off += sizeof *h + ((h->len + 7) & ~7U);
	}
	return found;
}

void zv_cr_inotify_fork_child(void)
{
	if (lock) /* another thread of the parent was noting */
		lock = 0;
}
