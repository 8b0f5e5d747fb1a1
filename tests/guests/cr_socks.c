/* cr_socks.c: pipes, FIFOs and sockets across a checkpoint
 * (tests/test_cr_socks.py, test_cr_tree.py). Each mode sets up its files,
 * says "ready" and waits for SIGUSR1 (the test cuts it meanwhile), then
 * uses them and prints what it finds, one line per check:
 *   pair         stream and datagram socketpairs with queued messages, one
 *                carrying a pipe's end in flight (SCM_RIGHTS) with bytes in it
 *   unix DIR     a listening Unix socket at DIR/s, a client connected to it
 *                and the accepted end, bytes queued both ways
 *   tcp          a TCP listener on 127.0.0.1, a connection to it, bytes
 *                queued both ways; the addresses kept
 *   fifo DIR     a FIFO at DIR/f opened both ways, bytes in it
 *   gone         a socketpair whose other end wrote and closed
 *   tcpclose PORT  a connection to PORT outside (the test's server), restored
 *                closed (zvisor checkpoint --tcp-close): reads the end
 *   inherit      writes to fd 5 after the cut (the restorer's --inherit-fd 5) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static volatile sig_atomic_t go;
static void on_usr1(int sig) { go++; }

/* SIGUSR1 stays blocked but in sigsuspend, so none comes between the
 * test of go and the wait. */
static void ready(void)
{
	sigset_t none, usr1;
	sigemptyset(&none);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	printf("ready\n");
	while (!go)
		sigsuspend(&none);
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
}

static void check(const char *what, int ok) { printf("%s: %s\n", what, ok ? "ok" : "FAIL"); }

/* Reads what want is long (without waiting: it is there already). */
static int got(int fd, const char *want)
{
	char buf[256];
	size_t len = strlen(want);
	ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
	if (n < 0 && errno == ENOTSOCK)
		n = read(fd, buf, len);
	buf[n > 0 ? n : 0] = 0;
	if (strcmp(buf, want))
		printf("  (read '%s', want '%s')\n", buf, want);
	return n >= 0 && !strcmp(buf, want);
}

static int send_fd(int s, const char *data, int fd)
{
	char c[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)data, strlen(data) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c, .msg_controllen = sizeof c };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof fd);
	return sendmsg(s, &m, 0) == (ssize_t)strlen(data) ? 0 : -1;
}

static int recv_fd(int s, char *buf, size_t n)
{
	char c[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, n - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c, .msg_controllen = sizeof c };
	ssize_t k = recvmsg(s, &m, MSG_DONTWAIT);
	buf[k > 0 ? k : 0] = 0;
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	int fd = -1;
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(h), sizeof fd);
	return fd;
}

static int pair(void)
{
	int st[2], dg[2], p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, st) || socketpair(AF_UNIX, SOCK_DGRAM, 0, dg) || pipe(p))
		return 1;
	write(st[0], "stream one", 10);
	write(p[1], "in the pipe", 11);
	send_fd(st[0], "with an fd", p[0]);
	close(p[0]); /* only in flight now */
	send(dg[0], "first", 5, 0);
	send(dg[0], "", 0, 0);
	send(dg[0], "third", 5, 0);
	send(dg[1], "back", 4, 0);
	ready();
	check("stream: queued bytes", got(st[1], "stream one"));
	char buf[64];
	int fd = recv_fd(st[1], buf, 11);
	check("stream: the message with an fd", !strcmp(buf, "with an fd") && fd >= 0);
	check("stream: the fd in flight is the pipe", fd >= 0 && got(fd, "in the pipe"));
	check("stream: the pipe's writer is ours", write(p[1], "x", 1) == 1 && got(fd, "x"));
	check("dgram: first", got(dg[1], "first"));
	check("dgram: empty", recv(dg[1], buf, sizeof buf, MSG_DONTWAIT) == 0);
	check("dgram: third", got(dg[1], "third"));
	check("dgram: nothing more", recv(dg[1], buf, sizeof buf, MSG_DONTWAIT) < 0 && errno == EAGAIN);
	check("dgram: the other way", got(dg[0], "back"));
	check("stream: still connected", write(st[1], "y", 1) == 1 && got(st[0], "y"));
	return 0;
}

static int unix_mode(const char *dir)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX }, b;
	snprintf(a.sun_path, sizeof a.sun_path, "%s/s", dir);
	unlink(a.sun_path);
	int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(l, (void *)&a, sizeof a) || listen(l, 4) || connect(c, (void *)&a, sizeof a))
		return 1;
	int s = accept(l, NULL, NULL);
	write(c, "to the server", 13);
	write(s, "to the client", 13);
	ready();
	check("client's queued bytes at the server", got(s, "to the server"));
	check("server's queued bytes at the client", got(c, "to the client"));
	socklen_t n = sizeof b;
	check("the accepted end's name", getsockname(s, (void *)&b, &n) == 0 && !strcmp(b.sun_path, a.sun_path));
	n = sizeof b;
	check("the client's peer name", getpeername(c, (void *)&b, &n) == 0 && !strcmp(b.sun_path, a.sun_path));
	int c2 = socket(AF_UNIX, SOCK_STREAM, 0);
	check("the listener takes a new client", connect(c2, (void *)&a, sizeof a) == 0 && accept(l, NULL, NULL) >= 0);
	unlink(a.sun_path);
	return 0;
}

static int tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, la, pa, la2, pa2;
	socklen_t n = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(l, (void *)&a, sizeof a) || listen(l, 4) || getsockname(l, (void *)&a, &n) ||
	    connect(c, (void *)&a, sizeof a))
		return 1;
	int s = accept(l, NULL, NULL);
	write(c, "request", 7);
	write(s, "answer", 6);
	write(s, " more", 5);
	n = sizeof la;
	getsockname(c, (void *)&la, &n);
	n = sizeof pa;
	getpeername(s, (void *)&pa, &n);
	ready();
	usleep(10000); /* loopback delivers at once; be sure */
	check("the server's queue", got(s, "request"));
	check("the client's queue", got(c, "answer more"));
	n = sizeof la2;
	getsockname(c, (void *)&la2, &n);
	n = sizeof pa2;
	getpeername(s, (void *)&pa2, &n);
	check("the client's address kept", la.sin_port == la2.sin_port && la.sin_addr.s_addr == la2.sin_addr.s_addr);
	check("the server's peer kept", pa.sin_port == pa2.sin_port);
	check("still connected", write(c, "again", 5) == 5 && (usleep(10000), got(s, "again")));
	int c2 = socket(AF_INET, SOCK_STREAM, 0);
	check("the listener takes a new client", connect(c2, (void *)&a, sizeof a) == 0 && accept(l, NULL, NULL) >= 0);
	return 0;
}

static int fifo(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/f", dir);
	unlink(path);
	if (mkfifo(path, 0600))
		return 1;
	int r = open(path, O_RDONLY | O_NONBLOCK), w = open(path, O_WRONLY | O_NONBLOCK);
	write(w, "through the fifo", 16);
	ready();
	check("the FIFO's bytes", got(r, "through the fifo"));
	check("the FIFO still works", write(w, "z", 1) == 1 && got(r, "z"));
	unlink(path);
	return 0;
}

static int gone(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	write(sv[1], "last words", 10);
	close(sv[1]);
	ready();
	char buf[16];
	check("the bytes its peer left", got(sv[0], "last words"));
	check("then the end", read(sv[0], buf, sizeof buf) == 0);
	signal(SIGPIPE, SIG_IGN);
	check("writing fails", write(sv[0], "x", 1) < 0 && errno == EPIPE);
	return 0;
}

static int tcpclose(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (void *)&a, sizeof a))
		return 1;
	char buf[64];
	ssize_t n = read(c, buf, sizeof buf); /* the server's greeting */
	printf("greeted: %s\n", n > 0 ? "yes" : "no");
	ready();
	/* natively the test's server closes it; restored with --tcp-close it is closed */
	n = read(c, buf, sizeof buf);
	check("the connection ends", n <= 0);
	return 0;
}

static int inherit(void)
{
	ready();
	const char msg[] = "through the inherited fd\n";
	check("fd 5 written", write(5, msg, sizeof msg - 1) == sizeof msg - 1);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "pair"))
		return pair();
	if (!strcmp(m, "unix") && argc > 2)
		return unix_mode(argv[2]);
	if (!strcmp(m, "tcp"))
		return tcp();
	if (!strcmp(m, "fifo") && argc > 2)
		return fifo(argv[2]);
	if (!strcmp(m, "gone"))
		return gone();
	if (!strcmp(m, "tcpclose") && argc > 2)
		return tcpclose(atoi(argv[2]));
	if (!strcmp(m, "inherit"))
		return inherit();
	fprintf(stderr, "usage: cr_socks pair|unix DIR|tcp|fifo DIR|gone|tcpclose PORT|inherit\n");
	return 2;
}
