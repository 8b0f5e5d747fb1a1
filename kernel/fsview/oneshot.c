/* An open of a path of several components in one host call, where the
 * host's lookup is bound to be the view's: openat2 with RESOLVE_BENEATH
 * from the root (or from a bind's source, or the guest's dirfd), with
 * RESOLVE_NO_SYMLINKS outside binds (a symlink of the root may lead into a
 * bind or out of the root: the walk reads it), and no "..", no name of a
 * bind or of a directory that holds one, no /proc root or exe. ELOOP or
 * EXDEV from the host: a symlink or an escape was met, and the walk
 * (walk.c) makes the call; any other answer is the call's. */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>
#include <asm/unistd_64.h>
#include <asm-generic/errno.h>

#define VALID_OPEN_FLAGS_ 077777777
#define O_TMPFILE_ 020000000

/* Whether the components of rel keep the host's lookup the view's; in a
 * bind (inbind) symlinks are the host's to follow, so only .. and /proc's
 * links matter there. */
static int plain(const char *rel, int inbind)
{
	for (const char *p = rel; *p;) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - p);
		if ((n == 2 && p[0] == '.' && p[1] == '.') || fsv_proc_magic_name(p, n))
			return 0;
		if (!inbind && n && (fsv_bind_basename(p, n) || fsv_glue_name(p, n)))
			return 0;
		p = e;
	}
	return 1;
}

long fsv_open_oneshot(struct zv_call *c, int dirfd, const char *path, const struct open_how *how)
{
	long *a = c->a, flags, mode;
	switch (c->nr) {
	case __NR_open: flags = a[1], mode = a[2]; break;
	case __NR_creat: flags = O_CREAT | O_WRONLY | O_TRUNC, mode = a[1]; break;
	case __NR_openat: flags = a[2], mode = a[3]; break;
	case __NR_openat2: flags = (long)how->flags, mode = (long)how->mode; break;
	default: return -ELOOP;
	}
	size_t len = zv_strlen(path);
	if (!len || path[len - 1] == '/')
		return -ELOOP; /* the walk judges a trailing slash */
	int start = dirfd, inbind = 0;
	const char *rel = path;
	if (path[0] == '/') {
		while (*rel == '/')
			rel++;
		const char *e = zv_strchr(rel, '/');
		if (!e)
			return -ELOOP;
		char first[FSV_PATH_MAX];
		size_t n = (size_t)(e - rel);
		if (fsv_bind_basename(rel, n)) {
			/* a bind at /NAME: the rest is the source's */
			if (fsv.vroot_len != 1 || n + 2 > sizeof first)
				return -ELOOP;
			first[0] = '/';
			memcpy(first + 1, rel, n);
			const struct fsv_bind *b = fsv_bind_at(first, n + 1);
			if (!b || b->kind != FSV_BIND_DIR || fsv_bind_below(first, n + 1))
				return -ELOOP;
			start = b->fd;
			rel = e + 1;
			inbind = 1;
		} else {
			start = fsv.vrootfd;
			/* a symlink the cache knows (/lib, /bin): the walk needs no host call for it */
			struct fsv_dref child;
			int fd;
			char t[FSV_PATH_MAX];
			size_t tn;
			if (fsv.vroot_len == 1 && n < FSV_PATH_MAX && fsv_dc_find(fsv_dc_root(), rel, n, &child, &fd, t, &tn) &&
			    fd < 0)
				return -ELOOP;
		}
	}
	if (!*rel || !plain(rel, inbind))
		return -ELOOP;
	struct open_how h = {
		.flags = (uint64_t)flags & VALID_OPEN_FLAGS_,
		.mode = flags & (O_CREAT | O_TMPFILE_) ? (uint64_t)mode & 07777 : 0,
		.resolve = RESOLVE_BENEATH | (inbind ? 0 : RESOLVE_NO_SYMLINKS),
	};
	long b[6] = { start, (long)rel, (long)&h, sizeof h };
	long r = zv_next_as(c, __NR_openat2, b);
	if (r >= 0 && (flags & O_DIRECTORY) && path[0] == '/' && !inbind)
		fsv_memo_guest_dir(path, len, (int)r); /* the names in it walk from there (memo.c) */
	return r;
}
