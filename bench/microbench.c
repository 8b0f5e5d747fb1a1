/*
 * microbench: time one system-call-bound operation, in ns per operation.
 *
 *   microbench [-b BATCHES] [-t SECONDS] [-T] OP [ITERATIONS]
 *   microbench list
 *
 * The operations issue raw `syscall` instructions through inline asm, so no
 * libc wrapper (and no caching in one) sits between the loop and the kernel
 * that receives the call.  The one exception is clock_gettime, which goes
 * through libc on purpose: that row measures the vDSO, where no system call
 * should happen at all.
 *
 * The loop runs BATCHES timed batches (default 5) and prints the median batch's
 * ns per operation, with the fastest and slowest batch.  With ITERATIONS, the
 * batches share that many iterations; without, the program first calibrates
 * (which also warms up: lazily rewritten call sites, page faults, caches) so
 * that all the batches together take about SECONDS (default 0.3), whatever
 * runs underneath.  Output is one line:
 *
 *   op=getpid ns_per_op=98.7 min=97.9 max=101.2 batches=5 iters_per_batch=607927
 *
 * -T starts a second thread first, which sleeps blocked in a read of a pipe
 * for the whole run: the process is threaded, as most real ones are.
 *
 * Exit status 0 on success; 1 with a message on stderr when the operation
 * fails (a wrong result from a call is a failure, not a number).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- raw system calls ------------------------------------------------- */

static inline long rsys0(long n)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n) : "rcx", "r11", "memory");
	return r;
}

static inline long rsys1(long n, long a)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a) : "rcx", "r11", "memory");
	return r;
}

static inline long rsys2(long n, long a, long b)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return r;
}

static inline long rsys3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long rsys4(long n, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long rsys5(long n, long a, long b, long c, long d, long e)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "=a"(r) : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return r;
}

/* ---- helpers ------------------------------------------------------------ */

static const char *prog = "microbench";

static void die(const char *what, long err)
{
	if (err < 0)
		fprintf(stderr, "%s: %s: %s\n", prog, what, strerror((int)-err));
	else
		fprintf(stderr, "%s: %s\n", prog, what);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile long sink;	/* keeps results alive */

/* What a wrong (not failed) result was, for the error message. */
static char detail[128];

/* State shared by the operations; set up once per process. */
static int fd_zero = -1, fd_null = -1;
static char bench_file[64], bench_link[68], bench_trunc[68];
static int bench_fd = -1;
static int nsel;		/* number of fds in the select set */
static int sel_nfds;
static fd_set sel_template;

/* ---- operations: each runs n iterations, returns 0 or -errno ------------- */

static long op_getpid(long n)
{
	long acc = 0;
	for (long i = 0; i < n; i++)
		acc += rsys0(SYS_getpid);
	sink = acc;
	return 0;
}

static long op_getppid(long n)
{
	long acc = 0;
	for (long i = 0; i < n; i++)
		acc += rsys0(SYS_getppid);
	sink = acc;
	return 0;
}

static long op_read(long n)
{
	char c;
	for (long i = 0; i < n; i++) {
		long r = rsys3(SYS_read, fd_zero, (long)&c, 1);
		if (r != 1) {
			snprintf(detail, sizeof detail, "read returned %ld, not 1", r);
			return r < 0 ? r : -EIO;
		}
	}
	return 0;
}

static long op_write(long n)
{
	static const char c = 'x';
	for (long i = 0; i < n; i++) {
		long r = rsys3(SYS_write, fd_null, (long)&c, 1);
		if (r != 1) {
			snprintf(detail, sizeof detail, "write returned %ld, not 1", r);
			return r < 0 ? r : -EIO;
		}
	}
	return 0;
}

/* stat(2) in glibc 2.36 is newfstatat(AT_FDCWD, path, buf, 0). The buffer
 * is static: as a local of this leaf function gcc puts it in the red zone,
 * where zvisor rightly leaves the site on the SIGSYS path (a `call` there
 * would overwrite the buffer's last 8 bytes); glibc's stat() gets its
 * buffer from the caller's frame. */
static long op_stat(long n)
{
	static struct stat st;
	for (long i = 0; i < n; i++) {
		long r = rsys4(SYS_newfstatat, AT_FDCWD, (long)bench_file, (long)&st, 0);
		if (r != 0)
			return r;
	}
	sink = st.st_size;
	return 0;
}

/* fstat() of an open file: the call that needs no path walk. */
static long op_fstat(long n)
{
	static struct stat st;
	for (long i = 0; i < n; i++) {
		long r = rsys2(SYS_fstat, bench_fd, (long)&st);
		if (r != 0)
			return r;
	}
	sink = st.st_size;
	return 0;
}

/* lstat() of a symlink (newfstatat with AT_SYMLINK_NOFOLLOW). */
static long op_lstatlink(long n)
{
	static struct stat st;
	for (long i = 0; i < n; i++) {
		long r = rsys4(SYS_newfstatat, AT_FDCWD, (long)bench_link, (long)&st, AT_SYMLINK_NOFOLLOW);
		if (r != 0)
			return r;
	}
	sink = st.st_size;
	return 0;
}

/* openat()+close() of path, n times. */
static long open_close(long n, const char *path, long flags)
{
	for (long i = 0; i < n; i++) {
		long fd = rsys4(SYS_openat, AT_FDCWD, (long)path, flags | O_CLOEXEC, 0600);
		if (fd < 0)
			return fd;
		long r = rsys1(SYS_close, fd);
		if (r != 0)
			return r;
	}
	return 0;
}

/* open(2) in glibc 2.36 is openat(AT_FDCWD, ...). */
static long op_openclose(long n) { return open_close(n, bench_file, O_RDONLY); }
/* An open for writing: zvisor asks whether a running program is the file. */
static long op_openwclose(long n) { return open_close(n, bench_file, O_WRONLY); }
/* A shell's `>` onto an existing (empty) file: O_CREAT|O_TRUNC. */
static long op_opentrunc(long n) { return open_close(n, bench_trunc, O_WRONLY | O_CREAT | O_TRUNC); }

static long op_fcntl(long n)
{
	for (long i = 0; i < n; i++) {
		long r = rsys3(SYS_fcntl, bench_fd, F_GETFL, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Through libc on purpose: the vDSO answers it without a system call. */
static long op_clock_gettime(long n)
{
	struct timespec ts;
	long acc = 0;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		acc += ts.tv_nsec;
	}
	sink = acc;
	return 0;
}

/* select(2) with a zero timeout on nsel fds that are always readable
 * (/dev/null), as lmbench's lat_select does with files: every call scans the
 * whole set and returns it whole. */
static long op_select(long n)
{
	fd_set set;
	struct timeval tv;
	for (long i = 0; i < n; i++) {
		memcpy(&set, &sel_template, sizeof set);
		tv.tv_sec = 0;
		tv.tv_usec = 0;
		long r = rsys5(SYS_select, sel_nfds, (long)&set, 0, 0, (long)&tv);
		if (r != nsel) {
			snprintf(detail, sizeof detail, "select returned %ld, not %d", r, nsel);
			return r < 0 ? r : -EIO;
		}
	}
	return 0;
}

/* fork as glibc does it (clone with SIGCHLD; the child never returns into
 * libc), then exit or execve in the child, wait4 in the parent. */
static long spawn_wait(const char *path, char *const argv[])
{
	long pid = rsys5(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		if (path)
			rsys3(SYS_execve, (long)path, (long)argv, (long)environ);
		rsys1(SYS_exit_group, path ? 127 : 0);
		for (;;)
			;
	}
	if (pid < 0)
		return pid;
	int status = 0;
	long r;
	do
		r = rsys4(SYS_wait4, pid, (long)&status, 0, 0);
	while (r == -EINTR);
	if (r < 0)
		return r;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			snprintf(detail, sizeof detail, "the child was killed by signal %d",
				 WTERMSIG(status));
		else
			snprintf(detail, sizeof detail, "the child exited with status %d%s",
				 WEXITSTATUS(status),
				 WEXITSTATUS(status) == 127 && path ? " (execve failed)" : "");
		return -ECHILD;
	}
	return 0;
}

/* Calls the cr-waits layer sees (kernel/cr/waits.c) that return at once:
 * what that layer costs a call. */
static int futex_word;

static long op_futexwake(long n)
{
	for (long i = 0; i < n; i++) {
		long r = rsys3(SYS_futex, (long)&futex_word, 1 | 128 /* FUTEX_WAKE_PRIVATE */, 1);
		if (r != 0)
			return r < 0 ? r : -EIO;
	}
	return 0;
}

static long op_futexwait(long n)
{
	struct timespec ts = {1, 0};
	for (long i = 0; i < n; i++) {
		/* the word is 0, not 1: EAGAIN at once, through the timed path */
		long r = rsys4(SYS_futex, (long)&futex_word, 0 | 128 /* FUTEX_WAIT_PRIVATE */, 1, (long)&ts);
		if (r != -EAGAIN) {
			snprintf(detail, sizeof detail, "futex returned %ld, not -EAGAIN", r);
			return r < 0 ? r : -EIO;
		}
	}
	return 0;
}

static long op_polltimed(long n)
{
	struct { int fd; short events, revents; } p = {fd_zero, 1 /* POLLIN */, 0};
	for (long i = 0; i < n; i++) {
		long r = rsys3(SYS_poll, (long)&p, 1, 1000);
		if (r != 1) {
			snprintf(detail, sizeof detail, "poll returned %ld, not 1", r);
			return r < 0 ? r : -EIO;
		}
	}
	return 0;
}

static long op_fork(long n)
{
	for (long i = 0; i < n; i++) {
		long r = spawn_wait(NULL, NULL);
		if (r)
			return r;
	}
	return 0;
}

static long op_exec(long n)
{
	static char *const argv[] = {"true", NULL};
	for (long i = 0; i < n; i++) {
		long r = spawn_wait("/bin/true", argv);
		if (r)
			return r;
	}
	return 0;
}

/* glibc's posix_spawn (clone(CLONE_VM|CLONE_VFORK) with every signal
 * blocked; the child resets each disposition, then execs), then wait4. */
static long op_spawn(long n)
{
	static char *const argv[] = {"true", NULL};
	for (long i = 0; i < n; i++) {
		pid_t pid;
		int status = 0, r = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);
		if (r)
			return -r;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			snprintf(detail, sizeof detail, "the spawned child's status is %#x", status);
			return -ECHILD;
		}
	}
	return 0;
}

static long op_sh(long n)
{
	static char *const argv[] = {"sh", "-c", "true", NULL};
	for (long i = 0; i < n; i++) {
		long r = spawn_wait("/bin/sh", argv);
		if (r)
			return r;
	}
	return 0;
}

/* A traced child that makes getppid calls forever: each op is one call's
 * syscall-entry and syscall-exit stops, resumed with PTRACE_SYSCALL (what a
 * counting tracer, strace -c, costs per call). */
static pid_t tracee;

static void kill_tracee(void)
{
	if (tracee > 0) {
		kill(tracee, SIGKILL);
		waitpid(tracee, NULL, __WALL);
	}
}

static long op_ptracestop(long n)
{
	int st;
	if (!tracee) {
		tracee = fork();
		if (tracee < 0)
			return -errno;
		if (!tracee) {
			ptrace(PTRACE_TRACEME, 0, 0, 0);
			raise(SIGSTOP);
			for (;;)
				rsys0(SYS_getppid);
		}
		atexit(kill_tracee);
		if (waitpid(tracee, &st, 0) != tracee || !WIFSTOPPED(st))
			return -ECHILD;
	}
	for (long i = 0; i < 2 * n; i++) {
		if (ptrace(PTRACE_SYSCALL, tracee, 0, 0) < 0)
			return -errno;
		if (waitpid(tracee, &st, 0) != tracee || !WIFSTOPPED(st)) {
			snprintf(detail, sizeof detail, "tracee status %#x", st);
			return -EIO;
		}
	}
	return 0;
}

/* ---- setup ---------------------------------------------------------------- */

static void setup_devfds(void)
{
	fd_zero = (int)rsys3(SYS_open, (long)"/dev/zero", O_RDONLY | O_CLOEXEC, 0);
	if (fd_zero < 0)
		die("open /dev/zero", fd_zero);
	fd_null = (int)rsys3(SYS_open, (long)"/dev/null", O_RDWR | O_CLOEXEC, 0);
	if (fd_null < 0)
		die("open /dev/null", fd_null);
}

static void cleanup_file(void)
{
	if (bench_file[0])
		unlink(bench_file);
	if (bench_link[0])
		unlink(bench_link);
	if (bench_trunc[0])
		unlink(bench_trunc);
}

/* A small file of our own, so the stat and open rows do not depend on what
 * the machine (or the sandbox's view of it) has in /etc. */
static void setup_file(void)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir || strlen(dir) > 32)
		dir = "/tmp";
	snprintf(bench_file, sizeof bench_file, "%s/microbench.XXXXXX", dir);
	int fd = mkstemp(bench_file);
	if (fd < 0 && strcmp(dir, "/tmp")) {
		snprintf(bench_file, sizeof bench_file, "/tmp/microbench.XXXXXX");
		fd = mkstemp(bench_file);
	}
	if (fd < 0) {
		bench_file[0] = 0;
		die("cannot create a file in TMPDIR or /tmp", -errno);
	}
	atexit(cleanup_file);
	if (write(fd, "zvisor\n", 7) != 7)
		die("write bench file", -errno);
	bench_fd = fd;
	snprintf(bench_trunc, sizeof bench_trunc, "%s.t", bench_file);
	int tfd = open(bench_trunc, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (tfd < 0) {
		bench_trunc[0] = 0;
		die("cannot make a second file beside the bench file", -errno);
	}
	close(tfd);
	snprintf(bench_link, sizeof bench_link, "%s.l", bench_file);
	if (symlink(bench_file, bench_link) != 0) {
		bench_link[0] = 0;
		die("cannot make a symlink beside the bench file", -errno);
	}
}

static void setup_select(int n)
{
	nsel = n;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
		rlim_t want = FD_SETSIZE + 64;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
			rl.rlim_max = want;	/* raising the hard limit needs root */
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			die("cannot raise RLIMIT_NOFILE for the select rows", -errno);
	}
	FD_ZERO(&sel_template);
	sel_nfds = 0;
	for (int i = 0; i < n; i++) {
		long fd = rsys1(SYS_dup, fd_null);
		if (fd < 0)
			die("dup /dev/null", fd);
		if (fd >= FD_SETSIZE)
			die("select: an fd above FD_SETSIZE (too many fds already open)", 0);
		FD_SET((int)fd, &sel_template);
		if (fd + 1 > sel_nfds)
			sel_nfds = (int)fd + 1;
	}
}

/* ---- table of operations ------------------------------------------------- */

struct op {
	const char *name;
	long (*run)(long n);
	int select_fds;		/* > 0: the select rows */
	int uses_file;
	const char *what;
};

static const struct op ops[] = {
	{"getpid", op_getpid, 0, 0, "getpid()"},
	{"getppid", op_getppid, 0, 0, "getppid()"},
	{"read", op_read, 0, 0, "read 1 byte from /dev/zero"},
	{"write", op_write, 0, 0, "write 1 byte to /dev/null"},
	{"stat", op_stat, 0, 1, "newfstatat() of a small file in /tmp"},
	{"fstat", op_fstat, 0, 1, "fstat() of an open small file"},
	{"lstatlink", op_lstatlink, 0, 1, "newfstatat(AT_SYMLINK_NOFOLLOW) of a symlink in /tmp"},
	{"openclose", op_openclose, 0, 1, "openat()+close() of a small file in /tmp"},
	{"openwclose", op_openwclose, 0, 1, "openat(O_WRONLY)+close() of a small file in /tmp"},
	{"opentrunc", op_opentrunc, 0, 1, "openat(O_WRONLY|O_CREAT|O_TRUNC)+close() of an empty file in /tmp"},
	{"fcntl", op_fcntl, 0, 1, "fcntl(F_GETFL) of an open file"},
	{"clock_gettime", op_clock_gettime, 0, 0, "libc clock_gettime(CLOCK_MONOTONIC) (vDSO)"},
	{"select10", op_select, 10, 0, "select() on 10 /dev/null fds, zero timeout"},
	{"select100", op_select, 100, 0, "select() on 100 /dev/null fds, zero timeout"},
	{"select1000", op_select, 1000, 0, "select() on 1000 /dev/null fds, zero timeout"},
	{"futexwake", op_futexwake, 0, 0, "FUTEX_WAKE with no waiter"},
	{"futexwait", op_futexwait, 0, 0, "FUTEX_WAIT with a 1 s timeout on a word that differs (EAGAIN)"},
	{"polltimed", op_polltimed, 0, 0, "poll() of /dev/zero with a 1 s timeout (ready at once)"},
	{"fork", op_fork, 0, 0, "fork + child exit + wait4"},
	{"exec", op_exec, 0, 0, "fork + execve /bin/true + wait4"},
	{"sh", op_sh, 0, 0, "fork + execve /bin/sh -c true + wait4"},
	{"spawn", op_spawn, 0, 0, "posix_spawn /bin/true + waitpid"},
	{"ptracestop", op_ptracestop, 0, 0, "a traced child's getppid: its entry and exit stops (PTRACE_SYSCALL)"},
};

static const struct op *find_op(const char *name)
{
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	return NULL;
}

/* ---- timing ---------------------------------------------------------------- */

static uint64_t time_batch(const struct op *op, long n)
{
	uint64_t t0 = now_ns();
	long r = op->run(n);
	uint64_t t1 = now_ns();
	if (r) {
		char msg[192];
		if (detail[0]) {
			snprintf(msg, sizeof msg, "%s failed: %s", op->name, detail);
			die(msg, 0);
		}
		snprintf(msg, sizeof msg, "%s failed", op->name);
		die(msg, r);
	}
	return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Iterations per batch so that one batch takes about target_ns. */
static long calibrate(const struct op *op, uint64_t target_ns)
{
	long n = 1;
	for (;;) {
		uint64_t t = time_batch(op, n);
		if (t == 0)
			t = 1;
		/* Long enough to extrapolate from (10 ms, or a quarter of the target). */
		if (t >= 10000000u || t * 4 >= target_ns) {
			double scaled = (double)n * (double)target_ns / (double)t;
			return scaled < 1 ? 1 : (long)(scaled + 0.5);
		}
		long grow = (long)((double)target_ns / 4 / (double)t) + 1;
		if (grow < 2)
			grow = 2;
		if (grow > 10)
			grow = 10;
		n *= grow;
	}
}

/* The idle second thread of -T: blocked until the process exits. */
static int idle_pipe[2];
static void *idle(void *arg)
{
	char c;
	(void)arg;
	while (read(idle_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void start_idle_thread(void)
{
	pthread_t th;
	if (pipe(idle_pipe) || pthread_create(&th, NULL, idle, NULL))
		die("cannot start the idle thread", -errno);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-b BATCHES] [-t SECONDS] [-T] OP [ITERATIONS]\n"
		   "       %s list\n"
		   "Prints the median ns per operation over BATCHES timed batches (default 5).\n"
		   "Without ITERATIONS, calibrates so the batches take about SECONDS (default 0.3).\n"
		   "-T: a second thread sleeps blocked in a read meanwhile.\n"
		   "OP is one of:\n", prog, prog);
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		fprintf(f, "  %-14s %s\n", ops[i].name, ops[i].what);
}

int main(int argc, char **argv)
{
	int batches = 5, idle_thread = 0;
	double seconds = 0.3;
	int opt;

	while ((opt = getopt(argc, argv, "+b:t:Th")) != -1) {
		switch (opt) {
		case 'T':
			idle_thread = 1;
			break;
		case 'b':
			batches = atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || batches < 1 || batches > 1000 || !(seconds > 0)) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "list")) {
		for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
			printf("%s\t%s\n", ops[i].name, ops[i].what);
		return 0;
	}
	const struct op *op = find_op(argv[optind]);
	if (!op) {
		fprintf(stderr, "%s: unknown op '%s'\n", prog, argv[optind]);
		usage(stderr);
		return 2;
	}
	long total = 0;
	if (optind + 1 < argc) {
		char *end;
		total = strtol(argv[optind + 1], &end, 10);
		if (*end || total < 1) {
			usage(stderr);
			return 2;
		}
	}

	/* Children exit through the raw path; nothing buffered must be copied. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup_devfds();
	if (op->uses_file)
		setup_file();
	if (op->select_fds)
		setup_select(op->select_fds);
	if (idle_thread)
		start_idle_thread();

	long per_batch;
	if (total) {
		per_batch = total / batches;
		if (per_batch < 1)
			per_batch = 1;
		time_batch(op, per_batch < 10 ? 1 : per_batch / 10);	/* warm up */
	} else {
		per_batch = calibrate(op, (uint64_t)(seconds * 1e9 / batches));
	}

	double *ns = calloc((size_t)batches, sizeof *ns);
	if (!ns)
		die("out of memory", 0);
	uint64_t target = (uint64_t)(seconds * 1e9 / batches);
	long last = per_batch;
	for (int b = 0; b < batches; b++) {
		uint64_t t = time_batch(op, per_batch);
		ns[b] = (double)t / (double)per_batch;
		last = per_batch;
		/* Ptrace-based runners can slow down several times between
		 * calibration and the timed batches (a halted vCPU to wake on
		 * every stop): keep the total bounded by shrinking the later
		 * batches.  Each batch still yields its own ns per operation. */
		if (!total && t > 2 * target) {
			per_batch = (long)((double)per_batch * (double)target / (double)t);
			if (per_batch < 1)
				per_batch = 1;
		}
	}
	qsort(ns, (size_t)batches, sizeof *ns, cmp_double);
	double med = batches % 2 ? ns[batches / 2] : (ns[batches / 2 - 1] + ns[batches / 2]) / 2;

	printf("op=%s ns_per_op=%.3f min=%.3f max=%.3f batches=%d iters_per_batch=%ld\n",
	       op->name, med, ns[0], ns[batches - 1], batches, last);
	return 0;
}
