/* The directory the last walk's path led to before its last component, by
 * the path's text: ls -l, tar and their kind name many files of one
 * directory in a row ("/usr/share/doc/apt/copyright", then its xattrs,
 * then the next name), and a walk that finds the same text before the last
 * '/' starts there, with no lookup of the components before it. The memo
 * holds a cache entry (dcache.h), so whatever drops that entry (a change
 * the view sees, an epoch moved by another process) makes it stale.
 *
 * Beside it, the directory the guest itself opened last by an absolute path
 * in one host call (oneshot.c): ls -lR opens each directory, lists it, then
 * names each entry by the directory's text and a '/'. Such a walk starts at
 * the guest's own fd, and the view opens, moves and closes no fd of its own
 * for the directory. The fd serves while its number stands for the same
 * open file and the text still leads there:
 *   - zv_proc.fd_gen has not moved (no close, dup2, dup3 or close_range by
 *     the guest, no exec since; sys/fdflags.c);
 *   - the process is one thread with an fd table of its own and no seccomp
 *     filter of its own (nothing else may close or replace the fd between
 *     the check and the host's use of it), and not a vfork child;
 *   - the cache's root is the same generation (a rename or removal of a
 *     directory or symlink the view saw empties it: dcache.c).
 * A walk from it has the pseudo entry FSV_DC_GUEST: no cache entry hangs
 * under it, but a stat's hint for its names holds (fsv_dc_hint). */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "lib/string.h"

#define KEY_MAX 256

static struct {
	struct fsv_dref from, dir; /* where the text starts (root or cwd) and where it led */
	int links;                 /* symlinks the walk followed to get there */
	size_t len, viewlen;       /* viewlen 0: not kept */
	char key[KEY_MAX];
	char view[KEY_MAX];
} memo;
static volatile int lock;

static struct {
	int fd;
	uint32_t gen;      /* 0: none; the pseudo entry's generation */
	uint32_t fd_gen;   /* zv_proc.fd_gen when the guest opened it */
	uint32_t root_gen; /* the cache root's */
	size_t len;
	char key[KEY_MAX];
} gdir;
static uint32_t gdir_made;

static int gdir_live(uint32_t root_gen)
{
	return gdir.gen && gdir.root_gen == root_gen && gdir.fd_gen == zv_proc.fd_gen && zv_proc.nthreads == 1 &&
	       !zv_proc.files_shared && !zv_proc.sandboxed && !fsv_vm_child();
}

void fsv_memo_guest_dir(const char *path, size_t n, int fd)
{
	if (n >= KEY_MAX || fsv.vroot_len != 1 || zv_proc.nthreads != 1 || fsv_vm_child())
		return;
	zv_lock(&lock);
	gdir.gen = 0;
	gdir.fd = fd;
	gdir.fd_gen = zv_proc.fd_gen;
	gdir.root_gen = fsv_dc_root().gen;
	memcpy(gdir.key, path, n);
	gdir.len = n;
	if (!++gdir_made)
		gdir_made = 1;
	gdir.gen = gdir_made;
	zv_unlock(&lock);
}

uint32_t fsv_memo_guest_gen(uint32_t root_gen)
{
	return gdir_live(root_gen) ? gdir.gen : 0;
}

void fsv_memo_guest_drop(void)
{
	gdir.gen = 0;
}

/* A walk of key (n bytes) from the root that may start at the guest's fd. */
static int guest_get(struct fsv_dref from, const char *key, size_t n, struct fsv_res *res)
{
	if (from.slot != FSV_DC_ROOT || gdir.len != n || !gdir_live(from.gen) || memcmp(gdir.key, key, n))
		return 0;
	res->dirfd = gdir.fd;
	res->owned = 0;
	res->ent = (struct fsv_dref){ FSV_DC_GUEST, gdir.gen };
	res->links = 0; /* the host opened it with RESOLVE_NO_SYMLINKS */
	res->viewlen = (size_t)-1; /* asked of the host if needed */
	return 1;
}

void fsv_memo_set(struct fsv_dref from, const char *key, size_t n, const struct fsv_res *res)
{
	if (n >= KEY_MAX || (res->ent.slot < 0 && res->ent.slot != FSV_DC_ROOT) || res->owned)
		return;
	zv_lock(&lock);
	memo.from = from;
	memo.dir = res->ent;
	memo.links = res->links;
	memcpy(memo.key, key, n);
	memo.len = n;
	memo.viewlen = res->viewlen != (size_t)-1 && res->viewlen < KEY_MAX ? res->viewlen : 0;
	memcpy(memo.view, res->view, memo.viewlen);
	zv_unlock(&lock);
}

int fsv_memo_get(struct fsv_dref from, const char *key, size_t n, struct fsv_res *res)
{
	int fd, hit = 0;
	zv_lock(&lock);
	if (guest_get(from, key, n, res)) {
		zv_unlock(&lock);
		return 1;
	}
	if (memo.len == n && memo.from.slot == from.slot && memo.from.gen == from.gen && !memcmp(memo.key, key, n) &&
	    fsv_dc_valid(memo.dir, &fd)) {
		hit = 1;
		res->dirfd = fd;
		res->owned = 0;
		res->ent = memo.dir;
		res->links = memo.links;
		res->viewlen = memo.viewlen ? memo.viewlen : (size_t)-1;
		memcpy(res->view, memo.view, memo.viewlen);
		res->view[memo.viewlen] = 0;
	}
	zv_unlock(&lock);
	return hit;
}

void fsv_memo_fork_child(void)
{
	lock = 0;
}

size_t fsv_memo_prefix(const char *path, size_t len, int mode)
{
	/* a last component after a '/' that is a name (not "." or "..", no
	 * trailing slash), and a mode that gives it to last() */
	if (mode == FSV_DIR || !len || path[len - 1] == '/')
		return 0;
	size_t p = len - 1;
	while (p && path[p] != '/')
		p--;
	const char *c = path + p + 1;
	size_t n = len - p - 1;
	if (!p || (c[0] == '.' && (n == 1 || (n == 2 && c[1] == '.'))))
		return 0;
	return p < KEY_MAX ? p : 0;
}
