/* cr_pty.c: a session whose controlling terminal is a pseudo-terminal the
 * tree holds the master of, across a checkpoint (tests/test_cr_tree.py),
 * as script, expect or a terminal multiplexer's server make one. The
 * parent holds the master; its child makes a session with the terminal
 * as its controlling one (on its fd 0), changes its settings, and puts its
 * own child's process group in the foreground. Each says "ready" on stderr
 * and waits for a file named go (the test cuts the tree meanwhile); then
 * each checks what it had, one line per check on stdout, and a line goes
 * each way between master and terminal. The session leader's /dev/tty,
 * opened before its child is forked, is one description both hold. "queued": the same, with a line
 * typed to the terminal and not yet read by it at the cut. No argument:
 * exits 2. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void ready(const char *who)
{
	fprintf(stderr, "ready %s\n", who);
	while (access("go", F_OK) != 0) {
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
}

static void check(const char *what, int ok) { printf("%s: %s\n", what, ok ? "ok" : "FAIL"); }

static void waited(const char *who, pid_t pid)
{
	int st = -1;
	pid_t w = waitpid(pid, &st, 0);
	check(who, w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A line from fd (a terminal's end), without its \r; "" after 10 s. */
static void line_from(int fd, char *buf, size_t size)
{
	size_t n = 0;
	while (n + 1 < size) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 10000) <= 0 || read(fd, buf + n, 1) != 1)
			break;
		if (buf[n] == '\n')
			break;
		n += buf[n] != '\r';
	}
	buf[n] = 0;
}

/* Field by field: struct termios has padding. */
static int same_settings(const struct termios *a, const struct termios *b)
{
	return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
	       a->c_lflag == b->c_lflag && a->c_line == b->c_line && !memcmp(a->c_cc, b->c_cc, sizeof a->c_cc) &&
	       cfgetispeed(a) == cfgetispeed(b) && cfgetospeed(a) == cfgetospeed(b) && !(a->c_lflag & ECHO) &&
	       a->c_cc[VINTR] == 7;
}

static int devtty = -1; /* the session leader's /dev/tty, its child's too */

/* Whether fd is /dev/tty (not the terminal it stands for), of this session. */
static int is_devtty(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 && minor(st.st_rdev) == 0 &&
	       tcgetsid(fd) == getsid(0);
}

static void grandchild(void)
{
	ready("grandchild");
	check("grandchild: the /dev/tty it inherited", is_devtty(devtty));
	check("grandchild: its group is the terminal's foreground", tcgetpgrp(0) == getpgrp());
	check("grandchild: in its parent's session", getsid(0) == getppid());
	_exit(0);
}

/* The session leader, the terminal on its fd 0. */
static void child(int slave)
{
	setsid();
	int ctty = ioctl(slave, TIOCSCTTY, 0) == 0; /* said after go: all the output comes after the cut */
	dup2(slave, 0);
	close(slave);
	struct termios t;
	tcgetattr(0, &t);
	t.c_lflag &= ~(tcflag_t)ECHO;
	t.c_cc[VINTR] = 7;
	tcsetattr(0, TCSANOW, &t);
	tcgetattr(0, &t);
	struct winsize ws;
	ioctl(0, TIOCGWINSZ, &ws);
	devtty = open("/dev/tty", O_RDWR | O_CLOEXEC);
	pid_t gc = fork();
	if (gc == 0) {
		setpgid(0, 0);
		grandchild();
	}
	setpgid(gc, gc);
	signal(SIGTTOU, SIG_IGN);
	tcsetpgrp(0, gc);
	ready("child");
	waited("child: its child ended", gc); /* its lines first */
	check("child: made its terminal its controlling one", ctty);
	check("child: its /dev/tty, shared with its child", is_devtty(devtty) && fcntl(devtty, F_GETFD) == FD_CLOEXEC);
	check("child: its fd 0 is a terminal", isatty(0));
	check("child: leads its session", getsid(0) == getpid() && tcgetsid(0) == getpid());
	check("child: its child's group is the foreground", tcgetpgrp(0) == gc);
	tcsetpgrp(0, getpid()); /* to read from it */
	struct termios now;
	struct winsize wsnow;
	check("child: the settings are kept", tcgetattr(0, &now) == 0 && same_settings(&now, &t));
	check("child: the window size is kept", ioctl(0, TIOCGWINSZ, &wsnow) == 0 && !memcmp(&ws, &wsnow, sizeof ws) &&
						     ws.ws_row == 33 && ws.ws_col == 101);
	struct stat st0, stn;
	const char *name = ttyname(0);
	check("child: ttyname names its terminal", name && !strncmp(name, "/dev/pts/", 9) && stat(name, &stn) == 0 &&
						     fstat(0, &st0) == 0 && stn.st_rdev == st0.st_rdev);
	char stat_line[1024] = "";
	FILE *f = fopen("/proc/self/stat", "r");
	if (f) {
		fgets(stat_line, sizeof stat_line, f);
		fclose(f);
	}
	char *p = strrchr(stat_line, ')');
	unsigned long tty = 0;
	if (p)
		sscanf(p + 2, "%*c %*d %*d %*d %lu", &tty);
	check("child: /proc/self/stat's tty_nr is its terminal", tty == st0.st_rdev);
	char ct[L_ctermid];
	int fd = open(ctermid(ct), O_RDWR);
	check("child: /dev/tty opens", fd >= 0 && tcgetsid(fd) == getpid());
	close(fd);
	dprintf(0, "through the terminal\n");
	char buf[256];
	line_from(0, buf, sizeof buf);
	printf("child: read from the terminal: %s\n", buf);
	_exit(0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int queued = argc > 1 && !strcmp(argv[1], "queued");
	if (argc < 2 || (strcmp(argv[1], "session") && !queued)) {
		fprintf(stderr, "usage: cr_pty session|queued\n");
		return 2;
	}
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
		perror("posix_openpt");
		return 1;
	}
	struct winsize ws = { .ws_row = 33, .ws_col = 101 };
	ioctl(m, TIOCSWINSZ, &ws);
	int s = open(ptsname(m), O_RDWR | O_NOCTTY);
	pid_t c = fork();
	if (c == 0) {
		close(m);
		child(s);
	}
	close(s);
	if (queued) /* a line the terminal's reader has not read at the cut */
		dprintf(m, "typed ahead\n");
	ready("parent");
	char buf[256];
	line_from(m, buf, sizeof buf);
	printf("parent: read from the master: %s\n", buf);
	const char *name = ptsname(m);
	int fd = name ? open(name, O_RDWR | O_NOCTTY) : -1;
	check("parent: ptsname names the terminal", fd >= 0 && isatty(fd));
	close(fd);
	dprintf(m, "from the master\n");
	waited("parent: its child ended", c);
	return 0;
}
