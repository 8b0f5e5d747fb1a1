/* The process's fds for a checkpoint: listed from /proc/self/fd, each with
 * its fstat, its link, its flags and offset (fdinfo), and a first
 * classification by what it is. */
#include "cr/fdent.h"
#include "cr/procfile.h"
#include "cr/census.h"
#include "sys/procself.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/devnum.h"
#include <linux/fcntl.h>

#define TIOCGPTN_ 0x80045430
#define INFO_SIZE (4UL << 20) /* an epoll set's fdinfo has one line per target */

long zv_cr_fdinfo(struct zv_cr_ents *s, int fd)
{
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	return zv_cr_read_file(path, s->info, s->info_size);
}

/* Room for one more ent in s. */
static int grow(struct zv_cr_ents *s)
{
	if ((s->n + 1) * sizeof *s->e <= s->size)
		return 0;
	size_t size = s->size ? s->size * 2 : 64 * sizeof *s->e;
	struct zv_cr_ent *e = zv_cr_kalloc(size);
	if (!e)
		return -ENOMEM;
	if (s->n)
		memcpy(e, s->e, s->n * sizeof *s->e);
	zv_cr_kfree(s->e, s->size);
	s->e = e;
	s->size = size;
	return 0;
}

/* The fd numbers in /proc/self/fd but dirfd, skip and the kernel's own
 * /proc/self files (made anew after a restore), ascending, into s. */
static long list_fds(struct zv_cr_ents *s, int skip, int skip2)
{
	long dfd = zv_openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return dfd;
	char buf[4096];
	long r;
	while ((r = zv_sys3(__NR_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < r;) {
			const char *name = buf + off + 19; /* struct linux_dirent64's d_name */
			off += *(unsigned short *)(buf + off + 16);
			unsigned long fd;
			if (zv_parse_ulong(name, &fd) < 0 || (long)fd == dfd || (long)fd == skip || (long)fd == skip2 ||
			    zv_procself_is_kept((int)fd))
				continue;
			if (grow(s) < 0) {
				zv_close((int)dfd);
				return -ENOMEM;
			}
			memset(&s->e[s->n], 0, sizeof *s->e);
			s->e[s->n++].fd = (int)fd;
		}
	}
	zv_close((int)dfd);
	if (r < 0)
		return r;
	for (unsigned i = 1; i < s->n; i++) /* insertion sort: already nearly sorted */
		for (unsigned j = i; j > 0 && s->e[j - 1].fd > s->e[j].fd; j--) {
			int t = s->e[j].fd;
			s->e[j].fd = s->e[j - 1].fd;
			s->e[j - 1].fd = t;
		}
	return 0;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = zv_strlen(s), m = zv_strlen(tail);
	return n >= m && zv_strcmp(s + n - m, tail) == 0;
}

/* The character devices saved by path: major, minor. */
static const struct { unsigned major, minor; } devs[] = { { 1, 3 }, { 1, 5 }, { 1, 7 }, { 1, 8 }, { 1, 9 }, { 5, 0 } };
const char *const zv_cr_dev_names[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty" };

int zv_cr_dev_index(unsigned long rdev)
{
	unsigned major = zv_dev_major(rdev), minor = zv_dev_minor(rdev);
	for (unsigned i = 0; i < sizeof devs / sizeof devs[0]; i++)
		if (devs[i].major == major && devs[i].minor == minor)
			return (int)i;
	return -1;
}

static int sockopt(int fd, int opt)
{
	int v = -1, len = sizeof v;
	zv_sys5(__NR_getsockopt, fd, 1 /* SOL_SOCKET */, opt, &v, &len);
	return v;
}

/* A listening TCP, TCP6 (or MPTCP: Go listens so) or Unix stream (or
 * seqpacket) socket: LISTEN; a Unix socket or a TCP one otherwise:
 * SOCKET; a UDP one: UDP; else 0 (why: what it is). */
static int socket_kind(int fd, const char **why)
{
	int domain = sockopt(fd, 39 /* SO_DOMAIN */), type = sockopt(fd, 3 /* SO_TYPE */);
	int inet = domain == 2 || domain == 10, proto = inet ? sockopt(fd, 38 /* SO_PROTOCOL */) : 0;
	int tcp = inet && type == 1 /* SOCK_STREAM */ && proto == 6, mptcp = inet && type == 1 && proto == 262;
	*why = "a socket other than a Unix, TCP or UDP one";
	if (inet && type == 2 /* SOCK_DGRAM */ && proto == 17)
		return ZV_CRFD_UDP;
	if (sockopt(fd, 30 /* SO_ACCEPTCONN */) == 1)
		return tcp || mptcp || (domain == 1 && (type == 1 || type == 5 /* SOCK_SEQPACKET */)) ? ZV_CRFD_LISTEN : 0;
	if (mptcp)
		*why = "an MPTCP connection (its listening socket is saved, not its connections)";
	return tcp || domain == 1 ? ZV_CRFD_SOCKET : 0;
}

static void classify_anon(struct zv_cr_ent *e, const char *what)
{
	static const struct { const char *name; int kind; const char *why; } anon[] = {
		{ "[eventfd]", ZV_CRFD_EVENTFD, 0 },
		{ "[timerfd]", ZV_CRFD_TIMERFD, 0 },
		{ "[eventpoll]", ZV_CRFD_EPOLL, 0 },
		{ "[signalfd]", ZV_CRFD_SIGNALFD, 0 },
		{ "[io_uring]", 0, "io_uring cannot be saved" },
		{ "inotify", ZV_CRFD_INOTIFY, 0 },
		{ "[fanotify]", 0, "a fanotify instance cannot be saved" },
		{ "[pidfd]", ZV_CRFD_PIDFD, 0 },
		{ "[userfaultfd]", 0, "a userfaultfd cannot be saved" },
	};
	for (unsigned i = 0; i < sizeof anon / sizeof anon[0]; i++)
		if (zv_strcmp(what, anon[i].name) == 0) {
			e->kind = anon[i].kind;
			e->why = anon[i].why;
			return;
		}
	e->why = "this kind of file cannot be saved";
}

static void classify(struct zv_cr_ent *e)
{
	const char *l = e->link;
	unsigned mode = e->st.st_mode & ZV_S_IFMT;
	e->kind = 0;
	if (zv_startswith(l, "pipe:[")) {
		e->kind = ZV_CRFD_PIPE;
	} else if (zv_startswith(l, "socket:[")) {
		const char *why;
		e->kind = socket_kind(e->fd, &why);
		if (!e->kind)
			e->why = why;
	} else if (zv_startswith(l, "anon_inode:")) {
		classify_anon(e, l + 11);
	} else if (zv_startswith(l, "pidfd:")) {
		e->kind = ZV_CRFD_PIDFD;
	} else if (l[0] != '/') {
		e->why = "this kind of file cannot be saved";
	} else if (zv_startswith(l, "/memfd:") && ends_with(l, " (deleted)") && mode == ZV_S_IFREG) {
		e->kind = ZV_CRFD_MEMFD;
	} else if (zv_startswith(l, "/proc/") && l[6] >= '0' && l[6] <= '9') {
		e->why = "a file of a process's /proc directory, which another pid would name";
	} else if (ends_with(l, " (deleted)") && e->st.st_nlink == 0) { /* not a name that ends so */
		if (mode == ZV_S_IFREG && !(e->flags & O_PATH))
			e->kind = ZV_CRFD_DELETED; /* saved with its contents */
		else
			e->why = "the file was deleted";
	} else if (e->flags & O_PATH) {
		e->kind = ZV_CRFD_OPATH;
	} else if (mode == ZV_S_IFREG) {
		e->kind = ZV_CRFD_FILE;
	} else if (mode == ZV_S_IFDIR) {
		e->kind = ZV_CRFD_DIR;
	} else if (mode == ZV_S_IFCHR) {
		if (zv_cr_dev_index(e->st.st_rdev) >= 0)
			e->kind = ZV_CRFD_CHR;
		else if (zv_cr_is_ptmx(e->st.st_rdev))
			e->kind = zv_sys3(__NR_ioctl, e->fd, TIOCGPTN_, &e->pty) == 0 ? ZV_CRFD_PTM : 0;
		else if ((e->pty = (int)zv_cr_pts_index(e->st.st_rdev)) >= 0)
			e->kind = ZV_CRFD_PTS; /* if its master is the saved processes' (cr/fds.c) */
		if (!e->kind)
			e->why = "a device other than /dev/null, zero, full, random, urandom and tty";
	} else if (mode == ZV_S_IFIFO) {
		e->kind = ZV_CRFD_FIFO;
	} else {
		e->why = "this kind of file cannot be saved";
	}
}

static long load_one(struct zv_cr_ents *s, struct zv_cr_ent *e)
{
	if (!e->inflight)
		e->recno = e->fd;
	long r = zv_sys3(__NR_fcntl, e->fd, F_GETFD, 0);
	if (r < 0)
		return r;
	e->fdflags = (uint32_t)r;
	r = zv_sys2(__NR_fstat, e->fd, &e->st);
	if (r < 0)
		return r;
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/self/fd/%d", e->fd);
	r = zv_sys4(__NR_readlinkat, AT_FDCWD, path, e->link, sizeof e->link - 1);
	if (r < 0)
		return r;
	e->link[r] = 0;
	r = zv_cr_fdinfo(s, e->fd);
	if (r < 0)
		return r;
	const char *v = zv_cr_field(s->info, "pos:");
	e->pos = v ? zv_cr_dec(v, NULL) : 0;
	v = zv_cr_field(s->info, "flags:");
	e->flags = v ? (uint32_t)zv_cr_oct(v, NULL) & ~(uint32_t)O_CLOEXEC : 0;
	classify(e);
	if (e->kind == ZV_CRFD_PIDFD) {
		v = zv_cr_field(s->info, "Pid:");
		e->pid = v ? (int)zv_cr_dec(v, NULL) : 0;
		if (!v || !e->pid)
			e->kind = 0, e->why = "a pidfd of a process in another pid namespace";
		else if (e->flags & O_EXCL) /* PIDFD_THREAD */
			e->kind = 0, e->why = "a pidfd of a thread cannot be saved";
	}
	return 0;
}

long zv_cr_ents_load(struct zv_cr_out *o, struct zv_cr_ents *s, int skip, int skip2)
{
	*s = (struct zv_cr_ents){ 0 };
	s->info_size = INFO_SIZE;
	s->info = zv_cr_kalloc(s->info_size);
	if (!s->info)
		return zv_cr_refuse(o, "out of memory listing the file descriptors");
	long r = list_fds(s, skip, skip2);
	if (r < 0) {
		zv_cr_ents_free(s);
		return zv_cr_refuse(o, "cannot list /proc/self/fd: %s", zv_strerror((int)-r));
	}
	for (unsigned i = 0; i < s->n; i++) {
		r = load_one(s, &s->e[i]);
		if (r < 0) {
			int fd = s->e[i].fd;
			zv_cr_ents_free(s);
			return zv_cr_refuse(o, "fd %d: cannot be examined: %s", fd, zv_strerror((int)-r));
		}
	}
	return 0;
}

long zv_cr_ents_add_inflight(struct zv_cr_out *o, struct zv_cr_ents *s, int fd)
{
	if (grow(s) < 0) {
		zv_close(fd);
		return zv_cr_refuse(o, "out of memory listing the files in flight");
	}
	struct zv_cr_ent *e = &s->e[s->n];
	memset(e, 0, sizeof *e);
	e->fd = fd;
	e->inflight = 1;
	e->recno = ZV_CR_INFLIGHT + (int)s->ninflight;
	long r = load_one(s, e);
	if (r < 0) {
		zv_close(fd);
		return zv_cr_refuse(o, "a file in flight cannot be examined: %s", zv_strerror((int)-r));
	}
	s->ninflight++;
	return s->n++;
}

/* Whether fds a and b share one open file description (dup): kcmp, or,
 * where it is missing or forbidden (container seccomp profiles), whether
 * flipping O_NONBLOCK on a shows on b: the guest is frozen, and the flag
 * is put back at once. */
int zv_cr_same_description(int a, int b)
{
	static int no_kcmp;
	long pid = zv_getpid();
	if (!no_kcmp) {
		long r = zv_sys5(__NR_kcmp, pid, pid, 0 /* KCMP_FILE */, a, b);
		if (r >= 0)
			return r == 0;
		no_kcmp = 1;
	}
	long fa = zv_sys3(__NR_fcntl, a, F_GETFL, 0), fb = zv_sys3(__NR_fcntl, b, F_GETFL, 0);
	if (fa < 0 || fb < 0 || ((fa ^ fb) & O_NONBLOCK) || (fa & O_PATH) ||
	    zv_sys3(__NR_fcntl, a, F_SETFL, fa ^ O_NONBLOCK) < 0)
		return 0;
	long now = zv_sys3(__NR_fcntl, b, F_GETFL, 0);
	zv_sys3(__NR_fcntl, a, F_SETFL, fa);
	return now >= 0 && ((now ^ fb) & O_NONBLOCK);
}

void zv_cr_ents_free(struct zv_cr_ents *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		zv_cr_buf_free(&s->e[i].sk.queue);
		if (s->e[i].inflight)
			zv_close(s->e[i].fd);
	}
	zv_cr_kfree(s->e, s->size);
	zv_cr_kfree(s->info, s->info_size);
	*s = (struct zv_cr_ents){ 0 };
}

void zv_cr_extra_free(struct zv_cr_extra *x)
{
	if (x->size)
		zv_cr_kfree(x->p, x->size);
	*x = (struct zv_cr_extra){ 0 };
}
