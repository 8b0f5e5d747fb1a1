/* The running program's write denial (ETXTBSY), between hosted processes.
 * The host denies writes only to its own executable, zvisor, so each image
 * marks its program file itself: an OFD read lock on the file's last byte
 * (OFFSET_MAX), owned by a mapping of the file that lives in the kernel's
 * window (no fd: the guest's fd table stays as it is). The lock goes with
 * the last reference to that open file description: when the slot's
 * mapping is replaced by the next image's, or the mm goes (the host's
 * execve, exit, any death); a fork child's copy of the mapping shares it,
 * as its copy of the exe_file keeps the host's denial. An open for writing
 * or truncating of a file with an execute bit asks the host for that lock
 * (F_OFD_GETLK for a write lock on the byte) and fails with ETXTBSY where
 * some hosted process holds it. The guest's own locks never see it: its
 * F_GETLK and F_OFD_GETLK are answered around it (zv_sys_fcntl), and
 * procview leaves it out of /proc/locks. */
#include "zvisor.h"
#include "sys/txtbusy.h"
#include "sys/layer.h"
#include "lib/kmem.h"
#include "lib/syscall.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "sys/procself.h"
#include <linux/fcntl.h>
#include <linux/openat2.h>
#include <linux/mman.h>
#include <asm/stat.h>

#define TXT_BYTE 0x7fffffffffffffffL /* OFFSET_MAX: no file has bytes there */
#define S_IFMT_ 0170000
#define S_IFREG_ 0100000
#define O_TMPFILE_FLAG_ 020000000 /* __O_TMPFILE: a new unnamed file */

struct flock_ {
	short l_type, l_whence;
	long l_start, l_len;
	int l_pid;
};

#define F_CREATED_QUERY_ 1028 /* F_LINUX_SPECIFIC_BASE + 4 */
/* The host answers F_CREATED_QUERY, until it says otherwise. */
static int created_query = 1;

/* The page of the window that maps the program file (0: none yet). A fork
 * child inherits it; a CLONE_VM child shares it but execs on the host. */
static uint64_t slot;

void zv_txt_hold(int fd)
{
	if (!slot) {
		void *p = zv_kmap(4096, 4096, -1);
		if (zv_is_err((long)p))
			return;
		slot = (uint64_t)p;
	}
	/* The mapping keeps the open file description, and so the lock. */
	void *m = zv_mmap((void *)slot, 4096, PROT_NONE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd, 0);
	if ((uint64_t)m != slot) { /* this image holds no mark, nor the last one's */
		zv_mmap((void *)slot, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
		return;
	}
	struct flock_ fl = { .l_type = F_RDLCK, .l_whence = 0 /* SEEK_SET */, .l_start = TXT_BYTE, .l_len = 1 };
	zv_sys3(__NR_fcntl, fd, F_OFD_SETLK, &fl);
}

static int slot_file(const struct zv_map *m, void *path)
{
	if (m->lo != slot)
		return 0;
	zv_strlcpy(path, m->name, ZV_PATH_MAX);
	return 1;
}

/* A restored process: its memory has the slot's mapping again (the
 * checkpoint saw a file mapping there), but the lock went with the old
 * process. The file is marked anew through a mapping of its own. */
void zv_txt_restored(void)
{
	static char path[ZV_PATH_MAX];
	if (!slot || zv_maps_each(slot_file, path) != 1 || path[0] != '/')
		return;
	long fd = zv_sys3(__NR_open, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	zv_txt_hold((int)fd);
	zv_close((int)fd);
}

int zv_txt_is_mark(short type, long start)
{
	return type == F_RDLCK && start == TXT_BYTE;
}

/* Whether the file open as fd is some hosted process's running program:
 * the mark is there and the file has an execute bit (a mark on a file
 * that never ran cannot deny another user's writes to it). */
static int busy(int fd)
{
	struct flock_ fl = { .l_type = F_WRLCK, .l_whence = 0, .l_start = TXT_BYTE, .l_len = 1 };
	if (zv_sys3(__NR_fcntl, fd, F_OFD_GETLK, &fl) < 0 || !zv_txt_is_mark(fl.l_type, fl.l_start))
		return 0;
	struct stat st;
	return zv_sys2(__NR_fstat, fd, &st) == 0 && (st.st_mode & S_IFMT_) == S_IFREG_ && (st.st_mode & 0111);
}

/* The open's flags (-1: the host's call as it is). */
static long open_flags(long nr, const long *a, struct open_how *how)
{
	switch (nr) {
	case __NR_creat: return O_CREAT | O_WRONLY | O_TRUNC;
	case __NR_open: return (long)(unsigned)a[1]; /* an int to the host */
	case __NR_openat: return (long)(unsigned)a[2];
	case __NR_openat2:
		/* another size: the host's own (its extensions must be zero, or E2BIG, EFAULT) */
		if ((size_t)a[3] != sizeof *how)
			return -1;
		if ((uint64_t)a[2] >= ZV_KWIN_START && (uint64_t)a[2] < ZV_KWIN_END)
			memcpy(how, (const void *)a[2], sizeof *how); /* the kernel's (fsview's) */
		else if (zv_peek(how, (uint64_t)a[2], sizeof *how) < 0)
			return -1;
		return (long)how->flags;
	}
	return -1;
}

/* Whether an open with these flags can meet a running program: one that
 * writes or truncates an existing file (O_PATH, O_TMPFILE and O_CREAT with
 * O_EXCL cannot). */
static int may_meet(long fl)
{
	if (fl < 0 || (fl & (O_PATH | O_TMPFILE_FLAG_)) || (fl & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return 0;
	int acc = (int)(fl & O_ACCMODE);
	return acc == O_WRONLY || acc == O_RDWR || (fl & O_TRUNC);
}

/* The same open with other flags (creat becomes open). */
static long open_as(struct zv_thread *t, long nr, const long *a, long fl, struct open_how *how)
{
	switch (nr) {
	case __NR_creat: return zv_host_call(t, __NR_open, a[0], fl, a[1], 0, 0, 0);
	case __NR_open: return zv_host_call(t, nr, a[0], fl, a[2], 0, 0, 0);
	case __NR_openat: return zv_host_call(t, nr, a[0], a[1], fl, a[3], 0, 0);
	}
	struct open_how h = *how; /* openat2, of the size the host knows */
	h.flags = (uint64_t)fl;
	return zv_host_call(t, nr, a[0], a[1], (long)&h, sizeof h, 0, 0);
}

long zv_txt_open(struct zv_thread *t, long nr, const long *a)
{
	struct open_how how;
	long fl = open_flags(nr, a, &how);
	if (!may_meet(fl))
		goto plain;
	/* A new file cannot be running and takes no truncation: an open with
	 * O_CREAT and O_TRUNC that creates it is the whole call. The host says
	 * whether this one did (F_CREATED_QUERY, Linux 6.12); an older host is
	 * asked with O_EXCL first (EEXIST: an existing file, opened below; any
	 * other error is the call's own), a path walk more. */
	int creates = (fl & O_TRUNC) && (fl & O_CREAT);
	if (creates && !created_query) {
		long r = open_as(t, nr, a, fl | O_EXCL, &how);
		if (r >= 0)
			return r;
		if (r != -EEXIST)
			goto plain;
	}
	/* Opened without truncating, asked, then truncated as the open would. */
	long fd = open_as(t, nr, a, fl & ~(long)O_TRUNC, &how);
	if (fd < 0)
		return fd;
	if (creates && created_query) {
		long made = zv_sys3(__NR_fcntl, fd, F_CREATED_QUERY_, 0);
		if (made == 1)
			return fd;
		if (made < 0)
			created_query = 0; /* not known this once: truncated as an old file */
	}
	if (busy((int)fd)) {
		zv_close((int)fd);
		return -ETXTBSY;
	}
	if (fl & O_TRUNC) {
		long e;
		int acc = (int)(fl & O_ACCMODE);
		if (acc == O_WRONLY || acc == O_RDWR) {
			e = zv_sys2(__NR_ftruncate, fd, 0);
		} else {
			char p[32];
			zv_snprintf(p, sizeof p, "/proc/self/fd/%d", (int)fd);
			e = zv_sys2(__NR_truncate, p, 0);
		}
		if (e < 0 && e != -EINVAL) { /* EINVAL: not a regular file, whose O_TRUNC does nothing */
			zv_close((int)fd);
			return e;
		}
	}
	return fd;
plain:
	return zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

long zv_txt_truncate(struct zv_thread *t, const long *a)
{
	struct stat st;
	const char *p = (const char *)a[0];
	if (!p || a[1] < 0 || zv_sys4(__NR_newfstatat, AT_FDCWD, p, &st, 0) < 0 ||
	    (st.st_mode & S_IFMT_) != S_IFREG_ || !(st.st_mode & 0111))
		return zv_host_call(t, __NR_truncate, a[0], a[1], 0, 0, 0, 0);
	/* Opened for writing, as truncate writes: the same permission checks
	 * and errors first (EACCES, EROFS, EPERM), the same lease break. */
	long fd = zv_host_call(t, __NR_open, a[0], O_WRONLY | O_CLOEXEC | O_NOCTTY, 0, 0, 0, 0);
	if (fd < 0)
		return zv_host_call(t, __NR_truncate, a[0], a[1], 0, 0, 0, 0); /* its own errno */
	long r = busy((int)fd) ? -ETXTBSY : zv_host_call(t, __NR_ftruncate, fd, a[1], 0, 0, 0, 0);
	zv_close((int)fd);
	return r;
}

long zv_sys_truncate(struct zv_call *c)
{
	const char *p = (const char *)c->a[0];
	if (p && zv_bad_guest_ptr((uint64_t)p))
		return -EFAULT;
	long a[2] = { (long)zv_translate_path(p), c->a[1] }; /* /proc/self/exe: the program */
	return zv_txt_truncate(c->t, a);
}

/* F_GETLK and F_OFD_GETLK as if no mark existed: a mark the host reports
 * is asked past (the request's range up to the byte before it), so a lock
 * of the guest's own behind it is still found. */
long zv_sys_fcntl(struct zv_call *c)
{
	long *a = c->a;
	struct flock_ q, res;
	if (((unsigned)a[1] != F_GETLK && (unsigned)a[1] != F_OFD_GETLK) || zv_peek(&q, (uint64_t)a[2], sizeof q) < 0)
		return zv_host_call(c->t, __NR_fcntl, a[0], a[1], a[2], 0, 0, 0);
	res = q;
	long r = zv_host_call(c->t, __NR_fcntl, a[0], a[1], (long)&res, 0, 0, 0);
	if (r < 0)
		return r;
	if (zv_txt_is_mark(res.l_type, res.l_start)) {
		long at = q.l_start; /* where the request starts */
		if (q.l_whence == 1 /* SEEK_CUR */) {
			at += zv_sys3(__NR_lseek, a[0], 0, 1);
		} else if (q.l_whence == 2 /* SEEK_END */) {
			struct stat st;
			at = zv_sys2(__NR_fstat, a[0], &st) < 0 ? TXT_BYTE : at + st.st_size;
		}
		res = q;
		res.l_type = F_UNLCK;
		if (at >= 0 && at < TXT_BYTE) {
			struct flock_ b = q;
			b.l_whence = 0;
			b.l_start = at;
			b.l_len = TXT_BYTE - at;
			if ((r = zv_host_call(c->t, __NR_fcntl, a[0], a[1], (long)&b, 0, 0, 0)) < 0)
				return r;
			if (b.l_type != F_UNLCK)
				res = b;
		}
	}
	return zv_guest_copy((void *)a[2], &res, sizeof res, (uint64_t)a[2]) < 0 ? -EFAULT : r;
}
