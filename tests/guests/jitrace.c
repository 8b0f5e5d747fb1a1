/* Threads race to run code another thread maps and makes executable, JIT
 * style: with SUD off in a threaded process (intercept/sudoff_mm.c), no
 * worker may run a byte of it before zvisor scanned it, and one whose SUD
 * is off must never run a syscall there. Four workers call each new page
 * from the moment its address is published, before it is executable: a
 * call that faults (the page is not executable yet) returns "not yet" from
 * the SIGSEGV handler, which returns normally, and the worker calls again,
 * so the first call that runs is one right after the page became
 * executable. Modes:
 *   syscall  50 processes (fork), each with four workers and one page:
 *            mmap RW, publish, write `mov $NR_brk, %eax; xor %edi, %edi;
 *            syscall; ret`, mprotect RX; every call must return the break
 *            the program sees (zvisor's own break, far away, if the call
 *            ever reached the host unseen). One process, one race: the
 *            first syscall found arms SUD for good.
 *   clean    300 pages in one process, code without a syscall
 *            (`mov $42, %eax; ret`)
 *   remap    one page of a read-only memfd holding the clean code, mapped
 *            again with MAP_FIXED over itself each round while the workers
 *            keep calling it: they never see it missing
 *   blocked  three threads block (read of a pipe, a 300 ms nanosleep, a
 *            400 ms poll) while the main thread maps a page with a syscall
 *            and runs it, which arms SUD in every thread: none of their
 *            calls returns early or with EINTR
 * Prints one line; exit status 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <poll.h>
#include <time.h>

#define WORKERS 4
#define ROUNDS 300
#define PROCESSES 50
#define NOT_YET (-2L)

typedef long (*fn_t)(void);
static _Atomic(fn_t) code;
static atomic_int round_no, calls, bad, stop;
static long want;

static const unsigned char with_syscall[] = { 0xb8, SYS_brk, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05, 0xc3 };
static const unsigned char clean[] = { 0xb8, 42, 0, 0, 0, 0xc3 };

/* A call into the published page before it is executable: back to the
 * caller with NOT_YET, as if the page had returned it. Any other fault is
 * the program's: it dies of it. */
static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	if ((uintptr_t)si->si_addr != (uintptr_t)atomic_load(&code) || (uintptr_t)g[REG_RIP] != (uintptr_t)si->si_addr) {
		signal(sig, SIG_DFL);
		return;
	}
	g[REG_RIP] = *(greg_t *)g[REG_RSP]; /* pop the return address */
	g[REG_RSP] += 8;
	g[REG_RAX] = NOT_YET;
}

/* Calls each published page once it runs, from the moment it is there. */
static void *jit_worker(void *arg)
{
	(void)arg;
	int seen = 0;
	while (!atomic_load(&stop)) {
		int r = atomic_load_explicit(&round_no, memory_order_acquire);
		if (r == seen) {
			sched_yield();
			continue;
		}
		seen = r;
		long v;
		while ((v = atomic_load(&code)()) == NOT_YET)
			;
		if (v != want)
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

/* Calls the page at code over and over. */
static void *remap_worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&round_no) && !atomic_load(&stop))
		sched_yield();
	while (!atomic_load(&stop)) {
		if (atomic_load(&code)() != want)
			atomic_fetch_add(&bad, 1);
		atomic_fetch_add(&calls, 1);
	}
	return NULL;
}

static void start(pthread_t *th, void *(*fn)(void *))
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	sigaction(SIGSEGV, &sa, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, fn, NULL);
}

static void finish(pthread_t *th)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
}

/* rounds pages of bytes, each published before it is written and made
 * executable. */
static int jit(const unsigned char *bytes, size_t n, int rounds)
{
	for (int r = 1; r <= rounds; r++) {
		unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -1;
		atomic_store(&code, (fn_t)p);
		atomic_store_explicit(&round_no, r, memory_order_release);
		memcpy(p, bytes, n);
		if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
			return -1;
		while (atomic_load(&calls) < r * WORKERS)
			sched_yield();
		munmap(p, 4096);
	}
	return 0;
}

/* One process's race with a syscall in the page: exit status 0 if every
 * call returned the break. */
static int one_race(void)
{
	pthread_t th[WORKERS];
	start(th, jit_worker);
	want = syscall(SYS_brk, 0); /* after the threads' memory came (their TLS may move the break) */
	int e = jit(with_syscall, sizeof with_syscall, 1);
	finish(th);
	return e < 0 || atomic_load(&bad) || atomic_load(&calls) != WORKERS;
}

static int syscall_races(void)
{
	int ok = 0;
	for (int i = 0; i < PROCESSES; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(one_race());
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return -1;
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return ok;
}

static int remap(void)
{
	/* a memfd, reopened read-only: no fd left that could write it */
	int w = memfd_create("jitrace", MFD_CLOEXEC);
	unsigned char page[4096] = { 0 };
	char path[64];
	memcpy(page, clean, sizeof clean);
	if (w < 0 || write(w, page, sizeof page) != sizeof page)
		return -1;
	snprintf(path, sizeof path, "/proc/self/fd/%d", w);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	close(w);
	void *p = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	atomic_store(&code, (fn_t)p);
	atomic_store(&round_no, 1);
	for (int r = 0; r < ROUNDS; r++) {
		while (atomic_load(&calls) < r * WORKERS)
			sched_yield(); /* the workers are running it */
		if (mmap(p, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0) != p)
			return -1;
	}
	return 0;
}

static int pipe_fds[2], other_pipe[2];
static long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void *reader(void *arg)
{
	char c;
	*(long *)arg = read(pipe_fds[0], &c, 1) == 1 ? c : -errno;
	return NULL;
}

static void *sleeper(void *arg)
{
	struct timespec t0, d = { 0, 300000000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long r = nanosleep(&d, NULL);
	*(long *)arg = r ? -errno : ms_since(&t0) >= 300;
	return NULL;
}

static void *poller(void *arg)
{
	struct timespec t0;
	struct pollfd p = { other_pipe[0], POLLIN, 0 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long r = poll(&p, 1, 400);
	*(long *)arg = r < 0 ? -errno : r == 0 && ms_since(&t0) >= 400;
	return NULL;
}

static int blocked(void)
{
	pthread_t th[3];
	long got[3] = { 0, 0, 0 };
	void *(*fn[3])(void *) = { reader, sleeper, poller };
	if (pipe(pipe_fds) || pipe(other_pipe))
		return -1;
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, fn[i], &got[i]);
	struct timespec d = { 0, 100000000 };
	nanosleep(&d, NULL); /* they block */
	want = syscall(SYS_brk, 0);
	unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(p, with_syscall, sizeof with_syscall);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC) || ((fn_t)p)() != want)
		return -1;
	nanosleep(&d, NULL);
	if (write(pipe_fds[1], "x", 1) != 1)
		return -1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("blocked: read %s, nanosleep %s, poll %s\n", got[0] == 'x' ? "ok" : "FAIL",
	       got[1] == 1 ? "ok" : "FAIL", got[2] == 1 ? "timed out ok" : "FAIL");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "syscall";
	pthread_t th[WORKERS];
	if (!strcmp(mode, "syscall")) {
		int ok = syscall_races();
		printf("syscall: %d of %d processes' calls ok%s\n", ok, PROCESSES, ok == PROCESSES ? "" : ", FAIL");
	} else if (!strcmp(mode, "clean")) {
		want = 42;
		start(th, jit_worker);
		int e = jit(clean, sizeof clean, ROUNDS);
		finish(th);
		printf("clean: %d rounds, %d calls, %s\n", ROUNDS, atomic_load(&calls),
		       e < 0 || atomic_load(&bad) ? "FAIL" : "every call ok");
	} else if (!strcmp(mode, "remap")) {
		want = 42;
		start(th, remap_worker);
		int e = remap();
		finish(th);
		printf("remap: %d rounds, %s\n", ROUNDS, e < 0 || atomic_load(&bad) ? "FAIL" : "every call ok");
	} else if (!strcmp(mode, "blocked")) {
		if (blocked() < 0)
			printf("blocked: FAIL\n");
	} else {
		fprintf(stderr, "usage: jitrace syscall|clean|remap|blocked\n");
		return 2;
	}
	return 0;
}
