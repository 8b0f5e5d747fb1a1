/* cr_ids.c: a restored process's own ids and CPU clocks (tests/test_cr_ids.py).
 * Each mode says "ready" on stderr once set up, then waits until a file
 * named go appears in the working directory (the test cuts the process
 * meanwhile, restores it, then makes the file), and prints one line per
 * check on stdout: what it reads after go against what it knew before.
 *   pids         its pid and a thread's tid everywhere the program meets
 *                them: getpid, gettid, /proc/self, /proc/thread-self,
 *                /proc/self/status, /proc/PID/..., /proc/PID/task/TID/...,
 *                the CPU clocks of the pid and the tid, a child forked
 *                after go (getppid, kill of the parent's pid), a child
 *                forked before the cut (its getppid, its status); the
 *                ids of /proc/self/stat (pid, ppid, group, session,
 *                terminal group: as before the cut, as getpgrp, getpgid
 *                and getsid say), of /proc/PID/stat and its task forms,
 *                a thread's, a child's and the parent's seen by a child,
 *                the /proc/self/task listing, /proc's listing, a task's
 *                children; then it
 *                execs itself as "execd PID" (the test runs it with
 *                --exec=host too)
 *   execd PID    the same checks in the new image, which must be PID
 *   waitgo       nothing but wait (a shell's child, which the shell waits for)
 *   cputimer     POSIX timers on its own CPU clock (timer_create of
 *                CLOCK_PROCESS_CPUTIME_ID, glibc's pid 0 clock, and of
 *                clock_getcpuclockid(getpid())), each with time left at the
 *                cut: after go it spins until both fire, then makes one
 *                more on clock_getcpuclockid(getpid())
 *   threadtimer own|other  a timer on a thread's CPU clock, the main
 *                thread's (CLOCK_THREAD_CPUTIME_ID) or another's
 *                (pthread_getcpuclockid): a checkpoint refuses it
 *   childtimer   a timer on its child's CPU clock (a checkpoint refuses it)
 *   setuid       a child that runs as user nobody (a checkpoint refuses it;
 *                root only) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap(void)
{
	struct timespec ts = { 0, 5000000 };
	nanosleep(&ts, NULL);
}

/* Says ready, then waits for go (a minute at most: a test that failed
 * leaves no process behind). */
static void ready(const char *who)
{
	fprintf(stderr, "ready %s\n", who);
	for (int i = 0; access("go", F_OK) != 0; i++) {
		if (i == 12000) {
			printf("%s: no go\n", who);
			exit(1);
		}
		nap();
	}
}

static int failed;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	failed |= !ok;
}

static pid_t tid_(void) { return (pid_t)syscall(SYS_gettid); }

/* The file's first line (without its newline) into buf, or "". */
static const char *first_line(const char *path, char *buf, size_t n)
{
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return buf;
	if (!fgets(buf, (int)n, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* The status file's value of key ("Pid:"), or -1. */
static long status_value(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, strlen(key))) {
			char *e;
			v = strtol(line + strlen(key), &e, 10);
			if (*e != '\n')
				v = -2; /* more than one number */
			break;
		}
	fclose(f);
	return v;
}

/* A stat file's ids: fields 1 (pid), 4 (ppid), 5 (pgrp), 6 (session)
 * and 8 (tpgid) into v; 0, or -1 if it cannot be read. */
static int stat_ids(const char *path, long v[5])
{
	char buf[1024];
	int fd = open(path, O_RDONLY), n = fd < 0 ? -1 : (int)read(fd, buf, sizeof buf - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	long tty;
	char state;
	v[0] = strtol(buf, NULL, 10);
	if (!rp || sscanf(rp + 1, " %c %ld %ld %ld %ld %ld", &state, &v[1], &v[2], &v[3], &tty, &v[4]) != 6)
		return -1;
	return 0;
}

/* ids[0..k) sorted into buf as "1 2 3". */
static const char *sorted(long *ids, int k, char *buf, size_t n)
{
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			long x = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = x;
		}
	size_t w = 0;
	for (int i = 0; i < k && w < n; i++)
		w += (size_t)snprintf(buf + w, n - w, "%s%ld", i ? " " : "", ids[i]);
	return buf;
}

/* The ids a directory lists (/proc/self/task), sorted, as "1 2 3". */
static const char *listed(const char *path, char *buf, size_t n)
{
	long ids[64];
	int k = 0;
	buf[0] = 0;
	DIR *d = opendir(path);
	if (!d)
		return buf;
	for (struct dirent *e; (e = readdir(d)) && k < 64;)
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			ids[k++] = atol(e->d_name);
	closedir(d);
	return sorted(ids, k, buf, n);
}

/* The same through getdents64 (v64) or getdents with a buffer of size
 * bytes, one call after another. */
static const char *listed_by(const char *path, int v64, size_t size, char *buf, size_t n)
{
	long ids[64];
	int k = 0;
	char d[4096] __attribute__((aligned(8)));
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return buf;
	for (long r; (r = syscall(v64 ? SYS_getdents64 : SYS_getdents, fd, d, size)) > 0;)
		for (long off = 0; off < r && k < 64; off += *(unsigned short *)(d + off + 16)) {
			const char *name = d + off + (v64 ? 19 : 18);
			if (name[0] >= '1' && name[0] <= '9')
				ids[k++] = atol(name);
		}
	close(fd);
	return sorted(ids, k, buf, n);
}

/* Whether /proc lists pid (readdir, as ps finds processes). */
static int proc_lists(pid_t pid)
{
	int found = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));)
		found += atol(e->d_name) == pid;
	closedir(d);
	return found == 1;
}

static long long ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts))
		return -1;
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The CPU clock clock_getcpuclockid or pthread_getcpuclockid made, read
 * between two reads of own (the caller's process or thread clock): the
 * same clock. */
static int same_clock(clockid_t by_id, clockid_t own)
{
	for (volatile int i = 0; i < 200000; i++)
		;
	long long a = ns(own), b = ns(by_id), c = ns(own);
	return a >= 0 && b >= 0 && a <= b && b <= c;
}

static void spin_ms(int ms)
{
	long long end = ns(CLOCK_MONOTONIC) + ms * 1000000LL;
	while (ns(CLOCK_MONOTONIC) < end)
		;
}

/* --- pids ----------------------------------------------------------------- */

struct thr {
	pid_t tid;
	int gone; /* go seen */
	int done;
	pthread_mutex_t m;
	pthread_cond_t cv;
};

static void *thread_main(void *arg)
{
	struct thr *t = arg;
	pthread_mutex_lock(&t->m);
	t->tid = tid_();
	pthread_cond_broadcast(&t->cv);
	while (!t->gone)
		pthread_cond_wait(&t->cv, &t->m);
	pthread_mutex_unlock(&t->m);
	clockid_t c;
	check("thread: gettid is what it was", tid_() == t->tid);
	check("thread: pthread_getcpuclockid's clock is its own",
	      !pthread_getcpuclockid(pthread_self(), &c) && same_clock(c, CLOCK_THREAD_CPUTIME_ID));
	char path[64];
	snprintf(path, sizeof path, "/proc/thread-self");
	char link[64], want[64];
	ssize_t n = readlink(path, link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	snprintf(want, sizeof want, "%d/task/%d", getpid(), t->tid);
	check("thread: readlink /proc/thread-self", !strcmp(link, want));
	check("thread: /proc/thread-self/status Pid", status_value("/proc/thread-self/status", "Pid:") == t->tid);
	check("thread: /proc/self/task/TID/status Pid", ({
		      snprintf(path, sizeof path, "/proc/self/task/%d/status", t->tid);
		      status_value(path, "Pid:") == t->tid;
	      }));
	long v[5], w[5];
	check("thread: /proc/thread-self/stat pid is its tid, its group the process's",
	      !stat_ids("/proc/thread-self/stat", v) && v[0] == t->tid && v[1] == getppid() && v[2] == getpgrp());
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", t->tid);
	check("thread: /proc/self/task/TID/stat is the same",
	      !stat_ids(path, w) && !memcmp(v, w, sizeof v));
	pthread_mutex_lock(&t->m);
	t->done = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->m);
	return NULL;
}

/* What the process read before the cut (its first image: natively and
 * under zvisor alike; 0 in the exec'd image). */
static pid_t pgrp0, sid0, tpgid0;

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) { got_usr1 = 1; }

/* What a process knows as its pid me (and a thread's tid) reads everywhere. */
static void own_ids(pid_t me, pid_t tid)
{
	char path[128], link[128], want[128], a[128], b[128];
	check("getpid is what it was", getpid() == me);
	check("gettid is the pid", tid_() == me);
	ssize_t n = readlink("/proc/self", link, sizeof link - 1);
	link[n > 0 ? n : 0] = 0;
	snprintf(want, sizeof want, "%d", me);
	check("readlink /proc/self", !strcmp(link, want));
	snprintf(path, sizeof path, "/proc/%d", me);
	check("readlink /proc/PID: not a link", readlink(path, link, sizeof link) < 0 && errno == EINVAL);
	check("/proc/self/status Pid", status_value("/proc/self/status", "Pid:") == me);
	check("/proc/self/status Tgid", status_value("/proc/self/status", "Tgid:") == me);
	check("/proc/self/status NSpid", status_value("/proc/self/status", "NSpid:") == me);
	check("/proc/self/status PPid is getppid", status_value("/proc/self/status", "PPid:") == getppid());
	snprintf(path, sizeof path, "/proc/%d/status", me);
	check("/proc/PID/status Pid", status_value(path, "Pid:") == me);
	snprintf(path, sizeof path, "/proc/%d/task/%d/status", me, me);
	check("/proc/PID/task/PID/status Pid", status_value(path, "Pid:") == me);
	snprintf(path, sizeof path, "/proc/%d/comm", me);
	check("/proc/PID/comm is its own", !strcmp(first_line(path, a, sizeof a),
						   first_line("/proc/self/comm", b, sizeof b)) && a[0]);
	snprintf(path, sizeof path, "/proc/%d/exe", me);
	n = readlink(path, a, sizeof a - 1);
	a[n > 0 ? n : 0] = 0;
	n = readlink("/proc/self/exe", b, sizeof b - 1);
	b[n > 0 ? n : 0] = 0;
	check("readlink /proc/PID/exe is its own", n > 0 && !strcmp(a, b));
	if (tid) {
		snprintf(path, sizeof path, "/proc/%d/task/%d/status", me, tid);
		check("/proc/PID/task/TID/status Pid", status_value(path, "Pid:") == tid);
		snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
		check("/proc/self/task/TID/stat opens", access(path, R_OK) == 0);
	}
	long v[5], w[5];
	check("/proc/self/stat pid", !stat_ids("/proc/self/stat", v) && v[0] == me);
	check("/proc/self/stat ppid is getppid", v[1] == getppid());
	check("/proc/self/stat pgrp is getpgrp and getpgid", v[2] == getpgrp() && v[2] == getpgid(0) &&
							     getpgid(me) == v[2]);
	check("/proc/self/stat session is getsid", v[3] == getsid(0) && getsid(me) == v[3]);
	if (pgrp0) {
		check("the group and session are what they were", v[2] == pgrp0 && v[3] == sid0);
		check("/proc/self/stat tpgid is what it was", v[4] == tpgid0);
	}
	snprintf(path, sizeof path, "/proc/%d/stat", me);
	check("/proc/PID/stat is the same", !stat_ids(path, w) && !memcmp(v, w, sizeof v));
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", me, me);
	check("/proc/PID/task/PID/stat is the same", !stat_ids(path, w) && !memcmp(v, w, sizeof v));
	if (tid)
		snprintf(want, sizeof want, "%d %d", me < tid ? me : tid, me < tid ? tid : me);
	else
		snprintf(want, sizeof want, "%d", me);
	check("/proc/self/task lists the pid and tid", !strcmp(listed("/proc/self/task", a, sizeof a), want));
	snprintf(path, sizeof path, "/proc/%d/task", me);
	check("/proc/PID/task lists the same", !strcmp(listed(path, b, sizeof b), want));
	check("/proc/self/task by getdents, 40 bytes a call",
	      !strcmp(listed_by("/proc/self/task", 0, 40, b, sizeof b), want));
	check("/proc/self/task by getdents64, 56 bytes a call",
	      !strcmp(listed_by("/proc/self/task", 1, 56, b, sizeof b), want));
	check("/proc lists the pid once", proc_lists(me));
	clockid_t c;
	check("clock_getcpuclockid(getpid())", !clock_getcpuclockid(getpid(), &c));
	check("its clock is the process's", same_clock(c, CLOCK_PROCESS_CPUTIME_ID));
	struct timespec res;
	check("clock_getres of it", !clock_getres(c, &res));

	/* a child forked now knows its parent by the old pid */
	signal(SIGUSR1, on_usr1);
	got_usr1 = 0;
	int p[2];
	if (pipe(p))
		exit(1);
	pid_t child = fork();
	if (child == 0) {
		char line[64];
		long cv[5], pv[5];
		snprintf(path, sizeof path, "/proc/%d/stat", me);
		int stat_ok = !stat_ids("/proc/self/stat", cv) && cv[1] == me && cv[0] == getpid() &&
			      !stat_ids(path, pv) && pv[0] == me && pv[2] == cv[2] && pv[3] == cv[3];
		int k = snprintf(line, sizeof line, "%d %d %d %d\n", getppid() == me, kill(me, SIGUSR1) == 0,
				 status_value("/proc/self/status", "PPid:") == me, stat_ok);
		write(p[1], line, (size_t)k);
		_exit(0);
	}
	int st, ppid_ok = 0, kill_ok = 0, status_ok = 0, stat_ok = 0;
	char line[64] = "";
	close(p[1]);
	n = read(p[0], line, sizeof line - 1);
	close(p[0]);
	line[n > 0 ? n : 0] = 0;
	sscanf(line, "%d %d %d %d", &ppid_ok, &kill_ok, &status_ok, &stat_ok);
	check("the child waited for by its pid", waitpid(child, &st, 0) == child && WIFEXITED(st));
	check("the child's getppid is the pid", ppid_ok);
	check("the child's kill of the pid", kill_ok);
	check("the child's /proc/self/status PPid", status_ok);
	check("the child's /proc/self/stat ppid, its /proc/PPID/stat", stat_ok);
	for (int i = 0; i < 400 && !got_usr1; i++)
		nap();
	check("its signal came", got_usr1);
	/* a shell's $PPID: a child that execs */
	snprintf(want, sizeof want, "test \"$PPID\" = %d && echo \"the shell's PPID: ok\" || echo \"the shell's PPID: FAIL $PPID\"", me);
	fflush(stdout);
	child = fork();
	if (child == 0) {
		execl("/bin/sh", "sh", "-c", want, (char *)NULL);
		_exit(127);
	}
	check("the shell waited for", waitpid(child, &st, 0) == child && WIFEXITED(st) && !WEXITSTATUS(st));
}

/* A child forked before the cut, read by its parent after go. */
static void kid_checks(pid_t kid, int from_kid)
{
	char path[64], want[32], line[64];
	char got[3] = "";
	check("a child from before: its getppid is the pid", read(from_kid, got, 3) == 3 && got[0] == '1');
	check("a child from before: its /proc/self/stat ppid", got[1] == '1');
	check("a child from before: its /proc/PPID/stat", got[2] == '1');
	snprintf(path, sizeof path, "/proc/self/task/%d/children", getpid());
	snprintf(want, sizeof want, "%d ", kid);
	check("a child from before: /proc/self/task/PID/children", !strcmp(first_line(path, line, sizeof line), want));
	long v[5];
	snprintf(path, sizeof path, "/proc/%d/stat", kid);
	check("a child from before: its /proc/KID/stat",
	      !stat_ids(path, v) && v[0] == kid && v[1] == getpid() && v[2] == getpgrp() && v[3] == getsid(0));
	snprintf(path, sizeof path, "/proc/%d/status", kid);
	check("a child from before: its /proc/KID/status Pid", status_value(path, "Pid:") == kid);
	check("a child from before: its /proc/KID/status PPid", status_value(path, "PPid:") == getpid());
	int st;
	check("a child from before: killed and waited for by its pid",
	      !kill(kid, SIGTERM) && waitpid(kid, &st, 0) == kid && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

static int pids(const char *self)
{
	pid_t me = getpid();
	int p[2];
	if (pipe(p))
		return 1;
	pid_t kid = fork();
	if (kid == 0) {
		ready("kid");
		long v[5];
		char path[64], c[3] = { getppid() == me ? '1' : '0', '0', '0' };
		if (!stat_ids("/proc/self/stat", v) && v[0] == getpid() && v[1] == me)
			c[1] = '1';
		snprintf(path, sizeof path, "/proc/%d/stat", me);
		if (!stat_ids(path, v) && v[0] == me && v[2] == getpgrp() && v[3] == getsid(0))
			c[2] = '1';
		write(p[1], c, 3);
		for (;;)
			pause();
	}
	close(p[1]);
	struct thr t = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	pthread_t th;
	pthread_create(&th, NULL, thread_main, &t);
	pthread_mutex_lock(&t.m);
	while (!t.tid)
		pthread_cond_wait(&t.cv, &t.m);
	pthread_mutex_unlock(&t.m);
	long v[5];
	if (stat_ids("/proc/self/stat", v))
		return 1;
	pgrp0 = (pid_t)v[2], sid0 = (pid_t)v[3], tpgid0 = (pid_t)v[4];
	ready("pids");
	own_ids(me, t.tid);
	kid_checks(kid, p[0]);
	close(p[0]);
	pthread_mutex_lock(&t.m);
	t.gone = 1;
	pthread_cond_broadcast(&t.cv);
	while (!t.done)
		pthread_cond_wait(&t.cv, &t.m);
	pthread_mutex_unlock(&t.m);
	pthread_join(th, NULL);
	char arg[32];
	snprintf(arg, sizeof arg, "%d", me);
	fflush(stdout);
	execl(self, self, "execd", arg, (char *)NULL);
	printf("execl: %s\n", strerror(errno));
	return 1;
}

static int execd(pid_t me)
{
	printf("after exec:\n");
	own_ids(me, 0);
	return failed;
}

/* --- timers on CPU clocks --------------------------------------------------- */

static volatile sig_atomic_t fired[3];
static void on_timer(int sig, siginfo_t *si, void *uc) { fired[si->si_value.sival_int]++; }

static timer_t cpu_timer(clockid_t c, int n, long ms)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN };
	ev.sigev_value.sival_int = n;
	timer_t id;
	if (timer_create(c, &ev, &id)) {
		printf("timer_create: %s\n", strerror(errno));
		exit(1);
	}
	struct itimerspec its = { .it_value = { ms / 1000, ms % 1000 * 1000000 } };
	timer_settime(id, 0, &its, NULL);
	return id;
}

static int cputimer(void)
{
	struct sigaction sa = { .sa_sigaction = on_timer, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigaction(SIGRTMIN, &sa, NULL);
	clockid_t c;
	if (clock_getcpuclockid(getpid(), &c))
		return 1;
	timer_t a = cpu_timer(CLOCK_PROCESS_CPUTIME_ID, 0, 150), b = cpu_timer(c, 1, 200);
	ready("cputimer");
	struct itimerspec its;
	check("the process clock's timer has time left", !timer_gettime(a, &its) && its.it_value.tv_nsec > 0);
	check("the pid clock's timer has time left", !timer_gettime(b, &its) && its.it_value.tv_nsec > 0);
	long long end = ns(CLOCK_MONOTONIC) + 20000000000LL;
	while ((!fired[0] || !fired[1]) && ns(CLOCK_MONOTONIC) < end)
		spin_ms(1);
	check("the process clock's timer fired once", fired[0] == 1);
	check("the pid clock's timer fired once", fired[1] == 1);
	if (clock_getcpuclockid(getpid(), &c))
		return 1;
	cpu_timer(c, 2, 20);
	end = ns(CLOCK_MONOTONIC) + 20000000000LL;
	while (!fired[2] && ns(CLOCK_MONOTONIC) < end)
		spin_ms(1);
	check("a timer made after go on clock_getcpuclockid(getpid()) fired", fired[2] == 1);
	return failed;
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

static int threadtimer(const char *whose)
{
	pthread_t th;
	clockid_t c = CLOCK_THREAD_CPUTIME_ID;
	pthread_create(&th, NULL, idle, NULL);
	if (strcmp(whose, "own") && pthread_getcpuclockid(th, &c))
		return 1;
	cpu_timer(c, 0, 100000);
	ready("threadtimer");
	return 0;
}

static int childtimer(void)
{
	pid_t child = fork();
	if (child == 0) {
		ready("child");
		_exit(0);
	}
	clockid_t c;
	if (clock_getcpuclockid(child, &c))
		return 1;
	cpu_timer(c, 0, 100000);
	ready("parent");
	waitpid(child, NULL, 0);
	return 0;
}

static int setuid_mode(void)
{
	pid_t child = fork();
	if (child == 0) {
		if (setgid(65534) || setuid(65534)) {
			perror("setuid");
			_exit(1);
		}
		ready("nobody");
		_exit(0);
	}
	ready("root");
	waitpid(child, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "pids"))
		return pids(argv[0]);
	if (!strcmp(mode, "execd") && argc > 2)
		return execd(atoi(argv[2]));
	if (!strcmp(mode, "waitgo")) {
		ready("waitgo");
		return 0;
	}
	if (!strcmp(mode, "cputimer"))
		return cputimer();
	if (!strcmp(mode, "threadtimer") && argc > 2)
		return threadtimer(argv[2]);
	if (!strcmp(mode, "childtimer"))
		return childtimer();
	if (!strcmp(mode, "setuid"))
		return setuid_mode();
	fprintf(stderr, "usage: cr_ids pids|execd PID|waitgo|cputimer|threadtimer own|other|childtimer|setuid\n");
	return 2;
}
