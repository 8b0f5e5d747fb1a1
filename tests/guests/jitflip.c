/* Rewriting while the guest flips its JIT page's protection (DESIGN 5.7):
 * one thread (the writer) keeps writing fresh `mov $110,%eax; syscall; ret`
 * stubs into one page, making it RWX for each write and R+X again after,
 * and in between scribbles on a scratch area of the same page; another
 * thread (the runner) calls each new stub 3 times as soon as it is
 * published, while the writer is already at the next one. A rewriter that
 * changes the page's protection itself (to patch a site, then "restores"
 * it) must not leave it read-only while the writer believes it writable,
 * nor write to it after the writer made it read-only: natively neither
 * thread can fault. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOTS 255 /* 16-byte slots; the last 16 bytes are the scratch area */
#define ROUNDS 8
#define STUBS (ROUNDS * SLOTS)
#define LEAD 100 /* how far the writer may run ahead of the runner */

static const unsigned char stub[8] = { 0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3 };
static unsigned char *page;
static atomic_int published = -1, consumed = -1;
static long ppid;

static void wait_until(atomic_int *v, int at_least)
{
	for (unsigned spins = 1; atomic_load_explicit(v, memory_order_acquire) < at_least; spins++)
		if (spins % 1024 == 0)
			sched_yield();
}

static void protect(int prot)
{
	if (mprotect(page, 4096, prot)) {
		perror("mprotect");
		exit(1);
	}
}

static void *runner(void *arg)
{
	long bad = 0;
	for (int n = 0; n < STUBS; n++) {
		wait_until(&published, n);
		long (*fn)(void) = (long (*)(void))(page + 16 * (n % SLOTS));
		for (int i = 0; i < 3; i++)
			if (fn() != ppid && bad++ == 0)
				printf("  FAIL: stub %d returned a wrong result\n", n);
		atomic_store_explicit(&consumed, n, memory_order_release);
	}
	return (void *)bad;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	ppid = syscall(SYS_getppid);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (page == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(page, 0xcc, 4096);
	protect(PROT_READ | PROT_EXEC);
	pthread_t th;
	if (pthread_create(&th, NULL, runner, NULL)) {
		printf("pthread_create failed\n");
		return 1;
	}
	volatile unsigned char *scratch = page + 16 * SLOTS;
	for (int n = 0; n < STUBS; n++) {
		wait_until(&consumed, n - LEAD); /* never overwrite a stub still to be run */
		protect(PROT_READ | PROT_WRITE | PROT_EXEC);
		memcpy(page + 16 * (n % SLOTS), stub, sizeof(stub));
		for (int j = 0; j < 64; j++)
			scratch[j & 15] = (unsigned char)(n + j);
		protect(PROT_READ | PROT_EXEC);
		atomic_store_explicit(&published, n, memory_order_release);
		for (int j = 0; j < 64; j++) /* let the runner meet the page read-only too */
			(void)scratch[j & 15];
	}
	void *bad;
	pthread_join(th, &bad);
	char line[256], perms[5] = "????";
	unsigned long lo, hi;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && lo == (unsigned long)page)
			break;
	if (f)
		fclose(f);
	printf("%d fresh stubs called 3 times each while the page flipped RWX / R+X: %ld wrong, "
	       "page is %s\n", STUBS, (long)bad, perms);
	return bad != 0;
}
