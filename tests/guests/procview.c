/* procview: what /proc/self/maps, smaps, smaps_rollup, numa_maps and status
 * show a program, summarized so that a native run and a run under zvisor
 * must print the same lines: no addresses, only perms and names, counts,
 * whether anything lies in zvisor's window, and the signal fields (status's
 * and stat's) after
 * sigaction, sigprocmask, a pending signal and a thread with its own mask.
 * Files are read in small pieces with read, pread, readv and a dup'ed fd,
 * as real readers do. The same maps summary of a fork child, read by its
 * parent. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[1 << 20];

/* The whole file in pieces of 100 bytes: read, then pread, then readv. */
static size_t slurp(const char *path, int how)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("open %s failed\n", path);
		exit(1);
	}
	size_t len = 0;
	for (;;) {
		ssize_t n;
		if (how == 0) {
			n = read(fd, buf + len, 100);
		} else if (how == 1) {
			n = pread(fd, buf + len, 100, (off_t)len);
		} else {
			struct iovec v[2] = { { buf + len, 37 }, { buf + len + 37, 63 } };
			n = readv(fd, v, 2);
		}
		if (n < 0) {
			printf("read %s failed\n", path);
			exit(1);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* again from the start, through a dup: the same bytes count */
	int d = dup(fd);
	lseek(d, 0, SEEK_SET);
	size_t again = 0;
	ssize_t n;
	static char other[1 << 20];
	while ((n = read(d, other + again, 4096)) > 0)
		again += (size_t)n;
	if (again == 0)
		printf("%s: empty on the second read\n", path);
	close(d);
	close(fd);
	buf[len] = 0;
	return len;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* dir: /proc/self, or another process's /proc/PID; who: the lines' prefix */
static void maps_summary(const char *dir, const char *who)
{
	char path[64];
	snprintf(path, sizeof path, "%s/maps", dir);
	slurp(path, 0);
	char *lines[4096], *save;
	int n = 0, rx_anon = 0, in_window = 0, total = 0;
	for (char *l = strtok_r(buf, "\n", &save); l && n < 4096; l = strtok_r(NULL, "\n", &save)) {
		unsigned long lo, hi;
		char perms[8];
		int name_at = 0;
		if (sscanf(l, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at) < 3)
			continue;
		total++;
		if (hi > 0x7c0000000000UL && lo < 0x7d0000000000UL)
			in_window++;
		const char *name = name_at ? l + name_at : "";
		if (!*name && !strcmp(perms, "r-xp"))
			rx_anon++;
		if (*name) {
			/* the name starts where the host puts names */
			if (name - l != 73 && strlen(l) - strlen(name) < 73)
				printf("%smaps: name of %s not at column 73\n", who, name);
			char *s = malloc(strlen(perms) + strlen(name) + 2);
			sprintf(s, "%s %s", perms, name);
			lines[n++] = s;
		}
	}
	qsort(lines, n, sizeof *lines, cmp);
	for (int i = 0; i < n; i++)
		printf("%smaps: %s\n", who, lines[i]);
	printf("%smaps: r-x anonymous %d, in zvisor's window %d\n", who, rx_anon, in_window);

	/* smaps and numa_maps: the same filtering (zpoline leaves its rewritten
	 * code mappings split there, so their counts are not compared) */
	snprintf(path, sizeof path, "%s/smaps", dir);
	size_t len = slurp(path, 1);
	int window = 0, stack = 0;
	for (char *l = buf; l < buf + len; l = strchr(l, '\n') + 1) {
		unsigned long lo, hi;
		if (sscanf(l, "%lx-%lx ", &lo, &hi) == 2 && strchr(l, '-') < strchr(l, ' ')) {
			window += hi > 0x7c0000000000UL && lo < 0x7d0000000000UL;
			stack += strstr(l, "[stack]") && strstr(l, "[stack]") < strchr(l, '\n');
		}
	}
	printf("%ssmaps: in window %d, [stack] %d\n", who, window, stack);
	snprintf(path, sizeof path, "%s/numa_maps", dir);
	len = slurp(path, 2);
	window = 0;
	for (char *l = buf; l < buf + len; l = strchr(l, '\n') + 1) {
		unsigned long lo = strtoul(l, NULL, 16);
		window += lo >= 0x7c0000000000UL && lo < 0x7d0000000000UL;
	}
	printf("%snuma_maps: in window %d\n", who, window);
	snprintf(path, sizeof path, "%s/smaps_rollup", dir);
	slurp(path, 0);
	unsigned long rlo, rhi;
	sscanf(buf, "%lx-%lx", &rlo, &rhi);
	printf("%ssmaps_rollup: %s, starts in window %d\n", who, strstr(buf, "[rollup]") ? "[rollup]" : "no header",
	       rlo >= 0x7c0000000000UL && rlo < 0x7d0000000000UL);
}

/* The same summary of a child's files, read by its parent while the child
 * waits in a read (under zvisor the child shows its own view: it is asked
 * for it). */
static void child_summary(void)
{
	int p[2];
	if (pipe(p) < 0)
		exit(1);
	pid_t c = fork();
	if (c == 0) {
		char x;
		close(p[1]);
		_exit(read(p[0], &x, 1) == 0 ? 0 : 1);
	}
	close(p[0]);
	char dir[32];
	snprintf(dir, sizeof dir, "/proc/%d", c);
	maps_summary(dir, "child ");
	close(p[1]);
	int st;
	waitpid(c, &st, 0);
	printf("child: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void status_fields(const char *path, const char *who)
{
	slurp(path, 0);
	static const char *keys[] = { "SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "SigCgt:", "TracerPid:",
				      "Seccomp:", "Seccomp_filters:", "NoNewPrivs:", NULL };
	char *save;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		for (int i = 0; keys[i]; i++)
			if (!strncmp(l, keys[i], strlen(keys[i])))
				printf("%s %s\n", who, l);
}

/* stat's signal fields (31 to 34: pending, blocked, ignored, caught). */
static void stat_fields(const char *path, const char *who)
{
	slurp(path, 2);
	char *p = strrchr(buf, ')');
	int field = 2;
	for (char *f = p ? strtok(p + 1, " ") : NULL; f; f = strtok(NULL, " "))
		if (++field >= 31 && field <= 34)
			printf("%s stat %d: %s\n", who, field, f);
}

static volatile int thread_state;
static pid_t thread_tid;

static void *thread_main(void *arg)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	thread_tid = (pid_t)syscall(SYS_gettid);
	status_fields("/proc/thread-self/status", "thread:");
	thread_state = 1;
	while (thread_state != 2) /* no syscall while main reads our status */
		__asm__ volatile("pause");
	return NULL;
}

static void on_usr1(int sig) { (void)sig; }

/* Signals the runner left ignored (a shell's, a CI's: glibc's own 32
 * included, which its sigaction refuses) would show in SigIgn: start from
 * the defaults, by the raw call. */
static void default_dispositions(void)
{
	struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; } dfl = { 0 };
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
}

int main(void)
{
	default_dispositions();
	void *rw = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *rx = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(rw, 1, 4096);
	mprotect(rx, 2 * 4096, PROT_READ | PROT_EXEC);
	free(malloc(1000)); /* the heap */

	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGHUP);
	sigaddset(&s, SIGSYS);
	sigaddset(&s, SIGALRM);
	sigprocmask(SIG_BLOCK, &s, NULL);
	raise(SIGHUP);           /* pending on this thread */
	kill(getpid(), SIGALRM); /* pending on the process */

	maps_summary("/proc/self", "");
	child_summary();
	status_fields("/proc/self/status", "self:");
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", getpid());
	status_fields(path, "pid:");
	stat_fields("/proc/self/stat", "self:");

	pthread_t th;
	pthread_create(&th, NULL, thread_main, NULL);
	while (thread_state != 1)
		__asm__ volatile("pause");
	snprintf(path, sizeof path, "/proc/self/task/%d/status", thread_tid);
	slurp(path, 1);
	char *b = strstr(buf, "SigBlk:");
	printf("task: %.*s\n", b ? (int)(strchr(b, '\n') - b) : 4, b ? b : "none");
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", thread_tid);
	stat_fields(path, "task:");
	thread_state = 2;
	pthread_join(th, NULL);
	return 0;
}
