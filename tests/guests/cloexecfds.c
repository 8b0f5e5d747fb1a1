/* Which fds an exec closes, for fds made and marked by every kind of call:
 * open, openat, openat2, dup, dup2 and dup3 (over close-on-exec fds too),
 * F_DUPFD and F_DUPFD_CLOEXEC, F_SETFD both ways, FIOCLEX and FIONCLEX,
 * pipe and pipe2, socket, socketpair, accept4, eventfd2, epoll_create1,
 * inotify_init1, memfd_create, timerfd_create, signalfd4, pidfd_open,
 * mq_open (close-on-exec always), fds
 * received with and without MSG_CMSG_CLOEXEC, close_range plain and with
 * CLOSE_RANGE_CLOEXEC, fds above 1024, fds a fork child made before its
 * exec; then a second exec after more of them (a chain). The new image
 * prints each fd below 1100 that is open, with its FD_CLOEXEC bit.
 *
 *   cloexecfds [MODE]    MODE: "" all but the next (zvisor follows each
 *                        call: no listing of /proc/self/fd at the exec),
 *                        "range" close_range's CLOSE_RANGE_CLOEXEC, "recv"
 *                        SCM_RIGHTS, "high" fds above 1024 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

struct how { uint64_t flags, mode, resolve; }; /* openat2's struct open_how (not in musl's headers) */
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void list(const char *what)
{
	printf("== %s\n", what);
	for (int fd = 0; fd < 1100; fd++) {
		int fl = fcntl(fd, F_GETFD);
		if (fl >= 0)
			printf("fd %d cloexec %d\n", fd, fl & FD_CLOEXEC);
	}
	fflush(stdout);
}

static void again(const char *self, const char *next)
{
	char *const argv[] = { (char *)self, (char *)next, NULL };
	execv("/proc/self/exe", argv);
	perror("exec failed");
	exit(1);
}

/* Makes fds of every kind, half of them close-on-exec. */
static void make_many(void)
{
	int n = open("/dev/null", O_RDONLY), c = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int at = openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
	struct how how = { .flags = O_RDONLY | O_CLOEXEC };
	long at2 = syscall(SYS_openat2, AT_FDCWD, "/dev/null", &how, sizeof how);
	how.flags = O_RDONLY;
	long at2n = syscall(SYS_openat2, AT_FDCWD, "/dev/null", &how, sizeof how);
	(void)at; (void)at2; (void)at2n;
	dup(c);                        /* a dup is kept */
	fcntl(c, F_DUPFD, 50);
	fcntl(n, F_DUPFD_CLOEXEC, 60);
	int over = open("/dev/null", O_RDONLY | O_CLOEXEC);
	dup2(n, over);                 /* a close-on-exec fd replaced by a kept one */
	int over3 = open("/dev/null", O_RDONLY);
	dup3(c, over3, O_CLOEXEC);     /* a kept one replaced by a close-on-exec one */
	dup2(c, c);                    /* no change */
	int s1 = open("/dev/null", O_RDONLY), s2 = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fcntl(s1, F_SETFD, FD_CLOEXEC);
	fcntl(s2, F_SETFD, 0);
	int i1 = open("/dev/null", O_RDONLY), i2 = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ioctl(i1, FIOCLEX);
	ioctl(i2, FIONCLEX);
	int p[2];
	pipe(p);
	pipe2(p, O_CLOEXEC);
	socket(AF_UNIX, SOCK_STREAM, 0);
	socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p);
	socketpair(AF_UNIX, SOCK_STREAM, 0, p);
	eventfd(0, EFD_CLOEXEC);
	eventfd(0, 0);
	epoll_create1(EPOLL_CLOEXEC);
	inotify_init1(IN_CLOEXEC);
	memfd_create("m", MFD_CLOEXEC);
	memfd_create("m", 0);
	timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	signalfd(-1, &m, SFD_CLOEXEC);
	syscall(SYS_pidfd_open, getpid(), 0);
	char q[40];                    /* a message queue's fd is close-on-exec without asking */
	snprintf(q, sizeof q, "cloexecfds-%d", getpid());
	if (syscall(SYS_mq_open, q, O_CREAT | O_RDWR, 0600, NULL) >= 0)
		syscall(SYS_mq_unlink, q);
	/* a listening socket and an accept4 */
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "cloexecfds-%d", getpid());
	socklen_t al = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1);
	if (bind(l, (struct sockaddr *)&a, al) == 0 && listen(l, 2) == 0) {
		int cl = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		connect(cl, (struct sockaddr *)&a, al);
		accept4(l, NULL, NULL, SOCK_CLOEXEC);
		int cl2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		connect(cl2, (struct sockaddr *)&a, al);
		accept4(l, NULL, NULL, 0);
	}
	close(i1);
}

/* Two fds passed through a socketpair, received with and without the flag. */
static void receive(void)
{
	for (int flag = 0; flag < 2; flag++) {
		int sp[2];
		socketpair(AF_UNIX, SOCK_DGRAM, 0, sp);
		int give = open("/dev/null", O_RDONLY);
		char c = 'x', cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { &c, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &give, sizeof give);
		sendmsg(sp[0], &mh, 0);
		close(give);
		recvmsg(sp[1], &mh, flag ? MSG_CMSG_CLOEXEC : 0);
		close(sp[0]);
		close(sp[1]);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "after")) {
		list("after exec");
		return 0;
	}
	if (!strcmp(mode, "chain")) {
		list("after the first exec");
		make_many();
		again(argv[0], "after");
	}
	if (!strcmp(mode, "range")) {
		int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
		(void)a; (void)b;
		dup2(a, 1030);
		syscall(SYS_close_range, 4, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
		open("/dev/null", O_RDONLY);
		again(argv[0], "after");
	}
	if (!strcmp(mode, "high")) { /* above the first 1024 */
		int n = open("/dev/null", O_RDONLY);
		dup3(n, 1050, O_CLOEXEC);
		dup2(n, 1060);
		again(argv[0], "after");
	}
	if (!strcmp(mode, "recv")) {
		receive();
		again(argv[0], "after");
	}
	make_many();
	int c = open("/dev/null", O_RDONLY | O_CLOEXEC);
	open("/dev/null", O_RDONLY);
	syscall(SYS_close_range, c, c + 1, 0);
	/* a fork child's fds, made before its exec */
	pid_t pid = fork();
	if (pid == 0) {
		open("/dev/null", O_RDONLY | O_CLOEXEC);
		open("/dev/null", O_RDONLY);
		again(argv[0], "chain");
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	fflush(stdout);
	again(argv[0], "chain");
}
