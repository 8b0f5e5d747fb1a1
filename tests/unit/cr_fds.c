/* Unit test of the checkpoint's fd and timer savers (kernel/cr/fds.c,
 * fds_restore.c, timers.c) in this process, with the image kept in memory
 * (zv_cr_put / zv_cr_get below stand in for cr/image.c): opens every kind
 * of fd the image holds, saves, closes them all, restores, and checks the
 * numbers, flags, offsets, pipe bytes, eventfd count, timerfds, epoll
 * membership, listening sockets accepting, locks, POSIX timers and itimers
 * firing, rlimits, umask and cwd; then what is refused, with its line. */
#include "cr/fdimage.h"
#include "cr/procfile.h"
#include "cr/resources.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "unit.h"

static const struct zv_cr_fdopts alone = { .session = -1 }; /* a process alone, no options */
#include <linux/fcntl.h>
#include <linux/eventpoll.h>
#include <linux/timerfd.h>
#include <asm/stat.h>

/* The image in memory. */
static struct img {
	char name[48];
	uint8_t *p;
	uint64_t len;
} img[64];
static unsigned nimg;
static struct zv_cr_out out;
static struct zv_cr_in in;

/* The core's map of thread ids (cr/restore.c): one process, no restore here. */
int zv_cr_thread_tid(int old) { return old; }
/* cr/pids.c's: no restore here, ids are the host's. */
long zv_cr_guest_group(long x) { return x; }
long zv_cr_guest_id(long x) { return x; }
long zv_cr_host_id(long x) { return x; }
/* cr/inotify_notes.c: no watch noted here. */
const char *zv_cr_inotify_path(uint64_t dev, uint64_t ino, int *dont_follow) { return NULL; }
int zv_procself_is_kept(int fd) { return 0; } /* sys/procself.c: the unit keeps none */
/* cr/freeze.c's and cr/treerestore.c's: nothing is killed or restored whole here. */
void zv_cr_note_reset(int fd) {}
int zv_cr_errfd;

long zv_cr_put(struct zv_cr_out *o, const char *name, const void *p, uint64_t len)
{
	struct img *s = &img[nimg++];
	zv_strlcpy(s->name, name, sizeof s->name);
	s->p = zv_kmap(len ? len : 1, 4096, -1);
	memcpy(s->p, p, len);
	s->len = len;
	return 0;
}

long zv_cr_refuse(struct zv_cr_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	zv_vsnprintf(o->why, sizeof o->why, fmt, ap);
	va_end(ap);
	return -1;
}

const void *zv_cr_get(struct zv_cr_in *i, const char *name, uint64_t *len)
{
	for (unsigned k = 0; k < nimg; k++)
		if (zv_strcmp(img[k].name, name) == 0) {
			*len = img[k].len;
			return img[k].p;
		}
	*len = 0;
	return NULL;
}

void zv_cr_release(const void *p, uint64_t len) {}

static void image_reset(void)
{
	for (unsigned k = 0; k < nimg; k++)
		zv_kunmap(img[k].p, img[k].len ? img[k].len : 1);
	nimg = 0;
	out.why[0] = in.why[0] = 0;
}

static const char *find(const char *s, const char *w)
{
	size_t n = zv_strlen(w);
	for (; *s; s++)
		if (zv_strncmp(s, w, n) == 0)
			return s;
	return NULL;
}

static long count_fds(void)
{
	long d = zv_openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY, 0);
	char buf[8192];
	long r, n = 0;
	while ((r = zv_sys3(__NR_getdents64, d, buf, sizeof buf)) > 0)
		for (long off = 0; off < r; off += *(unsigned short *)(buf + off + 16))
			n++;
	zv_close((int)d);
	return n;
}

static char dir[64];

static int at(int fd, const char *name, int flags)
{
	char p[128];
	zv_snprintf(p, sizeof p, "%s/%s", dir, name);
	return (int)zv_openat(AT_FDCWD, p, flags, 0644);
}

/* Moves fd to number want. */
static int to(int fd, int want)
{
	if (fd == want)
		return fd;
	long r = zv_sys3(__NR_dup3, fd, want, 0);
	zv_close(fd);
	return (int)r;
}

static long fdinfo(int fd, char *buf, size_t n)
{
	char p[48];
	zv_snprintf(p, sizeof p, "/proc/self/fdinfo/%d", fd);
	return zv_cr_read_file(p, buf, n);
}

struct its { int64_t isec, insec, vsec, vnsec; };
struct itv { int64_t isec, iusec, vsec, vusec; };
struct sin { uint16_t family, port; uint32_t addr; uint8_t zero[8]; };
struct sun { uint16_t family; char path[108]; };
struct sin6 { uint16_t family, port; uint32_t flow; uint8_t addr[16]; uint32_t scope; };
struct ksigevent { uint64_t value; int32_t signo, notify; int32_t tid; int32_t pad[11]; };
struct flk { short type, whence; int64_t start, len; int pid; };

enum {
	F_FILE = 3, F_DUP = 4, F_APPEND = 5, F_DIR = 6, F_NULL = 7, F_ZERO = 8, F_OPATH = 9,
	F_PR = 10, F_PW = 11, F_EV = 12, F_EVS = 13, F_TFD = 14, F_TFD2 = 15, F_EP = 16,
	F_TCP = 17, F_UNIX = 18, F_SIG = 19, F_OUT = 20 /* a dup of stdout */, F_FLOCK = 21, F_TCP6 = 22, F_MEMFD = 23, F_TFD3 = 24,
	F_HIGH = 999, /* a hidden kernel fd: just under the limit, hard and soft */
	F_DIRFD = F_PW, /* the image's dir, in the way */
};
#define SIGUSR1_ 10
#define SIGUSR2_ 12
#define SIGALRM_ 14
#define BIT(s) (1UL << ((s) - 1))

static uint16_t tcp_port, tcp6_port;
static uint64_t memfd_ino;

static void open_everything(void)
{
	int fd = at(-1, "f", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC);
	zv_write(fd, "hello world, a file of some length", 34);
	zv_sys3(__NR_lseek, fd, 5, 0);
	to(fd, F_FILE);
	zv_sys3(__NR_dup3, F_FILE, F_DUP, 0);
	to(at(-1, "g", O_WRONLY | O_CREAT | O_APPEND), F_APPEND);
	to(zv_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0), F_DIR);
	to(zv_openat(AT_FDCWD, "/dev/null", O_WRONLY, 0), F_NULL);
	to(zv_openat(AT_FDCWD, "/dev/zero", O_RDONLY | O_CLOEXEC, 0), F_ZERO);
	to(at(-1, "f", O_PATH), F_OPATH);
	int p[2];
	zv_sys2(__NR_pipe2, p, O_NONBLOCK);
	zv_sys3(__NR_fcntl, p[1], F_SETPIPE_SZ, 131072);
	zv_write(p[1], "bytes in the pipe", 17);
	to(p[0], F_PR);
	to(p[1], F_PW);
	zv_sys3(__NR_fcntl, F_PW, F_SETFL, 0); /* the write end blocking */
	fd = (int)zv_sys2(__NR_eventfd2, 7, 0);
	to(fd, F_EV);
	to((int)zv_sys2(__NR_eventfd2, 3, 1 /* EFD_SEMAPHORE */ | O_NONBLOCK), F_EVS);
	fd = (int)zv_sys2(__NR_timerfd_create, 1 /* CLOCK_MONOTONIC */, O_NONBLOCK);
	struct its its = { 1, 0, 10, 0 };
	zv_sys4(__NR_timerfd_settime, fd, 0, &its, NULL);
	to(fd, F_TFD);
	fd = (int)zv_sys2(__NR_timerfd_create, 1, 0);
	struct its once = { 0, 0, 0, 1000 };
	zv_sys4(__NR_timerfd_settime, fd, 0, &once, NULL);
	to(fd, F_TFD2);
	fd = (int)zv_sys2(__NR_timerfd_create, 1, O_NONBLOCK);
	struct its tick = { 5, 0, 0, 1000 }; /* fired once, next in 5 s */
	zv_sys4(__NR_timerfd_settime, fd, 0, &tick, NULL);
	to(fd, F_TFD3);
	fd = (int)zv_sys1(__NR_epoll_create1, 0);
	to(fd, F_EP);
	struct epoll_event ev = { .events = EPOLLIN, .data = 0x1234 };
	zv_sys4(__NR_epoll_ctl, F_EP, EPOLL_CTL_ADD, F_PR, &ev);
	ev = (struct epoll_event){ .events = EPOLLOUT | EPOLLET, .data = 99 };
	zv_sys4(__NR_epoll_ctl, F_EP, EPOLL_CTL_ADD, F_EV, &ev);
	fd = (int)zv_sys3(__NR_socket, 2, 1, 0);
	struct sin sa = { .family = 2, .addr = 0x0100007f };
	zv_sys3(__NR_bind, fd, &sa, sizeof sa);
	zv_sys2(__NR_listen, fd, 8);
	int len = sizeof sa;
	zv_sys3(__NR_getsockname, fd, &sa, &len);
	tcp_port = sa.port;
	to(fd, F_TCP);
	fd = (int)zv_sys3(__NR_socket, 10, 1, 0);
	struct sin6 s6 = { .family = 10, .addr[15] = 1 };
	int one = 1;
	zv_sys5(__NR_setsockopt, fd, 41, 26 /* IPV6_V6ONLY */, &one, sizeof one);
	CHECK_EQ(zv_sys3(__NR_bind, fd, &s6, sizeof s6), 0);
	zv_sys2(__NR_listen, fd, 8);
	len = sizeof s6;
	zv_sys3(__NR_getsockname, fd, &s6, &len);
	tcp6_port = s6.port;
	to(fd, F_TCP6);
	fd = (int)zv_sys3(__NR_socket, 1, 1 | O_NONBLOCK, 0);
	struct sun su = { .family = 1 };
	zv_snprintf(su.path, sizeof su.path, "%s/sock", dir);
	zv_sys3(__NR_bind, fd, &su, sizeof su);
	zv_sys2(__NR_listen, fd, 8);
	to(fd, F_UNIX);
	uint64_t mask = BIT(SIGUSR1_);
	to((int)zv_sys4(__NR_signalfd4, -1, &mask, 8, O_NONBLOCK), F_SIG);
	zv_sys3(__NR_dup3, 1, F_OUT, O_CLOEXEC);
	to(at(-1, "h", O_RDONLY | O_CREAT), F_FLOCK);
	to(zv_openat(AT_FDCWD, "/dev/null", O_RDWR, 0), F_HIGH);
	fd = (int)zv_sys2(__NR_memfd_create, "a name", 2 /* MFD_ALLOW_SEALING */);
	zv_write(fd, "memfd contents", 14);
	zv_sys3(__NR_lseek, fd, 6, 0);
	zv_sys3(__NR_fcntl, fd, F_ADD_SEALS, 0x4 /* F_SEAL_GROW */);
	struct stat st;
	zv_sys2(__NR_fstat, fd, &st);
	memfd_ino = st.st_ino;
	to(fd, F_MEMFD);

	struct flk fl = { F_WRLCK, 0, 10, 10, 0 };
	CHECK_EQ(zv_sys3(__NR_fcntl, F_FILE, F_SETLK, &fl), 0);
	struct flk ofd = { F_WRLCK, 0, 0, 1, 0 };
	CHECK_EQ(zv_sys3(__NR_fcntl, F_APPEND, F_OFD_SETLK, &ofd), 0);
	CHECK_EQ(zv_sys2(__NR_flock, F_FLOCK, 1 /* LOCK_SH */), 0);
}

static int far_id;

static void start_timers(void)
{
	uint64_t block = BIT(SIGUSR1_) | BIT(SIGUSR2_) | BIT(SIGALRM_);
	zv_sys4(__NR_rt_sigprocmask, 0 /* SIG_BLOCK */, &block, NULL, 8);
	struct ksigevent none = { .notify = 1 /* SIGEV_NONE */ };
	int id;
	CHECK_EQ(zv_sys3(__NR_timer_create, 1, &none, &id), 0);
	far_id = id;
	struct its far = { 0, 0, 100, 0 };
	zv_sys4(__NR_timer_settime, id, 0, &far, NULL);
	struct ksigevent sig = { .value = 0xabc, .signo = SIGUSR2_, .notify = 0 };
	int id2;
	CHECK_EQ(zv_sys3(__NR_timer_create, 1, &sig, &id2), 0);
	struct its soon = { 0, 0, 0, 300000000 };
	zv_sys4(__NR_timer_settime, id2, 0, &soon, NULL);
	struct ksigevent th = { .value = 7, .signo = 35, .notify = 4 /* SIGEV_THREAD_ID */, .tid = (int)zv_gettid() };
	int id3;
	CHECK_EQ(zv_sys3(__NR_timer_create, 0 /* CLOCK_REALTIME */, &th, &id3), 0);
	struct its every = { 50, 0, 60, 0 };
	zv_sys4(__NR_timer_settime, id3, 0, &every, NULL);
	struct itv alarm = { 0, 0, 0, 400000 };
	zv_sys3(__NR_setitimer, 0 /* ITIMER_REAL */, &alarm, NULL);
	struct { uint64_t cur, max; } core = { 4096, 8192 };
	zv_sys4(__NR_prlimit64, 0, 4 /* RLIMIT_CORE */, &core, NULL);
	zv_sys1(__NR_umask, 027);
	zv_sys1(__NR_chdir, dir);
}

static int timer_ids[8], ntimer_ids;

/* Everything the restore must bring back, gone. */
static void tear_down(void)
{
	char buf[4096];
	zv_cr_read_file("/proc/self/timers", buf, sizeof buf);
	for (const char *l = buf; l && *l; l = zv_strchr(l, '\n') ? zv_strchr(l, '\n') + 1 : NULL)
		if (zv_startswith(l, "ID: "))
			timer_ids[ntimer_ids++] = (int)zv_parse_dec(l + 4, &l);
	for (int i = 0; i < ntimer_ids; i++)
		zv_sys1(__NR_timer_delete, timer_ids[i]);
	struct itv zero = { 0 };
	zv_sys3(__NR_setitimer, 0, &zero, NULL);
	struct { uint64_t cur, max; } core = { 0, 8192 };
	zv_sys4(__NR_prlimit64, 0, 4, &core, NULL);
	zv_sys1(__NR_umask, 022);
	zv_sys1(__NR_chdir, "/");
	zv_sys3(__NR_close_range, 3, ~0U, 0);
	/* The restorer's own: the image's dir where the image has a pipe end,
	 * and a stray fd the image does not have. */
	to(zv_openat(AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0), F_DIRFD);
	in.dirfd = F_DIRFD;
	to(zv_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0), 50);
}

static void check_fds(void)
{
	char buf[4096];
	CHECK(in.dirfd != F_DIRFD && zv_sys3(__NR_fcntl, in.dirfd, F_GETFL, 0) >= 0,
	      "the image's dir moved out of the way: %d", in.dirfd);
	CHECK_EQ(zv_sys3(__NR_fcntl, 50, F_GETFD, 0), -EBADF);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_FILE, F_GETFD, 0), FD_CLOEXEC);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_DUP, F_GETFD, 0), 0);
	CHECK_EQ(zv_sys3(__NR_lseek, F_FILE, 0, 1 /* SEEK_CUR */), 5);
	zv_sys3(__NR_lseek, F_DUP, 8, 0);
	CHECK_EQ(zv_sys3(__NR_lseek, F_FILE, 0, 1), 8); /* one description */
	CHECK_EQ(zv_sys3(__NR_fcntl, F_APPEND, F_GETFL, 0) & (O_APPEND | 3), O_APPEND | O_WRONLY);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_ZERO, F_GETFD, 0), FD_CLOEXEC);
	CHECK_EQ(zv_read(F_ZERO, buf, 4), 4);
	CHECK_EQ(zv_write(F_NULL, "x", 1), 1);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_OPATH, F_GETFL, 0) & O_PATH, O_PATH);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_HIGH, F_GETFL, 0) & 3, O_RDWR);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_OUT, F_GETFD, 0), FD_CLOEXEC);
	CHECK_EQ(zv_write(F_OUT, "", 0), 0);

	CHECK_EQ(zv_cr_memfd_fd(&in, memfd_ino), F_MEMFD);
	CHECK_EQ(zv_cr_memfd_fd(&in, 1), -1);
	CHECK_EQ(zv_sys3(__NR_lseek, F_MEMFD, 0, 1), 6);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_MEMFD, F_GET_SEALS, 0), 0x4);
	CHECK_EQ(zv_sys4(__NR_pread64, F_MEMFD, buf, sizeof buf, 0), 14);
	CHECK(memcmp(buf, "memfd contents", 14) == 0, "memfd contents");
	char link[64];
	long ln = zv_sys4(__NR_readlinkat, AT_FDCWD, "/proc/self/fd/23", link, sizeof link - 1);
	link[ln > 0 ? ln : 0] = 0;
	CHECK(zv_strcmp(link, "/memfd:a name (deleted)") == 0, "memfd's name: %s", link);

	/* epoll before the pipe is read: its bytes make it ready */
	struct epoll_event ev[4];
	long n = zv_sys4(__NR_epoll_wait, F_EP, ev, 4, 0);
	CHECK_EQ(n, 2);
	int seen = 0;
	for (long i = 0; i < n; i++)
		seen |= (ev[i].data == 0x1234 && ev[i].events == EPOLLIN) | (ev[i].data == 99) << 1;
	CHECK_EQ(seen, 3);

	CHECK_EQ(zv_sys3(__NR_fcntl, F_PR, F_GETPIPE_SZ, 0), 131072);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_PR, F_GETFL, 0) & (O_NONBLOCK | 3), O_NONBLOCK | O_RDONLY);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_PW, F_GETFL, 0) & (O_NONBLOCK | 3), O_WRONLY);
	n = zv_read(F_PR, buf, sizeof buf);
	CHECK(n == 17 && memcmp(buf, "bytes in the pipe", 17) == 0, "pipe bytes: %ld", n);
	CHECK_EQ(zv_write(F_PW, "more", 4), 4);
	CHECK_EQ(zv_read(F_PR, buf, sizeof buf), 4);

	uint64_t v = 0;
	CHECK_EQ(zv_read(F_EV, &v, 8), 8);
	CHECK_EQ(v, 7);
	CHECK_EQ(zv_read(F_EVS, &v, 8), 8);
	CHECK_EQ(v, 1); /* a semaphore: one at a time */
	CHECK_EQ(zv_sys3(__NR_fcntl, F_EVS, F_GETFL, 0) & O_NONBLOCK, O_NONBLOCK);

	struct its its;
	zv_sys2(__NR_timerfd_gettime, F_TFD, &its);
	CHECK(its.vsec >= 8 && its.vsec <= 10 && its.isec == 1, "timerfd: %ld s left, every %ld s", (long)its.vsec, (long)its.isec);
	CHECK_EQ(zv_read(F_TFD2, &v, 8), 8);
	CHECK_EQ(v, 1); /* the expiry not yet read came back */
	CHECK_EQ(zv_read(F_TFD3, &v, 8), 8); /* and a periodic one's, with its next */
	CHECK_EQ(v, 1);
	zv_sys2(__NR_timerfd_gettime, F_TFD3, &its);
	CHECK(its.vsec >= 3 && its.vsec <= 5 && its.isec == 5, "periodic timerfd: %ld s left", (long)its.vsec);

	/* the listening sockets accept */
	long c = zv_sys3(__NR_socket, 2, 1, 0);
	struct sin sa = { .family = 2, .port = tcp_port, .addr = 0x0100007f };
	CHECK_EQ(zv_sys3(__NR_connect, c, &sa, sizeof sa), 0);
	long a = zv_sys4(__NR_accept4, F_TCP, NULL, NULL, 0);
	CHECK(a >= 0, "accept on the TCP socket: %ld", a);
	zv_close((int)a);
	zv_close((int)c);
	c = zv_sys3(__NR_socket, 10, 1, 0);
	struct sin6 s6 = { .family = 10, .port = tcp6_port, .addr[15] = 1 };
	CHECK_EQ(zv_sys3(__NR_connect, c, &s6, sizeof s6), 0);
	a = zv_sys4(__NR_accept4, F_TCP6, NULL, NULL, 0);
	CHECK(a >= 0, "accept on the TCP6 socket: %ld", a);
	int v6only = 0, olen = sizeof v6only;
	zv_sys5(__NR_getsockopt, F_TCP6, 41, 26, &v6only, &olen);
	CHECK_EQ(v6only, 1);
	zv_close((int)a);
	zv_close((int)c);
	c = zv_sys3(__NR_socket, 1, 1, 0);
	struct sun su = { .family = 1 };
	zv_snprintf(su.path, sizeof su.path, "%s/sock", dir);
	CHECK_EQ(zv_sys3(__NR_connect, c, &su, sizeof su), 0);
	a = zv_sys4(__NR_accept4, F_UNIX, NULL, NULL, 0);
	CHECK(a >= 0, "accept on the Unix socket: %ld", a);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_UNIX, F_GETFL, 0) & O_NONBLOCK, O_NONBLOCK);
	zv_close((int)a);
	zv_close((int)c);

	zv_sys2(__NR_kill, zv_getpid(), SIGUSR1_);
	uint32_t si[32];
	CHECK_EQ(zv_read(F_SIG, si, sizeof si), sizeof si);
	CHECK_EQ(si[0], SIGUSR1_);

	fdinfo(F_FILE, buf, sizeof buf);
	CHECK(find(buf, "POSIX  ADVISORY  WRITE") && find(buf, " 10 19"), "the POSIX lock: %s", buf);
	fdinfo(F_APPEND, buf, sizeof buf);
	CHECK(find(buf, "OFDLCK ADVISORY  WRITE") && find(buf, " 0 0"), "the OFD lock: %s", buf);
	fdinfo(F_FLOCK, buf, sizeof buf);
	CHECK(find(buf, "FLOCK  ADVISORY  READ"), "the flock: %s", buf);
}

static void check_timers(void)
{
	char buf[4096];
	zv_cr_read_file("/proc/self/timers", buf, sizeof buf);
	int ids = 0;
	for (int i = 0; i < ntimer_ids; i++) {
		char want[32];
		zv_snprintf(want, sizeof want, "ID: %d\n", timer_ids[i]);
		ids += find(buf, want) != NULL;
	}
	CHECK(ntimer_ids == 3 && ids == 3, "timers back with their ids: %s", buf);
	char want[96];
	zv_snprintf(want, sizeof want, "signal: 35/0000000000000007\nnotify: signal/tid.%ld\nClockID: 0\n", zv_gettid());
	CHECK(find(buf, want) != NULL, "the thread's timer: %s", buf);
	struct its its;
	zv_sys2(__NR_timer_gettime, far_id, &its);
	CHECK(its.vsec >= 98 && its.vsec <= 100, "the far timer: %ld s left", (long)its.vsec);

	uint64_t set = BIT(SIGUSR2_) | BIT(SIGALRM_);
	struct { int64_t s, ns; } wait = { 2, 0 };
	struct { int32_t signo, err, code, pad; int32_t f[4]; uint64_t value; uint8_t rest[96]; } info;
	int got = 0;
	for (int i = 0; i < 2; i++) {
		long s = zv_sys4(__NR_rt_sigtimedwait, &set, &info, &wait, 8);
		if (s == SIGUSR2_ && *(uint64_t *)((char *)&info + 24) == 0xabc)
			got |= 1;
		if (s == SIGALRM_)
			got |= 2;
	}
	CHECK_EQ(got, 3); /* the POSIX timer's signal with its value, and the itimer's */

	struct { uint64_t cur, max; } core;
	zv_sys4(__NR_prlimit64, 0, 4, NULL, &core);
	CHECK(core.cur == 4096, "RLIMIT_CORE back: %lu", (unsigned long)core.cur);
	CHECK_EQ(zv_sys1(__NR_umask, 022), 027);
	char cwd[128];
	zv_sys2(__NR_getcwd, cwd, sizeof cwd);
	CHECK(zv_strcmp(cwd, dir) == 0, "cwd %s", cwd);
}

/* Save refused with a line containing want, for the fd made by fn. */
static void refused(const char *want, int fd)
{
	image_reset();
	long r = zv_cr_save_fds(&out, &alone);
	CHECK(r == -1 && find(out.why, want), "saving refused with \"%s\": %ld, why \"%s\"", want, r, out.why);
	zv_close(fd);
}

static void check_refusals(void)
{
	/* deleted: a file open only for writing (its contents cannot be
	 * read), a directory */
	int fd = at(-1, "gone", O_WRONLY | O_CREAT);
	char p[128];
	zv_snprintf(p, sizeof p, "%s/gone", dir);
	zv_sys1(__NR_unlink, p);
	refused("open only for writing", fd);
	zv_snprintf(p, sizeof p, "%s/gonedir", dir);
	zv_sys2(__NR_mkdir, p, 0700);
	fd = at(-1, "gonedir", O_RDONLY | O_DIRECTORY);
	zv_sys1(__NR_rmdir, p);
	refused("the file was deleted", fd);
	refused("a socket other than a Unix, TCP or UDP one", (int)zv_sys3(__NR_socket, 16 /* AF_NETLINK */, 3 /* SOCK_RAW */, 0));
	/* a UDP socket with a datagram waiting (sent to itself) */
	int u = (int)zv_sys3(__NR_socket, 2 /* AF_INET */, 2 /* SOCK_DGRAM */, 0);
	struct { uint16_t family, port; uint32_t addr; uint8_t zero[8]; } sin = { 2, 0, 0x0100007f, { 0 } };
	int sl = sizeof sin;
	zv_sys3(__NR_bind, u, &sin, sizeof sin);
	zv_sys3(__NR_getsockname, u, &sin, &sl);
	CHECK_EQ(zv_sys6(__NR_sendto, u, (long)"x", 1, 0, (long)&sin, sizeof sin), 1);
	refused("datagrams not yet read", u);
	/* a watch zvisor did not see added; a pidfd of a process not saved */
	int watcher = (int)zv_sys1(__NR_inotify_init1, 0);
	zv_sys3(__NR_inotify_add_watch, watcher, "/", 4 /* IN_ATTRIB */);
	refused("did not see added", watcher);
	refused("a pidfd of another process", (int)zv_sys2(__NR_pidfd_open, zv_sys0(__NR_getppid), 0));
	refused("a process's /proc directory", (int)zv_openat(AT_FDCWD, "/proc/self/status", O_RDONLY, 0));
	/* a pipe reaching outside, the same as fd 1: saved as fd 1's */
	image_reset();
	CHECK_EQ(zv_sys3(__NR_dup3, 1, 40, 0), 40);
	CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
	zv_close(40);

	/* a damaged section: cut short, or of another version */
	image_reset();
	fd = to(at(-1, "f", O_RDONLY), 30);
	CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
	uint64_t full = img[0].len;
	for (uint64_t cut = 0; cut < full; cut += 8) {
		img[0].len = cut;
		in.why[0] = 0;
		CHECK(zv_cr_restore_fds(&in, NULL, 0, NULL, 0) == -1 && find(in.why, "damaged"), "cut at %lu: \"%s\"",
		      (unsigned long)cut, in.why);
	}
	img[0].len = full;
	((uint32_t *)img[0].p)[1] = 3;
	CHECK(zv_cr_restore_fds(&in, NULL, 0, NULL, 0) == -1 && find(in.why, "has version 3, not 1 to 2"), "version: \"%s\"", in.why);
	zv_close(fd);

	/* a lock another process holds (as the original would under
	 * --leave-running) refuses the restore, after two seconds' wait */
	image_reset();
	fd = to(at(-1, "f", O_RDWR), 30);
	struct flk fl = { F_WRLCK, 0, 0, 10, 0 };
	CHECK_EQ(zv_sys3(__NR_fcntl, fd, F_SETLK, &fl), 0);
	CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
	zv_close(fd);
	int ready[2];
	zv_sys2(__NR_pipe2, ready, 0);
	long child = zv_sys0(__NR_fork);
	if (child == 0) {
		int f = at(-1, "f", O_RDWR);
		zv_sys3(__NR_fcntl, f, F_SETLK, &fl);
		zv_write(ready[1], "x", 1);
		struct { long s, ns; } ts = { 10, 0 };
		zv_sys2(__NR_nanosleep, &ts, NULL);
		zv_exit_group(0);
	}
	char x;
	zv_read(ready[0], &x, 1);
	in.dirfd = (int)zv_openat(AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0);
	CHECK(zv_cr_restore_fds(&in, NULL, 0, NULL, 0) == -1 && find(in.why, "another process holds it"),
	      "restoring a lock held elsewhere: \"%s\"", in.why);
	zv_sys2(__NR_kill, child, 9);
	zv_sys4(__NR_wait4, child, NULL, 0, NULL);
	zv_sys3(__NR_close_range, 3, ~0U, 0);

	/* a file changed since the checkpoint */
	image_reset();
	fd = to(at(-1, "f", O_RDONLY), 30);
	CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
	zv_close(fd);
	long w = at(-1, "f", O_WRONLY | O_APPEND);
	zv_write((int)w, "!", 1);
	zv_close((int)w);
	in.dirfd = (int)zv_openat(AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0);
	CHECK(zv_cr_restore_fds(&in, NULL, 0, NULL, 0) == -1 && find(in.why, "the file changed since the checkpoint"),
	      "restoring a changed file: \"%s\"", in.why);
	/* but one only appended to may have grown */
	zv_sys3(__NR_close_range, 3, ~0U, 0);
	image_reset();
	fd = to(at(-1, "g", O_WRONLY | O_APPEND), 30);
	CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
	zv_write(fd, "more", 4);
	zv_close(fd);
	in.dirfd = (int)zv_openat(AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0);
	CHECK(zv_cr_restore_fds(&in, NULL, 0, NULL, 0) == 0, "restoring an appended file: \"%s\"", in.why);
}

/* Without kcmp (a container's seccomp profile forbids it): dups are still
 * told from separate opens of one file. */
static void check_without_kcmp(void)
{
	struct { uint16_t code; uint8_t jt, jf; uint32_t k; } prog[] = {
		{ 0x20, 0, 0, 0 },                    /* ld [nr] */
		{ 0x15, 0, 1, __NR_kcmp },            /* jeq kcmp */
		{ 0x06, 0, 0, 0x00050000 | EPERM },   /* ret ERRNO(EPERM) */
		{ 0x06, 0, 0, 0x7fff0000 },           /* ret ALLOW */
	};
	struct { uint16_t len; void *filter; } fprog = { 4, prog };
	CHECK_EQ(zv_sys5(__NR_prctl, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0, 0, 0), 0);
	CHECK_EQ(zv_sys3(__NR_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &fprog), 0);
	long pid = zv_getpid();
	CHECK_EQ(zv_sys5(__NR_kcmp, pid, pid, 0, 1, 1), -EPERM);
	image_reset();
	to(at(-1, "f", O_RDONLY), F_FILE);
	zv_sys3(__NR_dup3, F_FILE, F_DUP, 0);
	to(at(-1, "f", O_RDONLY), F_APPEND); /* the same file, opened again */
	CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
	zv_sys3(__NR_close_range, 3, ~0U, 0);
	in.dirfd = (int)zv_openat(AT_FDCWD, "/tmp", O_RDONLY | O_DIRECTORY, 0);
	CHECK(zv_cr_restore_fds(&in, NULL, 0, NULL, 0) == 0, "restore without kcmp: %s", in.why);
	zv_sys3(__NR_lseek, F_DUP, 3, 0);
	CHECK_EQ(zv_sys3(__NR_lseek, F_FILE, 0, 1), 3);
	CHECK_EQ(zv_sys3(__NR_lseek, F_APPEND, 0, 1), 0);
	CHECK_EQ(zv_sys3(__NR_fcntl, F_FILE, F_GETFL, 0) & O_NONBLOCK, 0);
	zv_sys3(__NR_close_range, 3, ~0U, 0);
}

/* The kind the image gives fd (0: none). */
static unsigned kind_of(int fd)
{
	for (unsigned k = 0; k < nimg; k++) {
		if (zv_strcmp(img[k].name, "fds"))
			continue;
		const uint8_t *p = img[k].p + sizeof(struct zv_cr_fds_head);
		while (p < img[k].p + img[k].len) {
			const struct zv_cr_fd *r = (const void *)p;
			if (r->fd == fd)
				return r->kind == ZV_CRFD_STDIO ? 100 + r->u.stdio : r->kind;
			p += sizeof *r + zv_cr_pad8(r->len);
		}
	}
	return 0;
}

/* Output to a file on fd 1 follows the restorer's stdout, with the other
 * write-only fds of that file; a reading one stays the file. */
static void check_stdout_file(void)
{
	image_reset();
	int keep = (int)zv_sys3(__NR_fcntl, 1, F_DUPFD_CLOEXEC, 60);
	to(at(-1, "g", O_WRONLY), 1);
	to(at(-1, "g", O_WRONLY | O_APPEND), 61);
	to(at(-1, "g", O_RDONLY), 62);
	out.dirfd = keep; /* the saver passes it over */
	long r = zv_cr_save_fds(&out, &alone);
	out.dirfd = -1;
	zv_sys3(__NR_dup3, keep, 1, 0);
	CHECK(r == 0, "save: %s", out.why);
	CHECK_EQ(kind_of(1), 101);
	CHECK_EQ(kind_of(61), 101);
	CHECK_EQ(kind_of(62), ZV_CRFD_FILE);
	zv_sys3(__NR_close_range, 3, ~0U, 0);
}

static void clean(void)
{
	static const char *const names[] = { "f", "g", "h", "sock" };
	for (unsigned i = 0; i < 4; i++) {
		char p[128];
		zv_snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		zv_sys1(__NR_unlink, p);
	}
	zv_sys1(__NR_rmdir, dir);
}

void unit_main(void)
{
	zv_snprintf(dir, sizeof dir, "/tmp/zv-cr-fds.%ld", zv_getpid());
	zv_sys2(__NR_mkdir, dir, 0700);
	zv_sys3(__NR_close_range, 3, ~0U, 0); /* what the test's runner left open */
	struct { uint64_t cur, max; } nofile = { F_HIGH + 1, F_HIGH + 1 };
	CHECK_EQ(zv_sys4(__NR_prlimit64, 0, 7 /* RLIMIT_NOFILE */, &nofile, NULL), 0);
	open_everything();
	start_timers();
	out.dirfd = -1;
	long r = zv_cr_save_fds(&out, &alone);
	CHECK(r == 0, "save_fds: %s", out.why);
	r = zv_cr_save_timers(&out);
	CHECK(r == 0, "save_timers: %s", out.why);
	/* checkpoints in a row (--leave-running) leave no fd behind and the
	 * pipe's bytes where they were */
	long fds_before = count_fds();
	for (int i = 0; i < 20; i++) {
		image_reset();
		CHECK_EQ(zv_cr_save_fds(&out, &alone), 0);
		CHECK_EQ(zv_cr_save_timers(&out), 0);
	}
	CHECK_EQ(count_fds(), fds_before);
	int avail = 0;
	zv_sys3(__NR_ioctl, F_PR, 0x541B /* FIONREAD */, &avail);
	CHECK_EQ(avail, 17);

	tear_down();
	r = zv_cr_restore_fds(&in, NULL, 0, NULL, 0);
	CHECK(r == 0, "restore_fds: %s", in.why);
	r = zv_cr_restore_timers(&in);
	CHECK(r == 0, "restore_timers: %s", in.why);
	if (r == 0) {
		char buf[4096];
		zv_cr_read_file("/proc/self/timers", buf, sizeof buf);
		CHECK(!find(buf, "tid."), "a thread's timer waits for its thread: %s", buf);
		r = zv_cr_restore_thread_timers(&in);
		CHECK(r == 0, "restore_thread_timers: %s", in.why);
	}
	if (r == 0)
		check_timers();
	check_fds();
	zv_sys3(__NR_close_range, 3, ~0U, 0);
	check_refusals();
	check_stdout_file();
	check_without_kcmp(); /* last: the filter stays */
	clean();
}
