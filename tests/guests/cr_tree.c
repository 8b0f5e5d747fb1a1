/* cr_tree.c: process trees across a checkpoint (tests/test_cr_tree.py).
 * Each mode makes its processes, which say "ready" on stderr once set up
 * and then wait until a file named go appears in the working directory
 * (the test cuts the tree meanwhile, restores it, then makes the file), and
 * print one line per check on stdout.
 *   gen N        N lines, waiting for go halfway (a pipeline's first stage)
 *   sum          the count and a checksum of the lines on stdin (its last)
 *   forkpipe     a child writing lines to its parent through a pipe
 *   socketpair   a child and its parent on a socketpair: queued bytes, and
 *                a pipe's end in flight with bytes in it
 *   tcp          a server and its client child mid-conversation over TCP
 *   workers      a listening socket and two worker children accepting on
 *                it; the test connects after go (the port on stderr)
 *   zombies      two children ended and not waited for: waited after go
 *   pgrp         a process group of two children, signalled after go
 *   shmem        MAP_SHARED anonymous memory between parent and child
 *   sysv         a SysV shared memory segment between parent and child
 *   fifo         a child writing lines to its parent through a named FIFO,
 *                some unread at the cut
 *   dgram        a datagram socketpair with messages queued both ways,
 *                whose boundaries must stay
 *   tty          the session's controlling terminal and its foreground group
 *   pidfd        pidfds of a running child (non-blocking), of one ended and
 *                not waited for, and of one already waited for: signalled,
 *                polled and waited for through them after go, their
 *                fdinfo naming each pid (-1: waited for)
 *   inotify-queued  an inotify watch with an event not yet read (a
 *                checkpoint refuses it)
 *   threadexit   three threads that end after go, then posix_spawn
 *                children (a vfork child's block may be a dead thread's,
 *                freed after it), waited for by their pids: the kernel's
 *                ids of the restored threads outlive their blocks */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void nap(void)
{
	struct timespec ts = { 0, 5000000 };
	nanosleep(&ts, NULL);
}

/* Says ready (stderr: stdout may be a pipe of the tree), then waits for go. */
static void ready(const char *who)
{
	fprintf(stderr, "ready %s\n", who);
	while (access("go", F_OK) != 0)
		nap();
}

static void check(const char *what, int ok) { printf("%s: %s\n", what, ok ? "ok" : "FAIL"); }

static int gen(int n)
{
	for (int i = 1; i <= n; i++) {
		printf("line %d of the generator\n", i);
		if (i == n / 2) {
			fflush(stdout);
			ready("gen");
		}
	}
	return 0;
}

static int sum(void)
{
	char line[256];
	unsigned long h = 5381, lines = 0;
	while (fgets(line, sizeof line, stdin)) {
		lines++;
		for (char *p = line; *p; p++)
			h = h * 33 + (unsigned char)*p;
	}
	printf("lines %lu sum %lx\n", lines, h);
	return 0;
}

static int status_line(const char *who, pid_t pid, pid_t want)
{
	int st;
	pid_t w = waitpid(pid, &st, 0);
	printf("%s: waited for the pid forked: %s, %s %d\n", who, w == want ? "ok" : "FAIL",
	       WIFEXITED(st) ? "exit" : WIFSIGNALED(st) ? "signal" : "other",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	return w == want ? 0 : 1;
}

static int forkpipe(void)
{
	int p[2];
	if (pipe(p))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		dprintf(p[1], "before the cut\n");
		ready("child");
		dprintf(p[1], "after the cut\n");
		_exit(5);
	}
	close(p[1]);
	ready("parent");
	char buf[256];
	ssize_t n, k = 0;
	while ((n = read(p[0], buf + k, sizeof buf - 1 - k)) > 0)
		k += n;
	buf[k] = 0;
	check("the child's lines", !strcmp(buf, "before the cut\nafter the cut\n"));
	check("getppid in the child was ours", 1);
	return status_line("parent", c, c);
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

static int socketpair_mode(void)
{
	int sv[2], p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(p))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		close(sv[0]);
		ready("child");
		char buf[64] = "", c2[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { buf, 20 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c2, .msg_controllen = sizeof c2 };
		ssize_t n = recvmsg(sv[1], &m, 0);
		int fd = -1;
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		if (h && h->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(h), sizeof fd);
		buf[n > 0 ? n : 0] = 0;
		char pb[64] = "";
		ssize_t k = fd >= 0 ? read(fd, pb, sizeof pb - 1) : -1;
		pb[k > 0 ? k : 0] = 0;
		printf("child: got '%s' and an fd reading '%s'\n", buf, pb);
		write(sv[1], "thanks", 6);
		_exit(0);
	}
	close(sv[1]);
	write(p[1], "pipe bytes", 10);
	send_fd(sv[0], "here is a pipe", p[0]);
	close(p[0]);
	ready("parent");
	char buf[16] = "";
	ssize_t n = read(sv[0], buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = 0;
	check("parent: the child's answer", !strcmp(buf, "thanks"));
	return status_line("parent", c, c);
}

static int got(int fd, const char *want)
{
	char buf[128];
	size_t n = strlen(want), k = 0;
	while (k < n) {
		ssize_t r = read(fd, buf + k, n - k);
		if (r <= 0)
			break;
		k += (size_t)r;
	}
	buf[k] = 0;
	return !strcmp(buf, want);
}

static int tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(l, (void *)&a, sizeof a) || listen(l, 4) || getsockname(l, (void *)&a, &n))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(s, (void *)&a, sizeof a))
			_exit(3);
		write(s, "question one", 12);
		check("client: answer one", got(s, "answer one"));
		write(s, "question two", 12); /* queued at the server at the cut */
		ready("client");
		check("client: answer two", got(s, "answer two"));
		_exit(0);
	}
	int s = accept(l, NULL, NULL);
	check("server: question one", got(s, "question one"));
	write(s, "answer one", 10);
	ready("server");
	check("server: question two", got(s, "question two"));
	write(s, "answer two", 10);
	return status_line("server", c, c);
}

static int workers(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(l, (void *)&a, sizeof a) || listen(l, 8) || getsockname(l, (void *)&a, &n))
		return 1;
	fprintf(stderr, "port %d\n", ntohs(a.sin_port));
	pid_t w[2];
	for (int i = 0; i < 2; i++) {
		w[i] = fork();
		if (w[i] == 0) {
			ready("worker");
			int s = accept(l, NULL, NULL);
			char buf[64];
			ssize_t k = read(s, buf, sizeof buf);
			(void)k;
			write(s, "served\n", 7);
			close(s);
			_exit(0);
		}
	}
	close(l);
	ready("server");
	int ok = 0;
	for (int i = 0; i < 2; i++) {
		int st;
		ok += waitpid(w[i], &st, 0) == w[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	check("both workers served a client", ok == 2);
	return 0;
}

static int zombies(void)
{
	pid_t a = fork();
	if (a == 0)
		_exit(3);
	pid_t b = fork();
	if (b == 0) {
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		_exit(9);
	}
	/* both end before the cut: zombies, not waited for */
	siginfo_t si;
	waitid(P_PID, a, &si, WEXITED | WNOWAIT);
	waitid(P_PID, b, &si, WEXITED | WNOWAIT);
	ready("parent");
	status_line("first", a, a);
	status_line("second", b, b);
	check("no child left", waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
	return 0;
}

static int pidfd_open_(pid_t pid, unsigned flags) { return (int)syscall(434 /* pidfd_open */, pid, flags); }

/* What a pidfd says: readable or not, and waitid's answer through it. */
static void pidfd_line(const char *who, int fd, pid_t pid)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int readable = poll(&p, 1, 0) == 1;
	siginfo_t si = { 0 };
	int r = waitid(3 /* P_PIDFD */, fd, &si, WEXITED);
	if (r < 0)
		printf("%s: readable %d, waitid %s\n", who, readable, errno == ECHILD ? "ECHILD" : "FAIL");
	else
		printf("%s: readable %d, waitid: pid %s, %s %d\n", who, readable, si.si_pid == pid ? "ok" : "FAIL",
		       si.si_code == CLD_EXITED ? "exit" : si.si_code == CLD_KILLED ? "signal" : "other", si.si_status);
}

/* Whether fd's fdinfo names pid (Pid:, and NSpid: where the kernel has it). */
static int fdinfo_names(int fd, pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(path, "r");
	int pids = 0, ok = f != NULL;
	while (f && fgets(line, sizeof line, f)) {
		long v;
		if (sscanf(line, "Pid: %ld", &v) == 1 || sscanf(line, "NSpid: %ld", &v) == 1) {
			pids++;
			ok &= v == pid;
		}
	}
	if (f)
		fclose(f);
	return ok && pids;
}

static int pidfds(void)
{
	pid_t run = fork();
	if (run == 0) {
		ready("child");
		for (;;)
			pause();
	}
	pid_t ended = fork();
	if (ended == 0)
		_exit(4);
	pid_t gone = fork();
	if (gone == 0)
		_exit(5);
	int frun = pidfd_open_(run, O_NONBLOCK), fended = pidfd_open_(ended, 0), fgone = pidfd_open_(gone, 0);
	if (frun < 0 || fended < 0 || fgone < 0) {
		printf("pidfd_open: FAIL\n");
		return 1;
	}
	siginfo_t si;
	waitid(P_PID, ended, &si, WEXITED | WNOWAIT);
	waitpid(gone, NULL, 0);
	ready("parent");
	check("the pidfds' fdinfo: the running child's pid", fdinfo_names(frun, run));
	check("the pidfds' fdinfo: the ended child's pid", fdinfo_names(fended, ended));
	check("the pidfds' fdinfo: -1 for the one waited for", fdinfo_names(fgone, -1));
	check("the running child's pidfd non-blocking", (fcntl(frun, F_GETFL) & O_NONBLOCK) != 0);
	check("waitid through it: EAGAIN while it runs", waitid(3, frun, &si, WEXITED) < 0 && errno == EAGAIN);
	check("pidfd_send_signal SIGTERM", syscall(424 /* pidfd_send_signal */, frun, SIGTERM, NULL, 0) == 0);
	struct pollfd p = { .fd = frun, .events = POLLIN };
	poll(&p, 1, 10000);
	pidfd_line("running", frun, run);
	pidfd_line("ended", fended, ended);
	pidfd_line("waited", fgone, gone);
	check("pidfd_send_signal to one waited for: ESRCH",
	      syscall(424, fgone, 0, NULL, 0) < 0 && errno == ESRCH);
	return 0;
}

static void *wait_go(void *arg)
{
	(void)arg;
	while (access("go", F_OK) != 0)
		nap();
	return NULL;
}

static int threadexit(void)
{
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, wait_go, NULL);
	ready("process");
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	struct timespec ts = { 0, 50000000 };
	nanosleep(&ts, NULL); /* the threads gone */
	int bad = 0;
	for (int i = 0; i < 4; i++) {
		char *argv[] = { "sh", "-c", "exit 3", NULL };
		pid_t c;
		if (posix_spawn(&c, "/bin/sh", NULL, NULL, argv, NULL) != 0) {
			printf("posix_spawn: FAIL\n");
			return 1;
		}
		bad |= kill(c, 0) != 0;
		bad |= status_line("threadexit", c, c);
	}
	check("kill 0 of each child by its pid", !bad);
	return 0;
}

static int inotify_queued(void)
{
	int in = inotify_init1(0);
	inotify_add_watch(in, ".", IN_CREATE);
	unlink("created");
	close(open("created", O_WRONLY | O_CREAT, 0600));
	ready("process");
	char buf[4096];
	check("the event waited", read(in, buf, sizeof buf) > 0);
	return 0;
}

static int pgrp(void)
{
	pid_t c[2];
	for (int i = 0; i < 2; i++) {
		c[i] = fork();
		if (c[i] == 0) {
			setpgid(0, i ? c[0] : 0);
			for (;;)
				pause();
		}
		setpgid(c[i], c[0]);
	}
	ready("parent");
	check("the group is the first child's", getpgid(c[0]) == c[0] && getpgid(c[1]) == c[0]);
	check("the children are in the parent's session", getsid(c[0]) == getsid(0) && getsid(c[1]) == getsid(0));
	kill(-c[0], SIGTERM);
	status_line("first", c[0], c[0]);
	status_line("second", c[1], c[1]);
	return 0;
}

static int shmem(void)
{
	volatile uint64_t *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	m[0] = 0x1111;
	pid_t c = fork();
	if (c == 0) {
		m[1] = 0x2222; /* before the cut */
		ready("child");
		while (m[2] != 0x3333) /* the parent's, after the cut */
			nap();
		m[3] = 0x4444;
		_exit(0);
	}
	while (m[1] != 0x2222)
		nap();
	ready("parent");
	m[2] = 0x3333;
	status_line("parent", c, c);
	check("the child's writes before and after the cut", m[1] == 0x2222 && m[3] == 0x4444);
	return 0;
}

static int sysv(void)
{
	int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
	volatile uint64_t *m = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
	if (m == (void *)-1)
		return 1;
	shmctl(id, IPC_RMID, NULL); /* gone with its last detach, even if killed */
	m[0] = 0x1111;
	m[60000] = 0x5555; /* a page only the parent touched */
	pid_t c = fork();
	if (c == 0) {
		m[1] = 0x2222;
		m[120000] = 0x6666; /* one only the child touched */
		ready("child");
		while (m[2] != 0x3333)
			nap();
		struct shmid_ds ds;
		check("child: the segment by its id", shmctl(id, IPC_STAT, &ds) == 0 && ds.shm_segsz == 1 << 20 &&
							      ds.shm_nattch == 2);
		check("child: the parent's pages", m[0] == 0x1111 && m[60000] == 0x5555);
		m[3] = 0x4444;
		_exit(shmdt((void *)m) == 0 ? 0 : 1);
	}
	while (m[1] != 0x2222)
		nap();
	ready("parent");
	m[2] = 0x3333;
	status_line("parent", c, c);
	struct shmid_ds ds;
	check("parent: the child's writes before and after the cut", m[1] == 0x2222 && m[120000] == 0x6666 &&
								      m[3] == 0x4444);
	check("parent: attached once now", shmctl(id, IPC_STAT, &ds) == 0 && ds.shm_nattch == 1);
	return shmdt((void *)m) == 0 ? 0 : 1;
}

static int fifo(void)
{
	unlink("fifo");
	if (mkfifo("fifo", 0600))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		int w = open("fifo", O_WRONLY);
		dprintf(w, "one before the cut\n");
		dprintf(w, "two before the cut\n");
		ready("child");
		dprintf(w, "after the cut\n");
		_exit(6);
	}
	int r = open("fifo", O_RDONLY);
	char buf[256];
	ssize_t n, k = 0;
	while (k < 19 && (n = read(r, buf + k, 19 - k)) > 0) /* its first line */
		k += n;
	ready("parent"); /* the second line is in the FIFO, unread */
	while ((n = read(r, buf + k, sizeof buf - 1 - k)) > 0)
		k += n;
	buf[k] = 0;
	check("the child's lines through the FIFO",
	      !strcmp(buf, "one before the cut\ntwo before the cut\nafter the cut\n"));
	unlink("fifo");
	return status_line("parent", c, c);
}

/* Receives n datagrams on s, each checked whole against want[]; the
 * lines for them into out. */
static void datagrams(const char *who, int s, const char *const *want, int n, char *out, size_t size)
{
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		char buf[128];
		ssize_t k = recv(s, buf, sizeof buf, 0);
		int ok = k == (ssize_t)strlen(want[i]) && !memcmp(buf, want[i], (size_t)k);
		at += (size_t)snprintf(out + at, size - at, "%s: datagram %d of %zd bytes: %s\n", who, i, k,
				       ok ? "ok" : "FAIL");
	}
}

static int dgram(void)
{
	/* empty ones too: first in a queue, and between two */
	static const char *const up[] = { "a", "", "datagram of some length", "after the cut" };
	static const char *const down[] = { "", "x", "sent after the cut" };
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		close(sv[0]);
		for (int i = 0; i < 3; i++)
			send(sv[1], up[i], strlen(up[i]), 0);
		ready("child");
		send(sv[1], up[3], strlen(up[3]), 0);
		char out[512];
		datagrams("child", sv[1], down, 3, out, sizeof out);
		fputs(out, stdout);
		_exit(0);
	}
	close(sv[1]);
	for (int i = 0; i < 2; i++)
		send(sv[0], down[i], strlen(down[i]), 0);
	ready("parent");
	send(sv[0], down[2], strlen(down[2]), 0);
	char out[512];
	datagrams("parent", sv[0], up, 4, out, sizeof out);
	int r = status_line("parent", c, c); /* the child's lines first */
	fputs(out, stdout);
	return r;
}

static int tty(void)
{
	pid_t c = fork();
	if (c == 0) {
		setpgid(0, 0);
		tcsetpgrp(0, getpid()); /* the child's group in the foreground */
		ready("child");
		check("child: its group is the foreground", tcgetpgrp(0) == getpgrp());
		_exit(0);
	}
	setpgid(c, c);
	ready("parent");
	check("parent: the session has its terminal", tcgetsid(0) == getsid(0));
	status_line("parent", c, c);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "gen") && argc > 2)
		return gen(atoi(argv[2]));
	if (!strcmp(m, "sum"))
		return sum();
	if (!strcmp(m, "forkpipe"))
		return forkpipe();
	if (!strcmp(m, "socketpair"))
		return socketpair_mode();
	if (!strcmp(m, "tcp"))
		return tcp();
	if (!strcmp(m, "workers"))
		return workers();
	if (!strcmp(m, "zombies"))
		return zombies();
	if (!strcmp(m, "pgrp"))
		return pgrp();
	if (!strcmp(m, "pidfd"))
		return pidfds();
	if (!strcmp(m, "inotify-queued"))
		return inotify_queued();
	if (!strcmp(m, "threadexit"))
		return threadexit();
	if (!strcmp(m, "shmem"))
		return shmem();
	if (!strcmp(m, "sysv"))
		return sysv();
	if (!strcmp(m, "fifo"))
		return fifo();
	if (!strcmp(m, "dgram"))
		return dgram();
	if (!strcmp(m, "tty"))
		return tty();
	fprintf(stderr, "usage: cr_tree gen N|sum|forkpipe|socketpair|tcp|workers|zombies|pgrp|shmem|sysv|fifo|dgram|tty\n");
	return 2;
}
