/* Host directories the view shows at more than one path (one host
 * directory bound twice, a bind of a directory the root or another bind
 * also shows). A host path names such a directory back by one of its view
 * paths (view.c); the working directory and a directory fd keep the one
 * they were reached through, as a mount's path does natively: chdir records
 * it (cwd.c), and an open of one records it by fd number (here), for fchdir
 * and for walks from that fd. Views without such binds skip all of it. */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "lib/string.h"

/* Whether host path a (an) and b (bn) are one tree's: one under the other. */
static int overlap(const char *a, size_t an, const char *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	if (n == 1)
		return 1;
	return !memcmp(a, b, n) && (an == bn || (an > bn ? a[n] : b[n]) == '/');
}

void fsv_alias_find(void)
{
	fsv.aliased = 0;
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		if (b->kind != FSV_BIND_DIR)
			continue;
		const char *h = fsv_str(b->host);
		size_t hn = zv_strlen(h);
		/* under the root (not the root itself at its own path, PRoot's -R) */
		if (hn > fsv.root_host_len && overlap(h, hn, fsv.root_host, fsv.root_host_len))
			fsv.aliased = 1;
		for (int j = 0; j < i; j++) {
			const struct fsv_bind *o = &fsv.binds[j];
			const char *oh = fsv_str(o->host);
			if (o->kind == FSV_BIND_DIR && overlap(h, hn, oh, zv_strlen(oh)))
				fsv.aliased = 1;
		}
	}
}

int fsv_alias_same(const char *view, const char *host)
{
	char h[FSV_PATH_MAX];
	return fsv_host_of_view(view, h, sizeof h) >= 0 && !zv_strcmp(h, host);
}

/* Directory fds opened through a path the host path would not name. */
#define FDV_SLOTS 8
static struct { int fd; char view[FSV_PATH_MAX]; } fdv[FDV_SLOTS] ZV_COLD_BSS;
static unsigned fdv_next;

void fsv_alias_opened(int fd, const struct fsv_res *res)
{
	if (fsv_vm_child())
		return;
	for (int i = 0; i < FDV_SLOTS; i++)
		if (fdv[i].fd == fd + 1)
			fdv[i].fd = 0; /* a number used again */
	char v[FSV_PATH_MAX], h[FSV_PATH_MAX], back[FSV_PATH_MAX];
	size_t vn;
	if (res->viewlen == (size_t)-1 || !res->viewlen || (res->bind >= 0 && fsv.binds[res->bind].kind != FSV_BIND_DIR))
		return; /* not known, or a file bound (no directory) */
	if (res->namelen == 1 && res->name[0] == '.') {
		memcpy(v, res->view, res->viewlen + 1);
		vn = res->viewlen;
	} else if (!(vn = fsv_child_view(res, res->name, res->namelen, v))) {
		return;
	}
	v[vn] = 0;
	if (fsv_host_of_view(v, h, sizeof h) < 0 || (fsv_view_of_host(h, back, sizeof back) >= 0 && !zv_strcmp(back, v)))
		return; /* the host path names it back as it is */
	unsigned i = fdv_next++ % FDV_SLOTS;
	fdv[i].fd = 0;
	memcpy(fdv[i].view, v, vn + 1);
	__atomic_store_n(&fdv[i].fd, fd + 1, __ATOMIC_RELEASE);
}

long fsv_alias_fd(int fd, const char *host, char *out, size_t n)
{
	for (int i = 0; i < FDV_SLOTS; i++) {
		if (__atomic_load_n(&fdv[i].fd, __ATOMIC_ACQUIRE) != fd + 1)
			continue;
		size_t vn = zv_strlcpy(out, fdv[i].view, n);
		if (vn < n && fsv_alias_same(out, host))
			return (long)vn;
	}
	return -1;
}
