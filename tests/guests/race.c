/* Rewriting under threads (DESIGN 5.7): 8 threads start executing the same
 * never-before-run syscall site at the same moment, so several of them reach
 * the catch-all for one site together and the site may be patched while the
 * others execute it. Each thread makes 20000 raw getppid through that one
 * site and checks every result. Modes (argv[1]; none runs all four):
 *   plain     just that
 *   mprotect  the same with a fresh site while another thread keeps changing
 *             the protection of an unrelated page (TLB shootdowns)
 *   blocked   8 threads with every signal blocked (as glibc's new threads
 *             start) run through 32 fresh sites, 200 calls each: a thread
 *             that meets a site halfway through its rewriting must not die
 *             of a fault signal it blocked
 *   fork      8 threads run through 32 other fresh sites while the main
 *             thread keeps forking; each child calls every site once and
 *             must not hang or fail, even if it was forked halfway through
 *             the rewriting of a site (DESIGN 5.4) */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 8
#define ITERS 20000

/* One function, one syscall site each: nothing runs them before the race
 * (the comment in the asm keeps gcc from folding the two into one). */
#define SITE(name)                                                                \
	__attribute__((noinline)) static long name(void)                          \
	{                                                                         \
		long r;                                                           \
		__asm__ volatile("syscall # " #name                               \
				 : "=a"(r) : "a"(110L) : "rcx", "r11", "memory"); \
		return r;                                                         \
	}
SITE(site_plain)
SITE(site_mprotect)
#define SITE4(p) SITE(p##0) SITE(p##1) SITE(p##2) SITE(p##3)
#define SITE32(p) SITE4(p##0) SITE4(p##1) SITE4(p##2) SITE4(p##3) SITE4(p##4) SITE4(p##5) \
	SITE4(p##6) SITE4(p##7)
SITE32(b) SITE32(f)
#undef SITE
#define SITE(name) name,
static long (*const blocked_sites[32])(void) = { SITE32(b) };
static long (*const fork_sites[32])(void) = { SITE32(f) };
#define MANY_CALLS 200

static long ppid;
static pthread_barrier_t barrier;
static atomic_int go;
static atomic_long good, bad;
static atomic_int workers_done;

static void *worker(void *arg)
{
	long (*site)(void) = (long (*)(void))arg;
	long ok = 0;
	pthread_barrier_wait(&barrier);
	while (!atomic_load_explicit(&go, memory_order_acquire))
		; /* released together */
	for (int i = 0; i < ITERS; i++) {
		long r = site();
		if (r == ppid)
			ok++;
		else if (atomic_fetch_add(&bad, 1) == 0)
			printf("  FAIL: call %d returned %ld, expected the ppid\n", i, r);
	}
	atomic_fetch_add(&good, ok);
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

static void *protector(void *arg)
{
	char *page = arg;
	long n = 0, failures = 0;
	while (atomic_load(&workers_done) < NTHREADS || n < 100) {
		int prot = (n++ & 1) ? PROT_READ : PROT_READ | PROT_WRITE;
		if (mprotect(page, 4096, prot))
			failures++;
		if (prot & PROT_WRITE)
			page[n & 4095] = (char)n;
	}
	return (void *)failures;
}

static int race(const char *name, long (*site)(void), int with_mprotect)
{
	pthread_t th[NTHREADS], prot;
	char *page = NULL;
	atomic_store(&go, 0);
	atomic_store(&good, 0);
	atomic_store(&bad, 0);
	atomic_store(&workers_done, 0);
	pthread_barrier_init(&barrier, NULL, NTHREADS + 1);
	if (with_mprotect) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED || pthread_create(&prot, NULL, protector, page)) {
			printf("set-up failed\n");
			exit(1);
		}
	}
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)site)) {
			printf("pthread_create failed\n");
			exit(1);
		}
	pthread_barrier_wait(&barrier);
	atomic_store_explicit(&go, 1, memory_order_release);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	long mprotect_failures = 0;
	if (with_mprotect) {
		void *ret;
		pthread_join(prot, &ret);
		mprotect_failures = (long)ret;
		munmap(page, 4096);
	}
	pthread_barrier_destroy(&barrier);
	printf("%s: %d threads x %d getppid from one new site: %ld ok, %ld wrong", name, NTHREADS,
	       ITERS, atomic_load(&good), atomic_load(&bad));
	if (with_mprotect)
		printf(", mprotect failures %ld", mprotect_failures);
	printf("\n");
	return atomic_load(&bad) != 0 || mprotect_failures != 0;
}

/* arg: the 32 sites; with blocked, every signal is blocked meanwhile */
static int blocked;
static void *many_worker(void *arg)
{
	long (*const *sites)(void) = arg;
	sigset_t all, old;
	sigfillset(&all);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_barrier_wait(&barrier);
	for (int k = 0; k < 32; k++)
		for (int i = 0; i < MANY_CALLS; i++)
			if (sites[k]() != ppid && atomic_fetch_add(&bad, 1) == 0)
				printf("  FAIL: site %d returned a wrong result\n", k);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

/* A child of a fork in the middle of the race: every site must work there.
 * Returns 0 if it exited 0 within 10 s; kills it otherwise. */
static int fork_child(long self)
{
	pid_t pid = fork();
	if (pid == 0) {
		int ok = 1;
		for (int k = 0; k < 32; k++)
			ok &= fork_sites[k]() == self; /* the child's parent is us */
		_exit(ok ? 0 : 1);
	}
	if (pid < 0)
		return 1;
	int status;
	for (int ms = 0; ms < 10000; ms++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	printf("  FAIL: a fork child hung\n");
	return 1;
}

/* 8 threads through 32 new sites; with_fork: the main thread forks meanwhile */
static int many_race(long (*const *sites)(void), int with_fork)
{
	pthread_t th[NTHREADS];
	long self = getpid(), forks = 0, bad_children = 0;
	atomic_store(&bad, 0);
	atomic_store(&workers_done, 0);
	pthread_barrier_init(&barrier, NULL, NTHREADS + 1);
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, many_worker, (void *)sites)) {
			printf("pthread_create failed\n");
			exit(1);
		}
	pthread_barrier_wait(&barrier);
	while (with_fork && (atomic_load(&workers_done) < NTHREADS || forks < 10)) {
		bad_children += fork_child(self);
		forks++;
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&barrier);
	printf("%s: %d threads x 32 new sites x %d calls, %ld wrong", with_fork ?
	       "fork during the race" : "race with every signal blocked", NTHREADS, MANY_CALLS,
	       atomic_load(&bad));
	if (with_fork)
		printf(", children that failed or hung: %ld", bad_children);
	printf("\n");
	return atomic_load(&bad) != 0 || bad_children != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	const char *mode = argc > 1 ? argv[1] : "all";
	int all = !strcmp(mode, "all"), failed = 0;
	ppid = syscall(SYS_getppid);
	if (!all && strcmp(mode, "plain") && strcmp(mode, "mprotect") && strcmp(mode, "blocked") &&
	    strcmp(mode, "fork")) {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	if (all || !strcmp(mode, "plain"))
		failed |= race("race", site_plain, 0);
	if (all || !strcmp(mode, "mprotect"))
		failed |= race("race with mprotect storm", site_mprotect, 1);
	blocked = 1;
	if (all || !strcmp(mode, "blocked"))
		failed |= many_race(blocked_sites, 0);
	blocked = 0;
	if (all || !strcmp(mode, "fork"))
		failed |= many_race(fork_sites, 1);
	return failed;
}
