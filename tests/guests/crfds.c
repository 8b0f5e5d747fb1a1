/* Checkpoint/restore of the host's resources (tests/test_cr_fds.py): opens
 * one fd of each kind the image keeps, prints "ready", raises SIGUSR2 (with
 * CRFDS_CHECKPOINT set, zvisor's --checkpoint-on signal: the checkpoint is
 * taken there), then uses each and prints what it finds. A restored run
 * prints the same lines after "ready" as the original, and exits 7.
 * argv[1]: a scratch directory of its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static char path[5][512];

static int listener(int domain, struct sockaddr *a, socklen_t len)
{
	int s = socket(domain, SOCK_STREAM, 0), one = 1;
	/* as servers do: its connections' TIME_WAIT must not keep the
	 * restored listener from its port */
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (s < 0 || bind(s, a, len) < 0 || listen(s, 4) < 0) {
		perror("listener");
		exit(1);
	}
	return s;
}

/* Whether another process sees a lock on bytes 0-3 of the file. */
static const char *locked(const char *file)
{
	int p[2];
	pipe(p);
	pid_t c = fork();
	if (c == 0) {
		int fd = open(file, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 4 };
		fcntl(fd, F_GETLK, &fl);
		char r = fl.l_type == F_RDLCK ? 'R' : fl.l_type == F_WRLCK ? 'W' : '-';
		write(p[1], &r, 1);
		_exit(0);
	}
	char r = '?';
	read(p[0], &r, 1);
	waitpid(c, NULL, 0);
	close(p[0]);
	close(p[1]);
	return r == 'R' ? "read lock held" : r == '-' ? "no lock" : "lock?";
}

/* A deleted file's state: its bytes, offset, links, mode, name and
 * whether a child's description of it (by /proc/self/fd) can flock it. */
static void deleted(const char *what, int fd, const char *dir)
{
	char b[64] = { 0 }, link[600] = { 0 }, self[64];
	struct stat st;
	fstat(fd, &st);
	snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
	readlink(self, link, sizeof link - 1);
	size_t dl = strlen(dir);
	pid_t c = fork();
	if (c == 0) {
		int o = open(self, O_RDONLY);
		_exit(o >= 0 && flock(o, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK ? 0 : 1);
	}
	int cs = -1;
	waitpid(c, &cs, 0);
	printf("%s: %zd %s, offset %ld, links %d, mode %o, named %s, locked %d\n", what, pread(fd, b, sizeof b - 1, 0),
	       b, (long)lseek(fd, 0, SEEK_CUR), (int)st.st_nlink, (int)(st.st_mode & 07777),
	       !strncmp(link, dir, dl) ? link + dl : link, cs == 0);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *names[5] = { "file", "log", "sock", "none", "gone" };
	for (int i = 0; i < 5; i++)
		snprintf(path[i], sizeof path[i], "%s/%s", argv[1], names[i]);
	int w = open(path[0], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	write(w, "0123456789abcdef", 16);
	close(w);

	int f = open(path[0], O_RDONLY | O_CLOEXEC);
	char b[64] = { 0 };
	read(f, b, 4); /* half read */
	int d = dup(f);
	int log = open(path[1], O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 4 };
	fcntl(f, F_SETLK, &fl);
	int p[2];
	pipe2(p, O_NONBLOCK);
	write(p[1], "buffered", 8);
	int ev = eventfd(5, 0);
	int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	struct itimerspec once = { { 0, 0 }, { 0, 300000000 } };
	timerfd_settime(tfd, 0, &once, NULL);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e1 = { .events = EPOLLIN, .data.u64 = 11 }, e2 = { .events = EPOLLIN, .data.u64 = 22 };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e1);
	epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e2);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int tcp = listener(AF_INET, (struct sockaddr *)&sin, sizeof sin);
	socklen_t sl = sizeof sin;
	getsockname(tcp, (struct sockaddr *)&sin, &sl);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof sun.sun_path, "%.100s", path[2]);
	unlink(path[2]);
	int ux = listener(AF_UNIX, (struct sockaddr *)&sun, sizeof sun);
	int mfd = memfd_create("crfds", 0);
	write(mfd, "memfd!", 6);
	timer_t timer;
	struct sigevent sev = { .sigev_notify = SIGEV_NONE };
	timer_create(CLOCK_MONOTONIC, &sev, &timer);
	struct itimerspec far = { { 0, 0 }, { 100, 0 } };
	timer_settime(timer, 0, &far, NULL);
	int pm = posix_openpt(O_RDWR | O_NOCTTY); /* a pty pair: master and terminal both ours */
	grantpt(pm);
	unlockpt(pm);
	int ps = open(ptsname(pm), O_RDWR | O_NOCTTY);
	struct termios tt;
	tcgetattr(ps, &tt);
	tt.c_cc[VERASE] = 8;
	tcsetattr(ps, TCSANOW, &tt);
	struct winsize ws = { .ws_row = 25, .ws_col = 90 };
	ioctl(pm, TIOCSWINSZ, &ws);
	int one = 1;
	ioctl(pm, TIOCPKT, &one); /* packet mode, and locked: no one else opens it by name */
	ioctl(pm, TIOCSPTLCK, &one);
	/* an MPTCP listener, as Go's net package makes by default (where the
	 * host has MPTCP; else none, natively too) */
	struct sockaddr_in msin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int mp = socket(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */);
	socklen_t ml = sizeof msin;
	if (mp >= 0) /* as Go's listeners, and the TCP one above */
		setsockopt(mp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (mp >= 0 && (bind(mp, (struct sockaddr *)&msin, sizeof msin) < 0 || listen(mp, 4) < 0 ||
			getsockname(mp, (struct sockaddr *)&msin, &ml) < 0)) {
		close(mp);
		mp = -1;
	}
	/* a UDP socket bound on loopback, another connected to it */
	struct sockaddr_in usin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int us = socket(AF_INET, SOCK_DGRAM, 0), uc = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	socklen_t ul = sizeof usin;
	bind(us, (struct sockaddr *)&usin, sizeof usin);
	getsockname(us, (struct sockaddr *)&usin, &ul);
	setsockopt(uc, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
	connect(uc, (struct sockaddr *)&usin, sizeof usin);
	/* a file deleted while open (flock'ed, half read), and an O_TMPFILE */
	int del = open(path[4], O_RDWR | O_CREAT | O_TRUNC, 0640);
	write(del, "deleted!", 8);
	lseek(del, 3, SEEK_SET);
	flock(del, LOCK_EX);
	unlink(path[4]);
	int tmp = open(argv[1], O_TMPFILE | O_RDWR, 0600);
	write(tmp, "tmpfile", 7);
	/* watches 1 and 3 (2 dropped, its IN_IGNORED read): the numbers and
	 * the next one must stay */
	int in = inotify_init1(IN_NONBLOCK);
	inotify_add_watch(in, argv[1], IN_CREATE);
	int gone = inotify_add_watch(in, path[0], IN_MODIFY);
	inotify_add_watch(in, path[1], IN_MODIFY);
	inotify_rm_watch(in, gone);
	char ev_buf[4096] __attribute__((aligned(8)));
	while (read(in, ev_buf, sizeof ev_buf) > 0)
		;
	umask(027);
	chdir(argv[1]);

	printf("ready\n");
	fflush(stdout);
	if (getenv("CRFDS_CHECKPOINT"))
		raise(SIGUSR2);

	struct epoll_event got[4];
	int n = epoll_wait(ep, got, 4, 0);
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += got[i].data.u64;
	printf("epoll: %d ready, data %llu\n", n, (unsigned long long)sum);
	memset(b, 0, sizeof b);
	printf("pipe: %zd %s\n", read(p[0], b, sizeof b), b);
	uint64_t v = 0;
	read(ev, &v, 8);
	printf("eventfd: %llu\n", (unsigned long long)v);
	read(tfd, &v, 8);
	printf("timerfd: %llu expiry\n", (unsigned long long)v);
	memset(b, 0, sizeof b);
	read(d, b, 6);
	printf("file through the dup: %s, offset %ld, cloexec %d/%d\n", b, (long)lseek(f, 0, SEEK_CUR),
	       fcntl(f, F_GETFD) & FD_CLOEXEC, fcntl(d, F_GETFD) & FD_CLOEXEC);
	printf("log: append %d, write %zd\n", (fcntl(log, F_GETFL) & O_APPEND) != 0, write(log, "x", 1));
	printf("lock: %s\n", locked(path[0]));
	int c = socket(AF_INET, SOCK_STREAM, 0);
	printf("tcp: connect %d", connect(c, (struct sockaddr *)&sin, sizeof sin));
	printf(", accept %d\n", accept(tcp, NULL, NULL) >= 0);
	int cu = socket(AF_UNIX, SOCK_STREAM, 0);
	printf("unix: connect %d", connect(cu, (struct sockaddr *)&sun, sizeof sun));
	printf(", accept %d\n", accept(ux, NULL, NULL) >= 0);
	memset(b, 0, sizeof b);
	printf("memfd: %zd %s\n", pread(mfd, b, sizeof b, 0), b);
	struct itimerspec left;
	timer_gettime(timer, &left);
	printf("timer: %s\n", left.it_value.tv_sec >= 90 ? "armed" : "wrong");
	memset(&tt, 0, sizeof tt);
	memset(&ws, 0, sizeof ws);
	tcgetattr(ps, &tt);
	ioctl(ps, TIOCGWINSZ, &ws);
	write(ps, "pty!\n", 5);
	memset(b, 0, sizeof b);
	char pkt[64];
	ssize_t pn;
	for (size_t k = 0; (k == 0 || b[k - 1] != '\n') && (pn = read(pm, pkt, sizeof pkt)) > 0;)
		for (ssize_t i = 1; i < pn && k < sizeof b - 1; i++) /* packet mode: a status byte first */
			if (pkt[i] != '\r')
				b[k++] = pkt[i];
	int lk = 0, pk = 0;
	ioctl(pm, TIOCGPTLCK, &lk);
	ioctl(pm, TIOCGPKT, &pk);
	printf("pty: %s, erase %d, %dx%d, a terminal %d, locked %d, packet mode %d\n", strtok(b, "\n"), tt.c_cc[VERASE],
	       ws.ws_row, ws.ws_col, isatty(ps), lk, pk);
	unlink("inotified"); /* (made by the original, when it ran on: no event, only IN_CREATE is watched) */
	close(open("inotified", O_WRONLY | O_CREAT, 0600));
	write(log, "y", 1);
	printf("inotify:");
	for (ssize_t k = read(in, ev_buf, sizeof ev_buf), i = 0; k > 0 && i < k;) {
		struct inotify_event *ie = (struct inotify_event *)(ev_buf + i);
		printf(" wd %d %s %s", ie->wd, ie->mask & IN_CREATE ? "CREATE" : ie->mask & IN_MODIFY ? "MODIFY" : "other",
		       ie->len ? ie->name : "-");
		i += sizeof *ie + ie->len;
	}
	printf(", next watch %d, nonblocking %d\n", inotify_add_watch(in, "/", IN_ATTRIB),
	       (fcntl(in, F_GETFL) & O_NONBLOCK) != 0);
	struct sockaddr_in from, ucname;
	socklen_t froml = sizeof from, cl = sizeof ucname;
	int bc = 0;
	socklen_t bl = sizeof bc;
	getsockopt(uc, SOL_SOCKET, SO_BROADCAST, &bc, &bl);
	getsockname(uc, (struct sockaddr *)&ucname, &cl);
	memset(b, 0, sizeof b);
	ssize_t sent = send(uc, "udp!", 4, 0);
	ssize_t got_n = recvfrom(us, b, sizeof b, 0, (struct sockaddr *)&from, &froml);
	printf("udp: sent %zd, got %zd %s, from the connected one %d, broadcast %d, nonblocking %d\n", sent, got_n, b,
	       from.sin_port == ucname.sin_port, bc, (fcntl(uc, F_GETFL) & O_NONBLOCK) != 0);
	if (mp >= 0) {
		int mc = socket(AF_INET, SOCK_STREAM, 0), proto = 0;
		socklen_t pl = sizeof proto;
		getsockopt(mp, SOL_SOCKET, SO_PROTOCOL, &proto, &pl);
		printf("mptcp: protocol %d, connect %d", proto, connect(mc, (struct sockaddr *)&msin, sizeof msin));
		printf(", accept %d\n", accept(mp, NULL, NULL) >= 0);
	} else {
		printf("mptcp: none\n");
	}
	deleted("deleted", del, argv[1]);
	char tname[600] = { 0 }, self[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", tmp);
	readlink(self, tname, sizeof tname - 1);
	struct stat tst;
	fstat(tmp, &tst);
	printf("O_TMPFILE: size %ld, links %d, named #: %d\n", (long)tst.st_size, (int)tst.st_nlink,
	       !strncmp(tname, argv[1], strlen(argv[1])) && tname[strlen(argv[1])] == '/' &&
	       tname[strlen(argv[1]) + 1] == '#');
	mode_t m = umask(0);
	char cwd[512];
	printf("umask %03o, cwd %s\n", m, strcmp(getcwd(cwd, sizeof cwd), argv[1]) == 0 ? "kept" : cwd);
	return 7;
}
