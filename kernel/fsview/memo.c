/* The directory the last walk's path led to before its last component, by
 * the path's text: ls -l, tar and their kind name many files of one
 * directory in a row ("/usr/share/doc/apt/copyright", then its xattrs,
 * then the next name), and a walk that finds the same text before the last
 * '/' starts there, with no lookup of the components before it. The memo
 * holds a cache entry (dcache.h), so whatever drops that entry (a change
 * the view sees, an epoch moved by another process) makes it stale. */
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

void fsv_memo_set(struct fsv_dref from, const char *key, size_t n, const struct fsv_res *res)
{
	if (n >= KEY_MAX || res->ent.slot == FSV_DC_NONE || res->owned)
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
