/* The working directory and the root, as the guest sees them. The host's
 * working directory is always the host directory of the guest's (chdir
 * resolves in the view, then fchdir), so that relative paths need no
 * translation of their start; getcwd names it back in the view. chroot
 * moves the process's root inside the view. */
#include "fsview/fsview.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

/* The working directory's view path, when known (set by chdir, forgotten
 * by fchdir and by anything that may move it). A CLONE_VM child that is not
 * a thread (vfork) has a working directory of its own but this memory: it
 * never keeps one. */
static char cwd_view[FSV_PATH_MAX] ZV_COLD_BSS;
static size_t cwd_len;
static uint64_t cwd_epoch;          /* the view's epoch when it was learned */
static struct fsv_dref cwd_ref = { FSV_DC_NONE, 0 }; /* its entry in the cache */

void fsv_cwd_forget(void)
{
	cwd_len = 0;
	cwd_ref.slot = FSV_DC_NONE;
}

void fsv_cwd_entered(const char *v, size_t n)
{
	cwd_ref.slot = FSV_DC_NONE;
	if (n + 1 > sizeof cwd_view) {
		cwd_len = 0;
		return;
	}
	memcpy(cwd_view, v, n);
	cwd_view[n] = 0;
	cwd_len = n;
	cwd_epoch = fsv_epoch();
}

long fsv_cwd_view(char *out, size_t n)
{
	if (cwd_len && cwd_epoch != fsv_epoch())
		fsv_cwd_forget(); /* a directory moved: perhaps one of its */
	if (!cwd_len || fsv_vm_child()) {
		char host[FSV_PATH_MAX];
		long k = zv_sys2(__NR_getcwd, host, sizeof host);
		if (k < 0)
			return k;
		long v = fsv_view_of_host(host, out, n);
		if (v > 0 && !fsv_vm_child())
			fsv_cwd_entered(out, (size_t)v);
		return v;
	}
	if (cwd_len + 1 > n)
		return -ENAMETOOLONG;
	memcpy(out, cwd_view, cwd_len + 1);
	return (long)cwd_len;
}

void fsv_cwd_start(struct fsv_res *res)
{
	if (fsv_vm_child())
		return;
	char v[FSV_PATH_MAX];
	long n = fsv_cwd_view(v, sizeof v);
	if (n <= 0)
		return;
	int fd;
	if (!fsv_dc_valid(cwd_ref, &fd)) {
		/* its entry: the cache's walk of its view path (once) */
		struct fsv_res r;
		cwd_ref.slot = FSV_DC_NONE;
		if (fsv_resolve(AT_FDCWD, v, FSV_DIR, 0, &r) == 0 && r.ent.slot != FSV_DC_NONE && !r.owned)
			cwd_ref = r.ent;
		fsv_res_done(&r);
		if (!fsv_dc_valid(cwd_ref, &fd))
			return;
	}
	res->dirfd = fd;
	res->owned = 0;
	res->ent = cwd_ref;
	memcpy(res->view, v, (size_t)n + 1);
	res->viewlen = (size_t)n;
}

long fsv_dirfd_view(int dirfd, char *out, size_t n)
{
	if (dirfd == AT_FDCWD)
		return fsv_cwd_view(out, n);
	if (dirfd == fsv.rootfd) {
		zv_strlcpy(out, "/", n);
		return 1;
	}
	char link[40], host[FSV_PATH_MAX];
	zv_snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	long k = zv_sys4(__NR_readlinkat, AT_FDCWD, link, host, sizeof host - 1);
	if (k < 0)
		return k;
	host[k] = 0;
	long v = fsv.aliased ? fsv_alias_fd(dirfd, host, out, n) : -1;
	return v > 0 ? v : fsv_view_of_host(host, out, n);
}

/* The guest's euid, as sys/id.c answers geteuid. */
static uint32_t guest_euid(struct zv_call *c)
{
	long a[6] = { 0 };
	struct zv_call q = *c;
	q.nr = __NR_geteuid;
	q.a = a;
	return (uint32_t)zv_sys_id_get(&q);
}

/* The directory the guest's path (argument 0) names. */
static long resolve_dir(struct zv_call *c, struct fsv_res *res)
{
	char path[FSV_PATH_MAX];
	long r = fsv_copy_path((const char *)c->a[0], path, sizeof path);
	if (r < 0) {
		fsv_res_direct(res, -1, "");
		return r;
	}
	return fsv_resolve(AT_FDCWD, path, FSV_DIR, 0, res);
}

static long do_chdir(struct zv_call *c)
{
	struct fsv_res res;
	long r = resolve_dir(c, &res);
	if (r == 0) {
		long a[6] = { res.dirfd };
		if (res.dirfd == AT_FDCWD) /* "." or a path back to it */
			a[0] = (long)".";
		r = zv_next_as(c, res.dirfd == AT_FDCWD ? __NR_chdir : __NR_fchdir, a);
		/* a CLONE_VM child (vfork) shares this memory, not the directory */
		if (r == 0 && c->t->is_thread) {
			if (res.viewlen != (size_t)-1 && res.viewlen)
				fsv_cwd_entered(res.view, res.viewlen);
			else
				cwd_len = 0;
			if (cwd_len && !res.owned)
				cwd_ref = res.ent; /* the cache's own directory */
		}
	}
	fsv_res_done(&res);
	return r;
}

static long do_getcwd(struct zv_call *c)
{
	char host[FSV_PATH_MAX], guest[FSV_PATH_MAX + 16];
	long k = zv_sys2(__NR_getcwd, host, sizeof host);
	if (k < 0)
		return k;
	long n = -1;
	char v[FSV_PATH_MAX];
	/* the path it was entered by, when the host's names the same directory
	 * (one bound at two paths) */
	if (fsv.aliased && cwd_len && cwd_epoch == fsv_epoch() && !fsv_vm_child() &&
	    zv_strlcpy(v, cwd_view, sizeof v) == cwd_len && fsv_alias_same(v, host))
		n = fsv_proc_path(v, guest, sizeof guest);
	if (n < 0)
		n = fsv_guest_path(host, guest, sizeof guest);
	if (n < 0) /* outside the view, as the host shows a directory outside a chroot */
		n = zv_snprintf(guest, sizeof guest, "(unreachable)%s", host);
	size_t size = (size_t)c->a[1];
	if ((size_t)n + 1 > size)
		return -ERANGE;
	return zv_guest_copy((void *)c->a[0], guest, (size_t)n + 1, (uint64_t)c->a[0]) < 0 ? -EFAULT : n + 1;
}

static long do_chroot(struct zv_call *c)
{
	struct fsv_res res;
	long r = resolve_dir(c, &res);
	if (r == 0 && guest_euid(c) != 0)
		r = -EPERM; /* CAP_SYS_CHROOT, checked after the lookup as the host does */
	char v[FSV_PATH_MAX];
	long vn = -1;
	if (r == 0) {
		vn = res.viewlen != (size_t)-1 && res.viewlen ? (long)res.viewlen : fsv_dirfd_view(res.dirfd, v, sizeof v);
		if (vn == (long)res.viewlen)
			memcpy(v, res.view, res.viewlen + 1);
		if (vn <= 0)
			r = -ENOENT;
	}
	if (r == 0) {
		long fd = zv_openat(res.dirfd, ".", O_PATH | O_DIRECTORY, 0);
		if (fd < 0) {
			r = fd;
		} else {
			int old = fsv.vrootfd;
			if (old != fsv.rootfd) {
				zv_forget_hidden_fd(&fsv.vrootfd);
				zv_close(old);
			}
			fsv.vrootfd = zv_hide_fd((int)fd);
			zv_keep_hidden_fd(&fsv.vrootfd);
			memcpy(fsv.vroot, v, (size_t)vn + 1);
			fsv.vroot_len = (size_t)vn;
			fsv_dc_flush();
		}
	}
	fsv_res_done(&res);
	return r;
}

long fsv_cwd_call(struct zv_call *c)
{
	switch (c->nr) {
	case __NR_chdir:
		return do_chdir(c);
	case __NR_getcwd:
		return do_getcwd(c);
	case __NR_chroot:
		return do_chroot(c);
	default: { /* fchdir: the host's, the view path learned when needed */
		long r = zv_next(c);
		if (r == 0 && c->t->is_thread) {
			char v[FSV_PATH_MAX];
			long n = fsv.aliased ? fsv_dirfd_view((int)c->a[0], v, sizeof v) : -1;
			cwd_len = 0;
			if (n > 0)
				fsv_cwd_entered(v, (size_t)n);
		}
		return r;
	}
	}
}
