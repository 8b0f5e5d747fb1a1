/* File-system calls the kernel must see: paths that name the process's own
 * executable (/proc/self/exe is zvisor on the host), and the kernel's hidden
 * file descriptors, which the guest can neither close, replace nor list. */
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/txtbusy.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>


/* The process whose exe path p names: "/proc/self/exe", "/proc/thread-self/exe",
 * "/proc/<pid>/exe" or "/proc/<pid>/task/<tid>/exe": 0 for this one (self,
 * its pid or a thread's id), the host pid of another, -1 for other paths. */
static long exe_pid(const char *p)
{
	if (!p || p[0] != '/' || zv_strncmp(p, "/proc/", 6) != 0)
		return -1;
	const char *s = p + 6;
	long pid = 0;
	if (zv_startswith(s, "self/"))
		s += 5;
	else if (zv_startswith(s, "thread-self/"))
		s += 12;
	else {
		const char *d = s;
		while (*s >= '0' && *s <= '9' && pid < 1 << 24)
			pid = pid * 10 + (*s++ - '0');
		if (s == d || *s != '/')
			return -1;
		s++;
		if (zv_startswith(s, "task/")) {
			s += 5;
			while (*s >= '0' && *s <= '9')
				s++;
			if (*s++ != '/')
				return -1;
		}
	}
	if (zv_strcmp(s, "exe") != 0)
		return -1;
	return pid == zv_proc.pid || pid == zv_proc.hpid || zv_thread_find((int)pid) ? 0 : pid;
}

/* This process's exe path becomes the guest's executable; other paths are
 * unchanged. */
const char *zv_translate_path(const char *p)
{
	return exe_pid(p) == 0 ? zv_proc.exe_path : p;
}

/* The same, and another hosted process's exe its program, as that process
 * says over the peer channel (the layers' exe_of, sys/procview_peer.c),
 * into buf. */
static const char *exe_path_of(const char *p, char *buf, size_t n)
{
	long pid = exe_pid(p);
	if (pid == 0)
		return zv_proc.exe_path;
	if (pid < 0)
		return p;
	long k = zv_event_exe_of((int)pid, buf, n);
	return k > 0 && (size_t)k < n ? buf : p;
}

static long readlink_exe(const char *exe, char *buf, long size)
{
	long n = (long)zv_strlen(exe);
	if (size <= 0)
		return -EINVAL;
	if (n > size)
		n = size;
	return zv_guest_copy(buf, exe, (size_t)n, (uint64_t)buf) ? -EFAULT : n;
}

/* openat2's open_how, read as the host reads it when its size is one the
 * host reads (else the host refuses it and the path does not matter): a
 * lookup that may not follow the magic link itself (O_NOFOLLOW,
 * RESOLVE_NO_MAGICLINKS or NO_SYMLINKS: ELOOP; the scoped BENEATH and
 * IN_ROOT, and NO_XDEV, since /proc is a mount of its own: EXDEV) is the
 * host's, on the host's link. */
static int openat2_no_follow(const long *a)
{
	struct open_how how;
	if ((size_t)a[3] < sizeof how || (size_t)a[3] > 4096 || zv_peek(&how, (uint64_t)a[2], sizeof how) < 0)
		return 1;
	return (how.flags & O_NOFOLLOW) ||
	       (how.resolve & (RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH |
			       RESOLVE_IN_ROOT | RESOLVE_NO_XDEV));
}

/* Whether the call acts on a final symlink itself rather than on its target
 * or may not follow it: then /proc/self/exe is the host's link (an lstat
 * shows a symlink, an O_NOFOLLOW open fails with ELOOP, as natively), and
 * only its target, which readlink reports, is the guest's. */
static int no_follow(const long *a, const struct zv_sysent *row)
{
	if (row->nofollow == ZV_NF_HOW)
		return openat2_no_follow(a);
	if (row->nofollow == ZV_NF_ALWAYS)
		return 1;
	if (row->oflags)
		return (a[zv_arg_index(row->oflags)] & O_NOFOLLOW) != 0;
	if (row->atflags)
		return (a[zv_arg_index(row->atflags)] & AT_SYMLINK_NOFOLLOW) != 0;
	return 0;
}

long zv_sys_path_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	const struct zv_sysent *row = zv_row(nr);
	int pi = zv_arg_index(row->path);
	const char *p = (const char *)a[pi];
	if (p && zv_bad_guest_ptr((uint64_t)p))
		return -EFAULT; /* NULL is the host's to refuse: some calls take it */
	char other[ZV_PATH_MAX];
	const char *q = exe_path_of(p, other, sizeof other);
	if (q != p && !no_follow(a, row)) {
		if (row->readlink)
			return readlink_exe(q, (char *)a[pi + 1], a[pi + 2]);
		a[pi] = (long)q;
	}
	long r = row->opens ? zv_txt_open(t, nr, a) : zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (r >= 0 && row->opens)
		zv_event_opened(t, q, r); /* procview marks maps and status, served as the guest's */
	return r;
}

/* Hidden fds: the kernel's own, moved out of the guest's way, each known by
 * the variable that keeps its number (the guest's dup2 onto one moves it
 * and updates the variable). Four are the core's; features register more
 * (fsview's root and binds), each image anew. -1 where unused. */
#define ZV_FIXED_HIDDEN 4
#define ZV_MAX_EXTRA 128
static int *const fixed[ZV_FIXED_HIDDEN] = { &zv_proc.count_fd, &zv_proc.err_fd, &zv_proc.trace.fd,
					     &zv_proc.self_fd };
static int *extra[ZV_MAX_EXTRA];
static int nextra, extra_lo; /* extra_lo: the lowest registered fd, a quick no for the guest's */

static int *hidden_slot(int fd)
{
	for (int i = 0; i < ZV_FIXED_HIDDEN; i++)
		if (*fixed[i] >= 0 && *fixed[i] == fd)
			return fixed[i];
	if (nextra && fd >= extra_lo)
		for (int i = 0; i < ZV_MAX_EXTRA; i++)
			if (extra[i] && *extra[i] == fd)
				return extra[i];
	return NULL;
}

int zv_is_kernel_fd(int fd) { return fd >= 0 && hidden_slot(fd) != NULL; }

int zv_hidden_fds_exist(void)
{
	for (int i = 0; i < ZV_FIXED_HIDDEN; i++)
		if (*fixed[i] >= 0)
			return 1;
	return nextra != 0;
}

static void extra_bounds(void)
{
	extra_lo = 0x7fffffff;
	for (int i = 0; i < ZV_MAX_EXTRA; i++)
		if (extra[i] && *extra[i] >= 0 && *extra[i] < extra_lo)
			extra_lo = *extra[i];
}

int zv_keep_hidden_fd(int *keeper)
{
	int was = zv_hidden_fds_exist();
	for (int i = 0; i < ZV_MAX_EXTRA; i++)
		if (!extra[i] || extra[i] == keeper) {
			nextra += !extra[i];
			extra[i] = keeper;
			extra_bounds();
			if (!was)
				zv_layers_fold(); /* fd calls now check for it */
			return 0;
		}
	return -EMFILE;
}

void zv_forget_hidden_fd(int *keeper)
{
	for (int i = 0; i < ZV_MAX_EXTRA; i++)
		if (extra[i] == keeper) {
			extra[i] = NULL;
			nextra--;
		}
	extra_bounds();
}

int zv_hidden_fd_list(int *out, int n)
{
	int k = 0;
	for (int i = 0; i < ZV_FIXED_HIDDEN && k < n; i++)
		if (*fixed[i] >= 0)
			out[k++] = *fixed[i];
	for (int i = 0; i < ZV_MAX_EXTRA && k < n; i++)
		if (extra[i] && *extra[i] >= 0)
			out[k++] = *extra[i];
	return k;
}

/* Whether call nr names one of the kernel's fds (its row's fd arguments):
 * the guest sees those numbers as closed (EBADF). Only consulted while
 * hidden fds exist. */
int zv_names_kernel_fd(long nr, const long *a)
{
	unsigned fds = zv_row(nr)->fds;
	if ((fds & ZV_FDS_MMAP) && (a[3] & 0x20 /* MAP_ANONYMOUS */))
		return 0;
	for (int i = 0; i < 6; i++)
		if ((fds & 1u << i) && zv_is_kernel_fd((int)a[i]))
			return 1;
	return 0;
}

/* The layer: while hidden fds exist, calls that take fds fail with EBADF
 * for theirs. The fast path's direct host calls check it themselves. */
static int fdguard_sees(long nr) { return zv_row(nr)->fds; } /* while active */
static int fdguard_inline(void) { return 1; }

static long fdguard_call(struct zv_call *c)
{
	if (zv_hidden_fds_exist() && zv_names_kernel_fd(c->nr, c->a))
		return -EBADF;
	return zv_next(c);
}

ZV_LAYER(fdguard, 400) = {
	.name = "fdguard", .sees = fdguard_sees, .active = zv_hidden_fds_exist, .call = fdguard_call, .inline_host = fdguard_inline,
};

/* Where hidden fds go: up to the fd limit, but no higher than 1024, the
 * usual soft limit. A process's fd table is as long as its highest fd, and
 * fork copies it: at the top of a limit of a million, every fork and exec
 * would copy and allocate megabytes. */
long zv_hidden_fd_top(void)
{
	struct { uint64_t cur, max; } lim;
	if (zv_sys4(__NR_prlimit64, 0, 7 /* RLIMIT_NOFILE */, NULL, &lim) < 0)
		return -1;
	return lim.cur < 1024 ? (long)lim.cur : 1024;
}

/* Moves fd to the highest free number below zv_hidden_fd_top, so that the
 * guest's lowest-free-number allocations seldom meet it, with fd flags
 * (O_CLOEXEC or 0: a host exec carries it). Returns the new fd. */
int zv_hide_fd_flags(int fd, int flags)
{
	long top = zv_hidden_fd_top();
	if (top < 0)
		return fd;
	for (long n = top - 1; n > fd && n > top - 64; n--) {
		if (zv_sys3(__NR_fcntl, n, F_GETFD, 0) != -EBADF)
			continue;
		if (zv_sys3(__NR_dup3, fd, n, flags) == n) {
			zv_close(fd);
			return (int)n;
		}
	}
	return fd;
}

int zv_hide_fd(int fd) { return zv_hide_fd_flags(fd, 0); }

/* The guest wants number fd: give ours a new one, or drop it if none is free. */
static void evict(int fd)
{
	int *slot = hidden_slot(fd);
	if (!slot)
		return;
	int cloexec = (zv_sys3(__NR_fcntl, fd, F_GETFD, 0) & FD_CLOEXEC) != 0; /* (kept as it was) */
	long n = zv_sys3(__NR_fcntl, fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 3);
	if (n >= 0 && n != fd) {
		long hidden = zv_hide_fd_flags((int)n, cloexec ? O_CLOEXEC : 0);
		*slot = (int)hidden;
	} else {
		*slot = -1;
	}
	zv_close(fd);
	extra_bounds();
}

long zv_sys_close(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	if (zv_is_kernel_fd((int)a[0]))
		return -EBADF;
	return zv_host_call(t, __NR_close, a[0], 0, 0, 0, 0, 0);
}

/* close_range over the guest's fds only: the range is cut around ours. */
long zv_sys_close_range(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	unsigned lo = (unsigned)a[0], hi = (unsigned)a[1];
	unsigned flags = (unsigned)a[2];
	if (lo > hi)
		return -EINVAL;
	int ks[ZV_FIXED_HIDDEN + ZV_MAX_EXTRA];
	int nk = zv_hidden_fd_list(ks, ZV_FIXED_HIDDEN + ZV_MAX_EXTRA);
	for (int i = 0; i < nk; i++) /* ascending */
		for (int j = i + 1; j < nk; j++)
			if (ks[j] < ks[i]) {
				int x = ks[i];
				ks[i] = ks[j];
				ks[j] = x;
			}
	unsigned long from = lo; /* 64-bit: one past UINT_MAX must not wrap */
	long r = 0;
	for (int i = 0; i < nk; i++) {
		if (ks[i] < 0 || (unsigned)ks[i] < from || (unsigned)ks[i] > hi)
			continue;
		if ((unsigned)ks[i] > from)
			r = zv_host_call(t, __NR_close_range, from, ks[i] - 1, flags, 0, 0, 0);
		if (r < 0)
			return r;
		from = (unsigned long)ks[i] + 1;
	}
	if (from <= hi)
		r = zv_host_call(t, __NR_close_range, from, hi, flags, 0, 0, 0);
	return r;
}

long zv_sys_dup2(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	if (zv_is_kernel_fd((int)a[0]))
		return -EBADF;
	if (zv_is_kernel_fd((int)a[1]) && a[0] != a[1])
		evict((int)a[1]);
	return zv_host_call(t, nr, a[0], a[1], a[2], 0, 0, 0);
}

/* Whether a getdents64 buffer (n bytes) names one of the kernel's fds. */
static int names_kernel_fd(const char *buf, long n)
{
	for (long off = 0; off < n;) {
		unsigned long fd;
		if (zv_parse_ulong(buf + off + 19, &fd) == 0 && zv_is_kernel_fd((int)fd))
			return 1;
		off += *(const unsigned short *)(buf + off + 16);
	}
	return 0;
}

/* Listing /proc/<pid>/fd must not show the kernel's fds. */
long zv_sys_getdents64(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long r = zv_host_call(t, __NR_getdents64, a[0], a[1], a[2], 0, 0, 0);
	if (r <= 0 || !zv_hidden_fds_exist() || !names_kernel_fd((const char *)a[1], r))
		return r; /* no name to hide: spare the readlink (most directories) */
	char link[64], path[32];
	zv_snprintf(path, sizeof path, "/proc/self/fd/%d", (int)a[0]);
	long n = zv_sys4(__NR_readlinkat, AT_FDCWD, path, link, sizeof link - 1);
	if (n <= 0)
		return r;
	link[n] = 0;
	if (!zv_startswith(link, "/proc/") || n < 4 || zv_strcmp(link + n - 3, "/fd") != 0)
		return r;
	char *buf = (char *)a[1];
	long out = 0;
	for (long off = 0; off < r;) {
		unsigned short reclen = *(unsigned short *)(buf + off + 16);
		const char *name = buf + off + 19;
		unsigned long fd;
		int hide = zv_parse_ulong(name, &fd) == 0 && zv_is_kernel_fd((int)fd);
		if (!hide) {
			if (out != off)
				memmove(buf + out, buf + off, reclen);
			out += reclen;
		}
		off += reclen;
	}
	return out;
}

/* chroot: zvisor starts a program's execve through /proc/self/exe, which a
 * new root may lack. So before the first chroot the kernel keeps its own
 * executable open (a hidden O_PATH fd, carried across execve) and execs
 * through it from then on. */
long zv_sys_chroot(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	int opened = -1;
	/* A CLONE_VM child that is not a thread shares zv_proc with its
	 * parent but not its fd table: what it opens is its own. */
	int vm_child = !t->is_thread;
	if (zv_self_fd(t) < 0) {
		long fd = zv_openat(AT_FDCWD, "/proc/self/exe", O_PATH, 0);
		if (fd >= 0)
			opened = zv_hide_fd((int)fd); /* high, out of the guest's way */
	}
	long r = zv_host_call(t, __NR_chroot, a[0], 0, 0, 0, 0, 0);
	if (opened >= 0) {
		if (r != 0) {
			zv_close(opened);
		} else if (vm_child) {
			t->own_self_fd = opened + 1;
		} else {
			zv_proc.self_fd = opened;
			zv_layers_fold(); /* fd calls now check for it */
		}
	}
	return r;
}
