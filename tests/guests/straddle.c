/* Syscall sites that straddle a boundary (DESIGN 5.7): a 2-byte `syscall`
 * whose 0f is the last byte of a 64-byte cache line cannot be patched
 * atomically, so the fast path must leave it alone (or patch it safely), and
 * it must keep working while 4 threads execute it at once. The code
 * `mov $110,%eax; syscall; ret` is copied into an executable mapping so that
 * the syscall is at
 *   line  offsets 63-64 of a page: across a cache line
 *   page  offsets 4095-4096: across a cache line and a page boundary
 * and, in the executable's own text, at the last byte of a 64-byte line
 * (.balign/.skip); each site is called 10000 times from each of 4 threads. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NTHREADS 4
#define ITERS 10000

static const unsigned char code[] = { 0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3 };
#define SYSCALL_AT 5 /* offset of 0f in code[] */

/* long straddle_text(void): the same code in .text, its 0f at 64n + 63 */
long straddle_text(void);
__asm__(".text\n"
	".balign 64\n"
	"straddle_text_line:\n"
	".skip 58, 0xcc\n"
	".globl straddle_text\n"
	".type straddle_text,@function\n"
	"straddle_text:\n"
	"  mov $110, %eax\n"
	"  syscall\n"
	"  ret\n"
	".size straddle_text, .-straddle_text\n");

static long ppid;
static pthread_barrier_t barrier;
static atomic_long good, bad;

static void *worker(void *arg)
{
	long (*fn)(void) = (long (*)(void))arg;
	long ok = 0;
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < ITERS; i++) {
		long r = fn();
		if (r == ppid)
			ok++;
		else if (atomic_fetch_add(&bad, 1) == 0)
			printf("  FAIL: call %d returned %ld, expected the ppid\n", i, r);
	}
	atomic_fetch_add(&good, ok);
	return NULL;
}

static int run(const char *name, unsigned char *fn)
{
	pthread_t th[NTHREADS];
	atomic_store(&good, 0);
	atomic_store(&bad, 0);
	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, worker, fn)) {
			printf("pthread_create failed\n");
			exit(1);
		}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&barrier);
	printf("%s: %d threads x %d calls, %ld returned the ppid, %ld did not\n", name, NTHREADS,
	       ITERS, atomic_load(&good), atomic_load(&bad));
	return atomic_load(&bad) != 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	ppid = syscall(SYS_getppid);
	/* two pages written RW, then made R+X */
	unsigned char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(p, 0xcc, 8192);
	unsigned char *line = p + 63 - SYSCALL_AT;   /* 0f at offset 63, 05 at 64 */
	unsigned char *page = p + 4095 - SYSCALL_AT; /* 0f at 4095, 05 at 4096 */
	memcpy(line, code, sizeof(code));
	memcpy(page, code, sizeof(code));
	if (mprotect(p, 8192, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	printf("syscall at line offset %lu, page offset %lu\n",
	       (unsigned long)(line + SYSCALL_AT - p) % 64, (unsigned long)(page + SYSCALL_AT - p));
	int failed = 0;
	failed |= run("across a cache line", line);
	failed |= run("across a page boundary", page);
	printf("syscall in .text at line offset %lu\n",
	       ((unsigned long)straddle_text + SYSCALL_AT) % 64);
	failed |= run("in .text across a cache line", (unsigned char *)straddle_text);
	return failed;
}
