/* Credentials as root sees them natively, for zvisor --fake-root to show
 * the same: the get*id family, /proc/self/status, capget, the auxv; the
 * kernel's rules for setuid and its family, setgroups, capset and the
 * capability prctls; an apt-like drop to a user, inherited by fork and
 * exec; glibc's setuid in a process of several threads; a set-user-ID
 * file run by a user; SCM_CREDENTIALS and SO_PEERCRED; the sender's uid
 * in a signal's siginfo; who may signal whom. Run as root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "errname.h"

/* linux/capability.h's, which musl's headers lack */
struct __user_cap_header_struct {
	unsigned version;
	int pid;
};
struct __user_cap_data_struct {
	unsigned effective, permitted, inheritable;
};
#define _LINUX_CAPABILITY_VERSION_1 0x19980330
#define _LINUX_CAPABILITY_VERSION_3 0x20080522
#define CAP_CHOWN 0
#define CAP_KILL 5
#define CAP_SETUID 7
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_IS_SET 1
#define PR_CAP_AMBIENT_RAISE 2
#endif
#ifndef SYS_capget
#define SYS_capget 125
#define SYS_capset 126
#endif

static char *self;

static void status_lines(const char *path, const char *who)
{
	FILE *f = fopen(path, "r");
	char line[512];
	if (!f) {
		printf("%s: %s: %s\n", who, path, errname(errno));
		return;
	}
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) || !strncmp(line, "Groups:", 7) ||
		    !strncmp(line, "Cap", 3))
			printf("%s: %s", who, line);
	fclose(f);
}

static void show_ids(const char *who)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	printf("%s: uid %d %d %d (getuid %d geteuid %d) gid %d %d %d (getgid %d getegid %d)\n", who, r, e, s,
	       getuid(), geteuid(), gr, ge, gs, getgid(), getegid());
	gid_t g[64];
	int n = getgroups(64, g);
	printf("%s: groups %d:", who, n);
	for (int i = 0; i < n; i++)
		printf(" %d", g[i]);
	printf("\n");
	printf("%s: fsuid %d fsgid %d\n", who, (int)syscall(SYS_setfsuid, -1), (int)syscall(SYS_setfsgid, -1));
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int rc = syscall(SYS_capget, &h, d);
	printf("%s: capget %d eff %08x%08x prm %08x%08x inh %08x%08x\n", who, rc, d[1].effective, d[0].effective,
	       d[1].permitted, d[0].permitted, d[1].inheritable, d[0].inheritable);
	status_lines("/proc/self/status", who);
}

static void mode_ids(void)
{
	show_ids("ids");
	printf("ids: auxv uid %lu euid %lu gid %lu egid %lu secure %lu\n", getauxval(AT_UID), getauxval(AT_EUID),
	       getauxval(AT_GID), getauxval(AT_EGID), getauxval(AT_SECURE));
	struct __user_cap_header_struct h = { 0x12345678, 0 };
	errno = 0;
	printf("ids: capget probe %ld version %x\n", syscall(SYS_capget, &h, NULL), h.version);
	h.version = 0x12345678;
	struct __user_cap_data_struct d[2];
	long rc = syscall(SYS_capget, &h, d);
	printf("ids: capget bad version %ld %s version %x\n", rc, errname(errno), h.version);
	h = (struct __user_cap_header_struct){ _LINUX_CAPABILITY_VERSION_1, 0 };
	rc = syscall(SYS_capget, &h, d);
	printf("ids: capget v1 %ld eff %08x\n", rc, d[0].effective);
	errno = 0;
	rc = syscall(SYS_getresuid, NULL, NULL, NULL);
	printf("ids: getresuid(NULL) %ld %s\n", rc, errname(errno));
	rc = syscall(SYS_getgroups, -1, NULL);
	printf("ids: getgroups(-1) %ld %s\n", rc, errname(errno));
}

/* One call in a child of a root process: its result and the ids after. */
#define TRY(call) try(#call, ({ errno = 0; long r_ = (call); r_ < 0 ? -errno : r_; }))
static void try(const char *what, long r)
{
	uid_t a, b, c;
	gid_t x, y, z;
	getresuid(&a, &b, &c);
	getresgid(&x, &y, &z);
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	syscall(SYS_capget, &h, d);
	char v[32];
	snprintf(v, sizeof v, "%ld", r);
	printf("rules: %s = %s -> %d %d %d fs %d / %d %d %d fs %d eff %x.%x prm %x.%x\n", what,
	       r < 0 ? errname((int)-r) : v, a, b, c, (int)syscall(SYS_setfsuid, -1), x, y, z,
	       (int)syscall(SYS_setfsgid, -1), d[1].effective, d[0].effective, d[1].permitted, d[0].permitted);
}

static void child(void (*fn)(void))
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		fn();
		fflush(stdout);
		_exit(0);
	}
	waitpid(p, NULL, 0);
}

static void rules1(void)
{
	TRY(setuid(1000));
	TRY(setuid(0));
	TRY(seteuid(0));
	TRY(setuid(1000));
}

static void rules2(void)
{
	TRY(seteuid(1000));
	TRY(setfsuid(2000));
	TRY(setfsuid(0));
	TRY(seteuid(0));
	TRY(setreuid(1000, 2000));
	TRY(setreuid(-1, 1000));
	TRY(setreuid(-1, 0));
	TRY(setresuid(-1, 2000, -1));
	TRY(setresuid(3000, -1, -1));
	TRY(setreuid(2000, 1000));
}

static void rules3(void)
{
	TRY(setresgid(10, 20, 30));
	TRY(setregid(-1, 40));
	TRY(setgid(50));
	TRY(setfsgid(60));
	TRY(setresuid(1000, 1000, 0));
	TRY(setgid(20));
	TRY(setgid(70));
	TRY(setresgid(-1, 50, -1));
	TRY(setfsgid(50));
	TRY(setuid(-1));
	TRY(setresuid(-1, 0, -1));
	TRY(setgid(70));
}

static void rules4(void)
{
	TRY(prctl(PR_SET_KEEPCAPS, 1));
	TRY(prctl(PR_GET_KEEPCAPS));
	TRY(setresuid(1000, 1000, 1000));
	TRY(prctl(PR_GET_KEEPCAPS));
	TRY(prctl(PR_CAPBSET_READ, CAP_SETUID));
	TRY(prctl(PR_CAPBSET_READ, 99));
	TRY(setuid(0));
	TRY(prctl(PR_SET_KEEPCAPS, 2));
}

static void rules5(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	d[0].effective = d[0].permitted = (1u << CAP_CHOWN) | (1u << CAP_SETUID);
	d[0].inheritable = 1u << CAP_SETUID;
	TRY(syscall(SYS_capset, &h, d));
	TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SETUID, 0, 0));
	TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SETUID, 0, 0));
	TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_KILL, 0, 0));
	d[0].effective = d[0].permitted = 1u << CAP_KILL;
	TRY(syscall(SYS_capset, &h, d));
	TRY(prctl(PR_CAPBSET_DROP, CAP_KILL));
	TRY(setgroups(0, NULL));
	d[0].effective = 0;
	d[0].permitted = 1u << CAP_SETUID;
	TRY(syscall(SYS_capset, &h, d));
	TRY(setuid(1000));
	TRY(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SETUID, 0, 0));
	h.pid = 1;
	TRY(syscall(SYS_capset, &h, d));
}

static void rules6(void)
{
	gid_t g[3] = { 30, 10, 20 };
	TRY(setgroups(3, g));
	gid_t out[8];
	if (getgroups(8, out) == 3)
		printf("rules: groups %d %d %d\n", out[0], out[1], out[2]);
	TRY(getgroups(2, out));
	TRY(getgroups(0, NULL));
	TRY(prctl(PR_SET_SECUREBITS, 1 << 2 /* NO_SETUID_FIXUP */));
	TRY(prctl(PR_GET_SECUREBITS));
	TRY(setresuid(1000, 1000, 1000));
	TRY(setgroups(1, g));
}

static void mode_rules(void)
{
	child(rules1);
	child(rules2);
	child(rules3);
	child(rules4);
	child(rules5);
	child(rules6);
}

/* As apt drops to _apt: groups, gids, uids, then checks that root is gone. */
static void mode_drop(void)
{
	gid_t g = 42;
	if (setgroups(1, &g) || setresgid(42, 42, 42) || setresuid(100, 100, 100)) {
		printf("drop: FAIL %s\n", errname(errno));
		return;
	}
	int r = setuid(0);
	printf("drop: setuid(0) %d %s\n", r, errname(errno));
	r = seteuid(0);
	printf("drop: seteuid(0) %d %s\n", r, errname(errno));
	r = setgroups(0, NULL);
	printf("drop: setgroups %d %s\n", r, errname(errno));
	show_ids("drop");
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		show_ids("drop child");
		execl(self, self, "ids", NULL);
		_exit(1);
	}
	int st;
	waitpid(p, &st, 0);
	printf("drop: child exit %d\n", WEXITSTATUS(st));
}

/* glibc changes every thread's ids (the kernel's are per thread). */
static pthread_barrier_t bar;
static char seen[4][512];
static void *thread_main(void *arg)
{
	long i = (long)(intptr_t)arg;
	pthread_barrier_wait(&bar); /* main changes the ids */
	pthread_barrier_wait(&bar);
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	int k = snprintf(seen[i], sizeof seen[i], "thread %ld: raw getuid %ld geteuid %ld; ", i, syscall(SYS_getuid),
			 syscall(SYS_geteuid));
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "Uid:", 4))
			snprintf(seen[i] + k, sizeof seen[i] - k, "%s", line);
	if (f)
		fclose(f);
	return NULL;
}

static void mode_threads(void)
{
	pthread_t t[4];
	pthread_barrier_init(&bar, NULL, 5);
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	pthread_barrier_wait(&bar);
	printf("threads: setresuid %d\n", setresuid(1000, 1000, 1000));
	pthread_barrier_wait(&bar);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		printf("%s", seen[i]);
	}
	show_ids("threads main");
}

/* A copy of this program, set-user-ID root, run by user 1000. */
static void mode_setuid(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/suid", dir);
	int in = open("/proc/self/exe", O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		write(out, buf, n);
	close(in);
	close(out);
	int c1 = chown(path, 0, 0), c2 = chmod(path, 04755);
	printf("setuid: chown %d chmod %d\n", c1, c2);
	struct stat st;
	stat(path, &st);
	printf("setuid: mode %o owner %d:%d\n", st.st_mode, st.st_uid, st.st_gid);
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		if (setresgid(100, 100, 100) || setresuid(1000, 1000, 1000))
			_exit(3);
		execl(path, path, "ids", NULL);
		_exit(2);
	}
	int s;
	waitpid(p, &s, 0);
	printf("setuid: child exit %d\n", WEXITSTATUS(s));
}

static void mode_scm(void)
{
	int sv[2], on = 1;
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
	struct ucred peer;
	socklen_t len = sizeof peer;
	getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &peer, &len);
	printf("scm: peercred uid %d gid %d (len %d)\n", peer.uid, peer.gid, (int)len);
	for (int k = 0; k < 2; k++) {
		struct ucred u = { getpid(), 0, 0 };
		if (k == 1 && setresuid(1000, 1000, 1000))
			printf("scm: FAIL setresuid\n");
		char cbuf[CMSG_SPACE(sizeof u)], c = 'x';
		struct iovec iov = { &c, 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_CREDENTIALS;
		h->cmsg_len = CMSG_LEN(sizeof u);
		memcpy(CMSG_DATA(h), &u, sizeof u);
		errno = 0;
		ssize_t r = sendmsg(sv[0], &m, 0);
		printf("scm: send as uid %d: %zd %s\n", u.uid, r, errname(errno));
		if (r != 1)
			continue;
		memset(cbuf, 0, sizeof cbuf);
		struct msghdr rm = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
		r = recvmsg(sv[1], &rm, 0);
		h = CMSG_FIRSTHDR(&rm);
		if (r == 1 && h && h->cmsg_type == SCM_CREDENTIALS) {
			struct ucred got;
			memcpy(&got, CMSG_DATA(h), sizeof got);
			printf("scm: received uid %d gid %d pid %s\n", got.uid, got.gid, got.pid == getpid() ? "ours" : "other");
		}
	}
}

/* siginfo: the sender's real uid (si_uid) of a signal, and a child's in
 * a SIGCHLD and a wait: root's own, a root child's, and a child's that
 * made its real uid 1000 (its euid stays 0, so it may signal root), in a
 * handler, waitid, sigwaitinfo, a signalfd (read, and readv of a dup)
 * and a tracer's waitid and PTRACE_GETSIGINFO. */
static const char *signame(int sig)
{
	return sig == SIGUSR1 ? "USR1" : sig == SIGUSR2 ? "USR2" : sig == SIGCHLD ? "CHLD" : "other";
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	printf("siginfo: handler %s code %d uid %u\n", signame(sig), si->si_code, (unsigned)si->si_uid);
}

static void block(int how, int sig)
{
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, sig);
	sigprocmask(how, &m, NULL);
}

/* A child that becomes real uid ruid (-1: stays root), sends sig to its
 * parent (by tgkill when tk) and exits with code. */
static pid_t sender(int ruid, int sig, int tk, int code)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		if (ruid >= 0 && setresuid(ruid, 0, 0))
			_exit(99);
		pid_t pp = getppid();
		if (tk ? syscall(SYS_tgkill, pp, pp, sig) : kill(pp, sig))
			_exit(98);
		_exit(code);
	}
	return p;
}

static void show_waitid(const char *who, const siginfo_t *si, pid_t p)
{
	printf("siginfo: %s code %d uid %u status %d pid %s\n", who, si->si_code, (unsigned)si->si_uid, si->si_status,
	       si->si_pid == p ? "child" : "other");
}

static void mode_siginfo(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	raise(SIGUSR1);
	kill(getpid(), SIGUSR1);
	sigqueue(getpid(), SIGUSR1, (union sigval){ .sival_int = 1 });
	/* handlers and waitid: both signals held until the child is reaped */
	block(SIG_BLOCK, SIGUSR1);
	block(SIG_BLOCK, SIGCHLD);
	for (int ruid = -1; ruid <= 1000; ruid += 1001) {
		siginfo_t si = { 0 };
		pid_t p = sender(ruid, SIGUSR1, 0, 3);
		waitid(P_PID, p, &si, WEXITED);
		show_waitid("waitid", &si, p);
		block(SIG_UNBLOCK, SIGUSR1);
		block(SIG_UNBLOCK, SIGCHLD);
		block(SIG_BLOCK, SIGUSR1);
		block(SIG_BLOCK, SIGCHLD);
	}
	/* sigwaitinfo: tgkill's, and a zombie's SIGCHLD */
	block(SIG_BLOCK, SIGUSR2);
	pid_t p = sender(1000, SIGUSR2, 1, 4);
	sigset_t m;
	siginfo_t si;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	sigwaitinfo(&m, &si);
	printf("siginfo: sigwaitinfo %s code %d uid %u\n", signame(si.si_signo), si.si_code, (unsigned)si.si_uid);
	sigemptyset(&m);
	sigaddset(&m, SIGCHLD);
	sigwaitinfo(&m, &si);
	show_waitid("sigwaitinfo", &si, p);
	waitpid(p, NULL, 0);
	/* a signalfd, read, and readv of its dup in two pieces */
	sigaddset(&m, SIGUSR1);
	int fd = signalfd(-1, &m, 0), fd2 = dup(fd);
	p = sender(1000, SIGUSR1, 0, 5);
	struct signalfd_siginfo ssi[2];
	ssize_t n = read(fd, ssi, sizeof ssi[0]);
	printf("siginfo: signalfd read %zd %s code %d uid %u\n", n, signame(ssi[0].ssi_signo), ssi[0].ssi_code,
	       ssi[0].ssi_uid);
	memset(ssi, 0, sizeof ssi);
	struct iovec iov[2] = { { ssi, 10 }, { (char *)ssi + 10, sizeof ssi[0] - 10 } };
	n = readv(fd2, iov, 2);
	printf("siginfo: signalfd readv %zd %s code %d uid %u status %d pid %s\n", n, signame(ssi[0].ssi_signo),
	       ssi[0].ssi_code, ssi[0].ssi_uid, ssi[0].ssi_status, (pid_t)ssi[0].ssi_pid == p ? "child" : "other");
	waitpid(p, NULL, 0);
	close(fd);
	close(fd2);
	/* a tracee that made its real uid 1000 and signals itself */
	fflush(stdout);
	p = fork();
	if (p == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		if (setresuid(1000, 0, 0))
			_exit(99);
		block(SIG_UNBLOCK, SIGUSR2);
		kill(getpid(), SIGUSR2);
		_exit(6);
	}
	memset(&si, 0, sizeof si);
	waitid(P_PID, p, &si, WEXITED | WSTOPPED);
	show_waitid("tracer waitid", &si, p);
	memset(&si, 0, sizeof si);
	long r = ptrace(PTRACE_GETSIGINFO, p, 0, &si);
	printf("siginfo: GETSIGINFO %ld %s code %d uid %u\n", r, signame(si.si_signo), si.si_code, (unsigned)si.si_uid);
	ptrace(PTRACE_SETOPTIONS, p, 0, PTRACE_O_TRACESYSGOOD);
	ptrace(PTRACE_SYSCALL, p, 0, 0); /* SIGUSR2 suppressed: to exit_group's entry */
	int st;
	waitpid(p, &st, 0);
	memset(&si, 0, sizeof si);
	r = ptrace(PTRACE_GETSIGINFO, p, 0, &si);
	printf("siginfo: syscall stop %x GETSIGINFO %ld code %#x uid %u\n", st >> 8, r, si.si_code, (unsigned)si.si_uid);
	ptrace(PTRACE_CONT, p, 0, 0);
	memset(&si, 0, sizeof si);
	waitid(P_PID, p, &si, WEXITED);
	show_waitid("tracer waitid", &si, p);
	/* a waitid with nothing to report (zeroed), and a root child killed */
	p = fork();
	if (p == 0) {
		pause();
		_exit(7);
	}
	memset(&si, 0xff, sizeof si);
	int r0 = waitid(P_PID, p, &si, WEXITED | WNOHANG);
	printf("siginfo: waitid WNOHANG %d signo %d code %d pid %d uid %u\n", r0, si.si_signo, si.si_code, si.si_pid,
	       (unsigned)si.si_uid);
	kill(p, SIGKILL);
	waitid(P_PID, p, &si, WEXITED);
	show_waitid("waitid", &si, p);
}

/* Slowly, for a checkpoint to cut: the ids and a symlink's owner, again and
 * again, after a drop that keeps root as the saved uid. */
static void mode_cr(const char *dir)
{
	char link[4096];
	snprintf(link, sizeof link, "%s/crlink", dir);
	if (symlink("target", link) || lchown(link, 5, 6) || setgroups(0, NULL) || setresgid(7, 7, 0) ||
	    setresuid(1000, 1000, 0))
		printf("cr: FAIL %s\n", errname(errno));
	for (int i = 0; i < 20; i++) {
		uid_t r, e, s;
		struct stat st;
		getresuid(&r, &e, &s);
		lstat(link, &st);
		printf("cr %d: uid %d %d %d gid %d %d link %d:%d\n", i, r, e, s, getgid(), getegid(), st.st_uid, st.st_gid);
		usleep(50000);
	}
	printf("cr: seteuid(0) %d\n", seteuid(0));
	status_lines("/proc/self/status", "cr");
}

/* killperm: a process that dropped to uid 1000 may not signal its root
 * parent (kill, tgkill, sigqueue, even signal 0: EPERM), except SIGCONT
 * within its session; one whose euid stays 0 may; uid 1000 may signal
 * its own uid-1000 child; root may signal anyone. */
static void try_kill(const char *what, long r)
{
	printf("killperm: %s %ld %s\n", what, r, r < 0 ? (errno == EPERM ? "EPERM" : errno == ESRCH ? "ESRCH" : "other") : "");
}

static void mode_killperm(void)
{
	fflush(stdout);
	pid_t pp = getpid(), p = fork();
	if (p == 0) {
		if (setresuid(1000, 0, 0))
			_exit(99);
		try_kill("ruid 1000 euid 0: kill(parent, 0)", kill(pp, 0));
		if (setresuid(1000, 1000, 0))
			_exit(98);
		try_kill("euid 1000 suid 0: kill(parent, 0)", kill(pp, 0));
		if (setresuid(1000, 1000, 1000))
			_exit(97);
		try_kill("uid 1000: kill(parent, 0)", kill(pp, 0));
		try_kill("uid 1000: kill(parent, SIGUSR1)", kill(pp, SIGUSR1));
		try_kill("uid 1000: tgkill(parent, SIGUSR1)", syscall(SYS_tgkill, pp, pp, SIGUSR1));
		try_kill("uid 1000: sigqueue(parent, SIGUSR1)", sigqueue(pp, SIGUSR1, (union sigval){ .sival_int = 1 }));
		try_kill("uid 1000: kill(parent, SIGCONT)", kill(pp, SIGCONT));
		try_kill("uid 1000: kill(self, 0)", kill(getpid(), 0));
		try_kill("uid 1000: kill(no such process, 0)", kill(0x3ffffff0, 0));
		try_kill("uid 1000: kill(parent, 99)", kill(pp, 99));
		fflush(stdout);
		pid_t g = fork();
		if (g == 0) {
			pause();
			_exit(0);
		}
		try_kill("uid 1000: kill(own child, SIGKILL)", kill(g, SIGKILL));
		waitpid(g, NULL, 0);
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	waitpid(p, &st, 0);
	printf("killperm: child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	fflush(stdout);
	p = fork();
	if (p == 0) {
		if (setresuid(1000, 1000, 1000))
			_exit(99);
		pause();
		_exit(0);
	}
	try_kill("root: kill(uid 1000 child, SIGKILL)", kill(p, SIGKILL));
	waitpid(p, NULL, 0);
}

int main(int argc, char **argv)
{
	self = argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "--list")) {
		printf("ids\nrules\ndrop\nthreads\nsetuid\nscm\nsiginfo\nkillperm\ncr\n");
		return 0;
	}
	if (!strcmp(m, "ids"))
		mode_ids();
	else if (!strcmp(m, "rules"))
		mode_rules();
	else if (!strcmp(m, "drop"))
		mode_drop();
	else if (!strcmp(m, "threads"))
		mode_threads();
	else if (!strcmp(m, "setuid") && argc > 2)
		mode_setuid(argv[2]);
	else if (!strcmp(m, "scm"))
		mode_scm();
	else if (!strcmp(m, "siginfo"))
		mode_siginfo();
	else if (!strcmp(m, "killperm"))
		mode_killperm();
	else if (!strcmp(m, "cr") && argc > 2)
		mode_cr(argv[2]);
	else {
		printf("usage: fakeids ids|rules|drop|threads|setuid DIR|scm|siginfo|killperm|cr DIR\n");
		return 2;
	}
	return 0;
}
