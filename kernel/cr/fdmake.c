/* Each kind of saved fd made again at restore (cr/fdimage.h's records)
 * that is a process's own (pipes and sockets are objects: cr/objects.c):
 * files reopened by path and checked against the checkpoint, memfds,
 * eventfd, timerfd, signalfd, empty epoll sets (filled by cr/fds_restore.c
 * once their targets exist), and the restorer's files standing for what
 * led outside (fds 0-2, --inherit-fd). */
#include "cr/fdrestore.h"
#include "cr/resutil.h"
#include "cr/cr.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include <linux/timerfd.h>
#include <asm/stat.h>

#define EFD_SEMAPHORE_ 1
#define CLONE_PIDFD_ 0x1000
#define NSEC 1000000000LL

#define fail zv_cr_fd_fail

static long make_path(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	const char *path = zv_cr_rec_extra(r);
	uint32_t flags = (r->flags & ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC | O_NOCTTY;
	long fd = zv_openat(AT_FDCWD, path, (int)flags, 0);
	if (fd == -EPERM && (flags & O_NOATIME))
		fd = zv_openat(AT_FDCWD, path, (int)(flags & ~(uint32_t)O_NOATIME), 0);
	if (fd < 0)
		return zv_cr_in_refuse(c->in, "fd %d (%s): cannot be opened again: %s", r->fd, path,
				       zv_strerror((int)-fd));
	if (r->kind == ZV_CRFD_FILE) {
		struct stat st;
		zv_sys2(__NR_fstat, fd, &st);
		/* A file only appended to (a log, `>> out`) cannot show the
		 * process what others added: it may have grown. */
		int append_only = (r->flags & (O_APPEND | 3)) == (O_APPEND | O_WRONLY);
		int same = st.st_size == r->u.file.size && (int64_t)st.st_mtime == r->u.file.mtime_sec &&
			   (int64_t)st.st_mtime_nsec == r->u.file.mtime_nsec;
		if (!same && !(append_only && st.st_size >= r->u.file.size)) {
			zv_close((int)fd);
			if (st.st_size == r->u.file.size)
				return zv_cr_in_refuse(c->in, "fd %d (%s): the file changed since the checkpoint "
						       "(written to: its mtime moved)", r->fd, path);
			return zv_cr_in_refuse(c->in, "fd %d (%s): the file changed since the checkpoint "
					       "(size %lu, now %lu)", r->fd, path,
					       (unsigned long)r->u.file.size, (unsigned long)st.st_size);
		}
	}
	if ((r->kind == ZV_CRFD_FILE || r->kind == ZV_CRFD_DIR) && r->pos &&
	    zv_sys3(__NR_lseek, fd, r->pos, 0 /* SEEK_SET */) != r->pos) {
		zv_close((int)fd);
		return zv_cr_in_refuse(c->in, "fd %d (%s): cannot seek to %ld", r->fd, path, (long)r->pos);
	}
	return fd;
}

/* A deleted file made again in the directory it was in: at its old path,
 * unlinked at once (its /proc/self/fd link reads as before), or, when
 * that name is taken or it never had one (O_TMPFILE's "#ino"), as an
 * O_TMPFILE; its contents, mode and mtime, its description opened with
 * the record's flags through /proc/self/fd. */
static long make_deleted(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	const char *path = zv_cr_rec_extra(r);
	const char *data = path + r->u.deleted.pathlen;
	const char *slash = zv_strrchr(path, '/');
	char dir[4096];
	size_t dl = slash > path ? (size_t)(slash - path) : 1;
	if (dl >= sizeof dir)
		return fail(c, r, "its directory's name is too long", -ENAMETOOLONG);
	memcpy(dir, path, dl);
	dir[dl] = 0;
	long fd = slash[1] == '#' ? -EEXIST : zv_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && zv_sys1(__NR_unlink, path) < 0) {
		zv_close((int)fd);
		fd = -EEXIST;
	}
	if (fd < 0)
		fd = zv_openat(AT_FDCWD, dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(c, r, "cannot make the deleted file again in its directory", fd);
	long e = 0;
	for (uint64_t done = 0; e >= 0 && done < r->u.deleted.size; done += (uint64_t)e)
		if ((e = zv_sys4(__NR_pwrite64, fd, data + done, r->u.deleted.size - done, done)) == 0)
			e = -EIO;
	char self[32];
	zv_snprintf(self, sizeof self, "/proc/self/fd/%d", (int)fd);
	uint32_t flags = (r->flags & ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC | O_TMPFILE | O_NOFOLLOW)) | O_CLOEXEC | O_NOCTTY;
	long d = e < 0 ? e : zv_openat(AT_FDCWD, self, (int)flags, 0);
	struct { int64_t sec, nsec; } times[2] = { { 0, 1073741822L /* UTIME_OMIT */ },
						   { r->u.deleted.mtime_sec, r->u.deleted.mtime_nsec } };
	zv_sys2(__NR_fchmod, fd, r->u.deleted.mode);
	zv_sys4(__NR_utimensat, fd, NULL, times, 0);
	zv_close((int)fd);
	if (d < 0)
		return fail(c, r, "cannot make the deleted file again", d);
	if (r->pos && zv_sys3(__NR_lseek, d, r->pos, 0 /* SEEK_SET */) != r->pos) {
		zv_close((int)d);
		return fail(c, r, "cannot seek in the deleted file", -EINVAL);
	}
	return d;
}

/* A memfd with its name, contents, offset and seals (added last: a
 * sealed one could not be written). */
static long make_memfd(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	const char *name = zv_cr_rec_extra(r);
	const char *data = name + r->u.memfd.namelen;
	long fd = zv_sys2(__NR_memfd_create, name, 1 /* MFD_CLOEXEC */ | 2 /* MFD_ALLOW_SEALING */);
	if (fd < 0)
		return fail(c, r, "cannot make a memfd", fd);
	long e = zv_sys2(__NR_ftruncate, fd, r->u.memfd.size);
	for (uint64_t done = 0; e >= 0 && done < r->u.memfd.size; done += (uint64_t)e)
		if ((e = zv_sys4(__NR_pwrite64, fd, data + done, r->u.memfd.size - done, done)) == 0)
			e = -EIO;
	if (e >= 0 && r->pos)
		e = zv_sys3(__NR_lseek, fd, r->pos, 0);
	if (e >= 0 && r->u.memfd.seals)
		e = zv_sys3(__NR_fcntl, fd, F_ADD_SEALS, r->u.memfd.seals);
	if (e < 0) {
		zv_close((int)fd);
		return fail(c, r, "cannot fill the memfd again", e);
	}
	return fd;
}

static long make_eventfd(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	long fd = zv_sys2(__NR_eventfd2, 0, O_CLOEXEC | O_NONBLOCK | (r->u.eventfd.semaphore ? EFD_SEMAPHORE_ : 0));
	if (fd < 0)
		return fail(c, r, "cannot make an eventfd", fd);
	uint64_t v = r->u.eventfd.count;
	if (v && zv_write((int)fd, &v, 8) != 8) {
		zv_close((int)fd);
		return fail(c, r, "cannot set the eventfd's count", 0);
	}
	return fd;
}

/* A pidfd of a saved process, by its pid on the host now (the tree's
 * ids are known before any fd is made); of one already waited for, a
 * pidfd of a child made to end here and waited for at once. */
static long make_pidfd(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	if (r->u.pidfd.vpid > 0) {
		long fd = zv_sys2(__NR_pidfd_open, zv_cr_host_id(r->u.pidfd.vpid), 0);
		return fd < 0 ? fail(c, r, "cannot open a pidfd of its process", fd) : fd;
	}
	int fd = -1;
	long pid = zv_sys5(__NR_clone, CLONE_PIDFD_, 0, &fd, 0, 0); /* no exit signal */
	if (pid == 0)
		zv_sys1(__NR_exit, 0);
	if (pid < 0)
		return fail(c, r, "cannot make a pidfd of an ended process", pid);
	uint8_t si[128];
	zv_sys5(__NR_waitid, 1 /* P_PID */, pid, si, 4 /* WEXITED */ | 0x40000000 /* __WALL */, NULL);
	return fd;
}

struct its { int64_t isec, insec, vsec, vnsec; };

static long make_timerfd(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	long fd = zv_sys2(__NR_timerfd_create, r->u.timerfd.clockid, O_CLOEXEC);
	if (fd < 0)
		return fail(c, r, "cannot make a timerfd", fd);
	int64_t v = r->u.timerfd.value_ns, iv = r->u.timerfd.interval_ns;
	uint64_t ticks = r->u.timerfd.ticks;
	long e = 0;
	int flags = 0;
	if (v && (r->u.timerfd.settime_flags & TFD_TIMER_ABSTIME)) {
		/* An absolute timer keeps its cancel-on-set: the same distance
		 * from now, as a time on its clock. */
		struct { int64_t s, ns; } now;
		zv_sys2(__NR_clock_gettime, r->u.timerfd.clockid, &now);
		v += now.s * NSEC + now.ns;
		flags = (int)r->u.timerfd.settime_flags;
	}
	struct its its = { iv / NSEC, iv % NSEC, v / NSEC, v % NSEC };
	if (v)
		e = zv_sys4(__NR_timerfd_settime, fd, flags, &its, NULL);
	/* The expirations not yet read, after the setting (which clears
	 * them); without the ioctl, a disarmed timer's come as one at once. */
	if (e >= 0 && ticks && zv_sys3(__NR_ioctl, fd, TFD_IOC_SET_TICKS, &ticks) < 0 && !v) {
		struct its once = { 0, 0, 0, 1 };
		e = zv_sys4(__NR_timerfd_settime, fd, 0, &once, NULL);
	}
	if (e < 0) {
		zv_close((int)fd);
		return fail(c, r, "cannot set the timerfd", e);
	}
	return fd;
}

long zv_cr_make_fd(struct zv_cr_rctx *c, const struct zv_cr_fd *r, int *own)
{
	*own = 1;
	long fd;
	switch (r->kind) {
	case ZV_CRFD_FILE:
	case ZV_CRFD_DIR:
	case ZV_CRFD_OPATH:
	case ZV_CRFD_CHR:
		return make_path(c, r); /* its flags came with the open */
	case ZV_CRFD_STDIO:
		if (r->u.stdio < 0 || r->u.stdio > 2)
			return fail(c, r, "a damaged record", 0);
		if (c->stdio[r->u.stdio] >= 0) {
			/* The restorer's file: non-blocking if the original's
			 * was (a program relies on EAGAIN), else untouched (its
			 * O_APPEND is the restorer's). */
			fd = c->stdio[r->u.stdio];
			long fl = zv_sys3(__NR_fcntl, fd, F_GETFL, 0);
			if (fl >= 0 && (r->flags & O_NONBLOCK) && !(fl & O_NONBLOCK))
				zv_sys3(__NR_fcntl, fd, F_SETFL, fl | O_NONBLOCK);
			*own = 0;
			return fd;
		}
		fd = zv_openat(AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC, 0); /* the restorer has none */
		return fd < 0 ? fail(c, r, "cannot open /dev/null", fd) : fd;
	case ZV_CRFD_EXTERNAL:
		for (int i = 0; i < c->ninherit; i++)
			if (c->inherit[i][0] == r->u.stdio && c->inherit[i][1] >= 0) {
				*own = 0;
				return c->inherit[i][1];
			}
		return zv_cr_in_refuse(c->in, "fd %d leads outside: restore it with --inherit-fd %d (this process's fd %d "
				       "stands for it)", r->fd, r->u.stdio, r->u.stdio);
	case ZV_CRFD_EVENTFD:
		fd = make_eventfd(c, r);
		break;
	case ZV_CRFD_PIDFD:
		fd = make_pidfd(c, r);
		break;
	case ZV_CRFD_INOTIFY:
		fd = zv_cr_make_inotify(c, r);
		break;
	case ZV_CRFD_UDP:
		fd = zv_cr_make_udp(c, r);
		break;
	case ZV_CRFD_TIMERFD:
		fd = make_timerfd(c, r);
		break;
	case ZV_CRFD_SIGNALFD:
		fd = zv_sys4(__NR_signalfd4, -1, &r->u.sigmask, 8, O_CLOEXEC);
		if (fd < 0)
			return fail(c, r, "cannot make a signalfd", fd);
		break;
	case ZV_CRFD_EPOLL:
		fd = zv_sys1(__NR_epoll_create1, O_CLOEXEC);
		if (fd < 0)
			return fail(c, r, "cannot make an epoll set", fd);
		break;

	case ZV_CRFD_MEMFD:
		fd = make_memfd(c, r);
		break;
	case ZV_CRFD_DELETED:
		return make_deleted(c, r); /* its flags came with the open */
	default:
		return fail(c, r, "a record of an unknown kind", 0);
	}
	if (fd >= 0)
		zv_sys3(__NR_fcntl, fd, F_SETFL, r->flags & (O_APPEND | O_NONBLOCK));
	return fd;
}
