/* cr_edges.c: the checkpoint's edge cases (tests/test_checkpoint.py).
 *   cr_edges shm          a SysV shared memory segment attached (removed):
 *                         prints "ready", 8 steps of 100 ms, then reads it by its id
 *   cr_edges shmkey KEY   the same with a segment of key KEY (hex), left in place
 *                         until the end (a restore takes the original's over)
 *   cr_edges shfile DIR   a MAP_SHARED mapping of DIR/shared: "ready", 8 steps,
 *                         then a write through it must be in the file
 *   cr_edges futex        two threads in 2 s futex waits, one relative
 *                         (FUTEX_WAIT), one to an absolute MONOTONIC deadline
 *                         (FUTEX_WAIT_BITSET); both must time out, not early
 *   cr_edges heap         8 MiB of text and 8 MiB of zeros on the heap (the
 *                         image leaves the zeros out and compresses the
 *                         text): "ready", 8 steps with the text's checksum
 *   cr_edges mask         blocks SIGUSR2, raises it (zvisor's --checkpoint-on):
 *                         the mask the guest reads back keeps SIGUSR2 blocked
 *   cr_edges procview     the same, with /proc/self/maps and status summarized
 *                         before and after: [stack] named, no zvisor region,
 *                         SigBlk/SigIgn/SigCgt and stat's fields 32-34 as
 *                         the guest set them */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* <linux/futex.h>'s, which musl lacks */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAIT_BITSET_PRIVATE (9 | 128)
#define FUTEX_BITSET_MATCH_ANY 0xffffffff

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void steps(const char *p)
{
	printf("ready\n");
	for (int i = 1; i <= 8; i++) {
		sleep_ms(100);
		printf("step %d %s\n", i, p);
	}
}

static int shm(const char *key)
{
	key_t k = key ? (key_t)strtoul(key, NULL, 16) : IPC_PRIVATE;
	int id = shmget(k, 1 << 16, IPC_CREAT | 0600);
	char *p = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
	if (p == (void *)-1) {
		printf("FAIL: shmget/shmat: %s\n", strerror(errno));
		return 1;
	}
	if (!key)
		shmctl(id, IPC_RMID, NULL); /* gone with its last detach, even if killed */
	strcpy(p, "shared");
	steps(p);
	struct shmid_ds ds; /* the id the program knows still names it */
	printf("the segment by its id: %s\n",
	       shmctl(id, IPC_STAT, &ds) == 0 && ds.shm_segsz == 1 << 16 && ds.shm_nattch == 1 &&
			       ds.shm_perm.__key == k ? "ok" : "FAIL");
	if (key)
		printf("the segment by its key: %s\n", shmget(k, 0, 0) == id ? "ok" : "FAIL");
	printf("its creator and last attacher: %s\n",
	       ds.shm_cpid == getpid() && ds.shm_lpid == getpid() ? "this process" : "FAIL");
	shmdt(p);
	if (key)
		shmctl(id, IPC_RMID, NULL);
	return 0;
}

static int shfile(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/shared", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) < 0) {
		printf("FAIL: %s: %s\n", path, strerror(errno));
		return 1;
	}
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd); /* the mapping alone holds the file */
	strcpy(p, "before");
	steps(p);
	strcpy(p + 6, " after");
	char buf[32] = "";
	fd = open(path, O_RDONLY);
	pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	printf("the file reads '%s'\n", buf); /* only if the mapping is the file's */
	return 0;
}

static int heap(void)
{
	size_t n = 8 << 20;
	char *text = malloc(n), *zeros = malloc(n);
	for (size_t k = 0, i = 0; k + 32 < n; i++)
		k += sprintf(text + k, "line %zu of the heap\n", i);
	memset(zeros, 0, n); /* present, and zero */
	unsigned long sum = 0;
	for (size_t k = 0; k < n; k++)
		sum = sum * 31 + (unsigned char)text[k] + (unsigned char)zeros[k];
	char line[64];
	snprintf(line, sizeof line, "sum %lx", sum);
	steps(line);
	return 0;
}

static int word;

static long ns(const struct timespec *t) { return t->tv_sec * 1000000000L + t->tv_nsec; }

static void *wait_relative(void *arg)
{
	struct timespec ts = { 2, 0 };
	long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	return (void *)(r < 0 && errno == ETIMEDOUT ? "timed out" : "FAIL: woke otherwise");
}

static void *wait_absolute(void *arg)
{
	struct timespec dl, now;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += 2;
	long r;
	do /* a restart after a freeze is the host's business, not EINTR */
		r = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 0, &dl, NULL, FUTEX_BITSET_MATCH_ANY);
	while (r < 0 && errno == EINTR);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!(r < 0 && errno == ETIMEDOUT))
		return "FAIL: woke otherwise";
	return ns(&now) >= ns(&dl) ? "timed out" : "FAIL: timed out before its deadline";
}

static int futexes(void)
{
	pthread_t a, b;
	void *ra, *rb;
	pthread_create(&a, NULL, wait_relative, NULL);
	pthread_create(&b, NULL, wait_absolute, NULL);
	printf("ready\n");
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	printf("relative: %s\nabsolute: %s\n", (char *)ra, (char *)rb);
	return 0;
}

static const char *usr2(const sigset_t *s) { return sigismember(s, SIGUSR2) ? "blocked" : "FAIL: not blocked"; }

static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	printf("handler: SIGUSR2 %s in its frame, %s in its mask\n", usr2(&uc->uc_sigmask), usr2(&now));
}

static void *thread_mask(void *arg)
{
	sigset_t now;
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	printf("%s: SIGUSR2 %s\n", (char *)arg, usr2(&now));
	return NULL;
}

static void show(const char *when)
{
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	printf("%s: SIGUSR2 %s\n", when, usr2(&now));
	pthread_t t;
	pthread_create(&t, NULL, thread_mask, "new thread");
	pthread_join(t, NULL);
	raise(SIGUSR1);
}

static int mask(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigprocmask(SIG_BLOCK, &s, NULL);
	sigprocmask(SIG_BLOCK, &s, &old);
	printf("old set: SIGUSR2 %s\n", usr2(&old));
	show("before");
	raise(SIGUSR2); /* natively: pending, as it stays blocked */
	show("after");
	return 0;
}

/* What /proc/self/maps and status show, without addresses. */
static void proc_summary(const char *when)
{
	char line[512];
	int stack = 0, window = 0, rx_anon = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at) < 3)
			continue;
		const char *name = name_at ? line + name_at : "\n";
		stack += !strcmp(name, "[stack]\n");
		window += hi > 0x7c0000000000UL && lo < 0x7d0000000000UL;
		rx_anon += !strcmp(perms, "r-xp") && !strcmp(name, "\n");
	}
	if (f)
		fclose(f);
	printf("%s: maps: [stack] %d, in zvisor's window %d, r-x anonymous %d\n", when, stack, window, rx_anon);
	f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "SigBlk:", 7) || !strncmp(line, "SigIgn:", 7) || !strncmp(line, "SigCgt:", 7))
			printf("%s: %s", when, line);
	if (f)
		fclose(f);
	/* stat's fields 32 to 34: blocked, ignored, caught (31, pending, would
	 * show the SIGUSR2 raised, which --checkpoint-on takes) */
	f = fopen("/proc/self/stat", "r");
	char *rp = f && fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL;
	unsigned long sig[4] = { 0 };
	if (rp && sscanf(rp + 2, "%*c" "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
			 "%*u %*u %*d %*u %*u %*u %*u %*u %*u %lu %lu %lu %lu", &sig[0], &sig[1], &sig[2], &sig[3]) == 4)
		printf("%s: stat: blocked %lx ignored %lx caught %lx\n", when, sig[1], sig[2], sig[3]);
	else
		printf("%s: stat: unreadable\n", when);
	if (f)
		fclose(f);
}

static int procview(void)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, NULL);
	proc_summary("before");
	raise(SIGUSR2); /* natively: pending, as it stays blocked */
	proc_summary("after");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "shm"))
		return shm(NULL);
	if (!strcmp(mode, "shmkey") && argc > 2)
		return shm(argv[2]);
	if (!strcmp(mode, "shfile") && argc > 2)
		return shfile(argv[2]);
	if (!strcmp(mode, "futex"))
		return futexes();
	if (!strcmp(mode, "mask"))
		return mask();
	if (!strcmp(mode, "heap"))
		return heap();
	if (!strcmp(mode, "procview"))
		return procview();
	fprintf(stderr, "usage: cr_edges shm|shfile DIR|futex|mask|heap|procview\n");
	return 2;
}
