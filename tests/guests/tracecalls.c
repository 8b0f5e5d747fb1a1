/* Calls whose arguments zvisor trace decodes as strace 6.1 does, each made
 * once with deterministic arguments, for the parity test of
 * tests/test_trace_cli.py (tests/trace_parity.py compares the lines).
 * Prints nothing; exits 0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/futex.h>
#include <stdint.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/times.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define F "/tmp/zvisor-tracecalls.tmp"

static void handler(int sig) { (void)sig; }

static void files(void)
{
	int fd = open("/etc/hostname", O_RDONLY);
	int n;
	fcntl(fd, F_GETFL);
	fcntl(fd, F_GETFD);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fcntl(fd, F_GETFD);
	ioctl(fd, FIONREAD, &n);
	ioctl(fd, FIOCLEX);
	ioctl(fd, 0x12345678, 0);
	ioctl(1, TIOCGWINSZ, &n);
	lseek(fd, 0, SEEK_END);
	dup3(fd, 20, O_CLOEXEC);
	close(20);

	int w = open(F, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
	fcntl(w, F_GETFL);
	fcntl(w, F_SETLK, &fl);
	fcntl(w, F_GETLK, &fl);
	flock(w, LOCK_EX | LOCK_NB);
	flock(w, LOCK_UN);
	fallocate(w, 0, 0, 4096);
	lseek(fd, 0, SEEK_SET);
	off_t off = 0;
	sendfile(w, fd, &off, 4);
	fsync(w);
	setxattr(F, "user.zv", "val", 3, 0);
	char v[64];
	getxattr(F, "user.zv", v, sizeof v);
	getxattr(F, "user.none", v, sizeof v);
	listxattr(F, v, sizeof v);
	removexattr(F, "user.zv");
	chmod(F, 0100644);
	struct timespec t[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
	utimensat(AT_FDCWD, F, NULL, 0);
	utimensat(AT_FDCWD, F, t, AT_SYMLINK_NOFOLLOW);
	struct timespec fixed[2] = { { 946684800, 0 }, { 946684800, 123456789 } };
	futimens(w, fixed);
	struct statx sx;
	statx(AT_FDCWD, "/etc/hostname", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx);
	syscall(SYS_faccessat2, AT_FDCWD, "/", X_OK, AT_EACCESS);
	struct statfs sf;
	statfs("/proc", &sf);
	fstatfs(-1, &sf);
	syscall(SYS_renameat2, AT_FDCWD, F, AT_FDCWD, F ".2", 1 /* RENAME_NOREPLACE */);
	unlink(F ".2");
	close(w);
	close(fd);
	int mfd = memfd_create("zv", MFD_CLOEXEC);
	close(mfd);
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	close(in);
	int p[2];
	pipe2(p, O_CLOEXEC | O_NONBLOCK);
	close(p[0]);
	close(p[1]);
	close_range(100, 200, 0);
}

static void memory(void)
{
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	msync(m, 4096, MS_SYNC);
	m = mremap(m, 8192, 16384, MREMAP_MAYMOVE);
	madvise(m, 4096, MADV_DONTNEED);
	munmap(m, 16384);
}

static void process(void)
{
	char name[16];
	int v;
	prctl(PR_SET_NAME, "tracecalls");
	prctl(PR_GET_NAME, name);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_GET_PDEATHSIG, &v);
	prctl(PR_GET_DUMPABLE);
	prctl(PR_SET_DUMPABLE, 1);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	prctl(PR_CAPBSET_READ, 21 /* CAP_SYS_ADMIN */);
	prctl(PR_GET_SECUREBITS);
	prctl(0x999, 1, 2, 3, 4);
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	gid_t gr, ge, gs, groups[64];
	getresgid(&gr, &ge, &gs);
	getgroups(64, groups);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	setrlimit(RLIMIT_CORE, &rl);
	cpu_set_t cs;
	sched_getaffinity(0, sizeof cs, &cs);
	struct sysinfo si;
	sysinfo(&si);
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	pid_t pid = fork();
	if (pid == 0)
		_exit(3);
	siginfo_t info;
	waitid(P_PID, pid, &info, WEXITED);
	waitid(P_ALL, 0, &info, WEXITED | WNOHANG);
}

static void signals(void)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_NODEFER | SA_RESETHAND | SA_SIGINFO };
	sigaddset(&sa.sa_mask, SIGINT);
	sigaction(SIGUSR1, &sa, NULL);
	stack_t ss = { .ss_sp = malloc(65536), .ss_size = 65536 }, old;
	sigaltstack(&ss, &old);
	sigaltstack(NULL, &old);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	struct timespec ts = { 0, 1000 };
	sigtimedwait(&set, NULL, &ts);
	raise(SIGUSR2);
	sigtimedwait(&set, NULL, &ts);
	raise(SIGUSR1); /* handled: rt_sigreturn restores the mask with USR2 */
}

static void clocks(void)
{
	struct timespec ts = { 0, 1000 };
	nanosleep(&ts, NULL);
	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, &it);
	getitimer(ITIMER_REAL, &it);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = { { 0, 0 }, { 100, 0 } };
	timerfd_settime(tfd, 0, &its, &its);
	timerfd_gettime(tfd, &its);
	close(tfd);
	struct timeval tv;
	struct timezone tz;
	syscall(SYS_gettimeofday, &tv, &tz);
	struct timespec zero = { 0, 0 };
	syscall(SYS_ppoll, NULL, 0, &zero, NULL, 8);
	syscall(SYS_pselect6, 0, NULL, NULL, NULL, &zero, NULL);
	poll(NULL, 0, 0);
}

static void net(void)
{
	int sv[2], one = 1;
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	struct iovec iov = { "hi", 2 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	sendmsg(sv[0], &mh, MSG_NOSIGNAL);
	char buf[8];
	struct iovec iv2 = { buf, 8 };
	struct msghdr m2 = { .msg_iov = &iv2, .msg_iovlen = 1 };
	recvmsg(sv[1], &m2, 0);
	sendto(sv[0], "yo", 2, 0, NULL, 0);
	recvfrom(sv[1], buf, 8, MSG_DONTWAIT, NULL, NULL);
	recvfrom(sv[1], buf, 8, MSG_DONTWAIT, NULL, NULL);
	setsockopt(sv[0], SOL_SOCKET, SO_KEEPALIVE, &one, 4);
	socklen_t sl = 4;
	int type;
	getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &sl);
	struct sockaddr_un u;
	sl = sizeof u;
	getsockname(sv[0], (void *)&u, &sl);
	shutdown(sv[0], SHUT_WR);
	close(sv[0]);
	close(sv[1]);
	struct sockaddr_un path = { AF_UNIX, "/nonexistent/socket" };
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	connect(s, (void *)&path, sizeof path);
	close(s);
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(0x7f000001) };
	s = socket(AF_INET, SOCK_DGRAM, 0);
	connect(s, (void *)&a4, sizeof a4);
	close(s);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	inet_pton(AF_INET6, "::1", &a6.sin6_addr);
	s = socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDP);
	connect(s, (void *)&a6, sizeof a6);
	inet_pton(AF_INET6, "fe80::1:2", &a6.sin6_addr);
	connect(s, (void *)&a6, sizeof a6);
	close(s);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ee = { EPOLLIN, { .u64 = 5 } }, out[2];
	int ef = eventfd(0, EFD_NONBLOCK);
	epoll_ctl(ep, EPOLL_CTL_ADD, ef, &ee);
	eventfd_write(ef, 1);
	epoll_wait(ep, out, 2, 0);
	epoll_pwait(ep, out, 2, 0, NULL);
	epoll_ctl(ep, EPOLL_CTL_DEL, ef, NULL);
	close(ef);
	close(ep);
}

/* calls that were raw before the parity work */
static void more(void)
{
	struct rlimit rl;
	syscall(SYS_getrlimit, RLIMIT_NOFILE, &rl);
	syscall(SYS_setrlimit, RLIMIT_CORE, &rl);
	struct tms t;
	times(&t);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, NULL);
	raise(SIGUSR1);
	syscall(SYS_rt_sigpending, &s, 8);
	int sfd = signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK);
	fd_set r;
	FD_ZERO(&r);
	FD_SET(sfd, &r);
	FD_SET(0, &r);
	struct timespec zero = { 0, 0 };
	pselect(sfd + 1, &r, NULL, NULL, &zero, NULL); /* in [sfd] */
	close(sfd);
	struct { uint32_t version; int pid; } h = { 0x20080522, 0 };
	uint32_t d[6];
	syscall(SYS_capget, &h, d);
	unshare(0);
	personality(0xffffffff);
	struct sched_param sp;
	sched_getparam(0, &sp);
	sched_getscheduler(0);
	sched_setscheduler(0, SCHED_OTHER, &sp);
	getpriority(PRIO_PROCESS, 0);
	int fd = open("/etc/hostname", O_RDONLY);
	char b1[2], b2[100], dents[4096];
	struct iovec iov[2] = { { b1, 2 }, { b2, 100 } };
	preadv(fd, iov, 2, 0);
	pwritev(fd, iov, 1, 0);
	int dir = open("/etc", O_RDONLY | O_DIRECTORY);
	syscall(SYS_getdents, dir, dents, 0); /* EINVAL: the count does not depend on /etc */
	close(dir);
	mlockall(MCL_CURRENT);
	munlockall();
	int p[2], q[2];
	pipe(p);
	pipe(q);
	write(p[1], "abc", 3);
	splice(p[0], NULL, q[1], NULL, 3, SPLICE_F_NONBLOCK);
	tee(q[0], p[1], 3, 0);
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	struct { uint64_t flags, mode, resolve; } how = { O_RDONLY | O_CLOEXEC, 0, 4 /* RESOLVE_NO_SYMLINKS */ };
	int o2 = syscall(SYS_openat2, AT_FDCWD, "/etc/hostname", &how, sizeof how);
	close(o2);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	close(fd);
	umount2("/nonexistent", MNT_DETACH | UMOUNT_NOFOLLOW); /* fails: nothing changes */
	struct timespec ts;
	syscall(SYS_sched_rr_get_interval, 0, &ts);
	syscall(SYS_clock_settime, 99, &ts); /* EINVAL */
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	close(syscall(SYS_signalfd, -1, &s, 8));
	syscall(SYS_pidfd_send_signal, -1, SIGUSR1, NULL, 0); /* EBADF */
}

/* futex operations that do not block here */
static void futexes(void)
{
	static uint32_t a, b;
	struct timespec ts = { 0, 1000 };
	syscall(SYS_futex, &a, FUTEX_WAKE_OP_PRIVATE, 1, 1, &b, FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_GT, 1));
	syscall(SYS_futex, &a, FUTEX_WAKE_OP, 1, 1, &b, FUTEX_OP(FUTEX_OP_ADD, 5, FUTEX_OP_CMP_EQ, 0));
	syscall(SYS_futex, &a, FUTEX_CMP_REQUEUE_PRIVATE, 1, 2147483647, &b, 0);
	syscall(SYS_futex, &a, FUTEX_REQUEUE_PRIVATE, 1, 2147483647, &b);
	syscall(SYS_futex, &a, FUTEX_WAIT_PRIVATE, 0, &ts);
	syscall(SYS_futex, &a, FUTEX_WAIT_BITSET_PRIVATE, 1, NULL, NULL, 0x5);
	syscall(SYS_futex, &a, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0x5);
	syscall(SYS_futex, &a, FUTEX_WAKE, 1);
}

/* on a terminal (the parity test's pty case): termios in every form */
static void terminal(void)
{
	struct termios t, o;
	if (ioctl(0, TCGETS, &o) < 0)
		return;
	t = o;
	t.c_iflag = 0177777;
	t.c_oflag = 0177777;
	t.c_cflag = (o.c_cflag & ~CBAUD) | B9600 | 077760;
	t.c_lflag = 0377777;
	ioctl(0, TCSETS, &t);
	t.c_iflag = t.c_oflag = t.c_lflag = 0;
	t.c_cflag = B0 | CS5;
	ioctl(0, TCSETSW, &t);
	t.c_oflag = 014000 | 03000 | 0100 | 020000 | 040000 | 0100000;
	t.c_cflag = B115200 | CS7 | CRTSCTS;
	ioctl(0, TCSETSF, &t);
	ioctl(0, TCSETS, &o);
	struct winsize w = { 24, 80, 0, 0 };
	ioctl(0, TIOCGWINSZ, &w);
	int n;
	ioctl(0, TCFLSH, TCIFLUSH);
	ioctl(0, TIOCOUTQ, &n);
}

int main(void)
{
	files();
	memory();
	process();
	signals();
	clocks();
	net();
	more();
	futexes();
	terminal();
	return 0;
}
