/* JIT code (DESIGN 5.7): syscall sites in memory the guest mapped itself and
 * wrote at run time. The rewriting fast path must patch (or leave) such a site
 * correctly whether the page is W^X (written RW, then mprotect'ed R+X) or
 * RWX, must restore the page's protection, and must not keep stale knowledge
 * of a site when the guest rewrites its code: the new bytes, at the same
 * address, must run as written. Modes (argv[1]; none runs all):
 *   wx       RW page, then R+X: `mov $39,%eax; syscall; ret` called 100000 times
 *   rwx      the same code in an RWX page
 *   xonly    the same code in a page made execute-only (PROT_EXEC alone)
 *   rewrite  W^X page: getpid 50000 times, then the code is rewritten in place
 *            to getppid (same layout) 20000 times, then to a layout whose
 *            syscall sits one byte later (getpid) 20000 times, then getppid
 *            again; finally the same in an RWX page written without mprotect
 *   shared   the code in a memfd mapped twice, MAP_SHARED: a writable view
 *            and an R+X view the code runs from (as dual-mapping JITs do);
 *            then an R+X view from a read-only fd, which cannot be made
 *            writable. The file must keep the bytes the guest wrote: a
 *            shared mapping must never be patched (other mappings and
 *            processes see it). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CALLS 100000
#define PHASE 50000 /* calls before the first rewrite */
#define NEXT 20000  /* calls after each rewrite */
#define OFFSET 0x7c0 /* where in the page the code goes */

static long pid, ppid;
static int failed;

/* mov $NR,%eax; syscall; ret */
#define CODE_A(nr) { 0xb8, (nr), 0, 0, 0, 0x0f, 0x05, 0xc3, 0xcc, 0xcc }
/* nop; mov $NR,%eax; syscall; ret: the syscall one byte later */
#define CODE_B(nr) { 0x90, 0xb8, (nr), 0, 0, 0, 0x0f, 0x05, 0xc3, 0xcc }

static const unsigned char code_getpid[10] = CODE_A(39);
static const unsigned char code_getppid[10] = CODE_A(110);
static const unsigned char code_getpid_shifted[10] = CODE_B(39);

static unsigned char *map_page(int prot)
{
	void *p = mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 0xcc, 4096); /* int3 everywhere else */
	return p;
}

static void protect(void *page, int prot)
{
	if (mprotect(page, 4096, prot)) {
		perror("mprotect");
		exit(1);
	}
}

/* Call the code at fn `n` times; every result must be `want`. */
static long run_calls(unsigned char *fn, long n, long want, const char *what)
{
	long (*call)(void) = (long (*)(void))fn;
	long bad = 0;
	for (long i = 0; i < n; i++) {
		long r = call();
		if (r != want && bad++ == 0)
			printf("  FAIL: %s: call %ld returned %ld, expected %ld\n", what, i, r, want);
	}
	if (bad)
		failed = 1;
	return n - bad;
}

/* Whether the page still has exactly the protection the guest gave it. */
static const char *prot_in_maps(void *page)
{
	static char perms[5];
	char line[512];
	unsigned long lo, hi, a = (unsigned long)page;
	FILE *f = fopen("/proc/self/maps", "r");
	strcpy(perms, "????");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && lo <= a && a < hi)
			break;
	if (f)
		fclose(f);
	return perms;
}

static void mode_wx(void)
{
	unsigned char *page = map_page(PROT_READ | PROT_WRITE);
	memcpy(page + OFFSET, code_getpid, sizeof(code_getpid));
	protect(page, PROT_READ | PROT_EXEC);
	long ok = run_calls(page + OFFSET, CALLS, pid, "W^X getpid");
	printf("W^X page: %ld of %d calls returned the pid, page is %s\n", ok, CALLS,
	       prot_in_maps(page));
	munmap(page, 4096);
}

static void mode_rwx(void)
{
	unsigned char *page = map_page(PROT_READ | PROT_WRITE | PROT_EXEC);
	memcpy(page + OFFSET, code_getpid, sizeof(code_getpid));
	long ok = run_calls(page + OFFSET, CALLS, pid, "RWX getpid");
	printf("RWX page: %ld of %d calls returned the pid, page is %s\n", ok, CALLS,
	       prot_in_maps(page));
	munmap(page, 4096);
}

static void mode_xonly(void)
{
	unsigned char *page = map_page(PROT_READ | PROT_WRITE);
	memcpy(page + OFFSET, code_getpid, sizeof(code_getpid));
	protect(page, PROT_EXEC);
	long ok = run_calls(page + OFFSET, NEXT, pid, "execute-only getpid");
	printf("execute-only page: %ld of %d calls returned the pid, page is %s\n", ok, NEXT,
	       prot_in_maps(page));
	munmap(page, 4096);
}

/* Write new code over the old; with wx, through an mprotect RW / R+X flip. */
static void rewrite(unsigned char *page, const unsigned char *code, int wx)
{
	if (wx)
		protect(page, PROT_READ | PROT_WRITE);
	memcpy(page + OFFSET, code, 10);
	if (wx)
		protect(page, PROT_READ | PROT_EXEC);
}

static void rewrite_in(int wx)
{
	const char *kind = wx ? "W^X" : "RWX";
	int prot = wx ? PROT_READ | PROT_WRITE : PROT_READ | PROT_WRITE | PROT_EXEC;
	unsigned char *page = map_page(prot);
	rewrite(page, code_getpid, 0);
	if (wx)
		protect(page, PROT_READ | PROT_EXEC);
	long a = run_calls(page + OFFSET, PHASE, pid, "getpid before the rewrite");
	rewrite(page, code_getppid, wx);
	long b = run_calls(page + OFFSET, NEXT, ppid, "getppid written over getpid");
	rewrite(page, code_getpid_shifted, wx);
	long c = run_calls(page + OFFSET, NEXT, pid, "getpid one byte later");
	rewrite(page, code_getppid, wx);
	long d = run_calls(page + OFFSET, NEXT, ppid, "getppid again");
	printf("%s rewrite: getpid %ld of %d ok, then getppid %ld, shifted getpid %ld, getppid "
	       "%ld of %d ok, page is %s\n", kind, a, PHASE, b, c, d, NEXT, prot_in_maps(page));
	munmap(page, 4096);
}

/* Whether the memfd still holds exactly `code` at OFFSET. */
static int file_holds(int fd, const unsigned char *code)
{
	unsigned char back[10];
	return pread(fd, back, sizeof(back), OFFSET) == sizeof(back) && !memcmp(back, code, 10);
}

static void mode_shared(void)
{
	char path[64];
	int fd = memfd_create("jit", 0);
	if (fd < 0 || ftruncate(fd, 4096)) {
		perror("memfd");
		exit(1);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int rofd = open(path, O_RDONLY);
	unsigned char *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	unsigned char *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	unsigned char *xro = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, rofd, 0);
	if (rofd < 0 || w == MAP_FAILED || x == MAP_FAILED || xro == MAP_FAILED) {
		perror("shared mappings");
		exit(1);
	}
	memset(w, 0xcc, 4096);
	memcpy(w + OFFSET, code_getpid, sizeof(code_getpid));
	long a = run_calls(x + OFFSET, PHASE, pid, "shared getpid");
	int fa = file_holds(fd, code_getpid);
	memcpy(w + OFFSET, code_getppid, sizeof(code_getppid));
	long b = run_calls(x + OFFSET, NEXT, ppid, "shared getppid written through the W view");
	int fb = file_holds(fd, code_getppid);
	long c = run_calls(xro + OFFSET, NEXT, ppid, "shared getppid, view of a read-only fd");
	int fc = file_holds(fd, code_getppid);
	printf("shared memfd: getpid %ld of %d ok, then getppid written through the W view %ld, "
	       "from a read-only view %ld of %d ok; file holds what was written: %d %d %d; "
	       "views are %s and ", a, PHASE, b, c, NEXT, fa, fb, fc, prot_in_maps(x));
	printf("%s\n", prot_in_maps(xro));
	munmap(w, 4096);
	munmap(x, 4096);
	munmap(xro, 4096);
	close(rofd);
	close(fd);
}

static void mode_rewrite(void)
{
	rewrite_in(1);
	rewrite_in(0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	const char *mode = argc > 1 ? argv[1] : "all";
	pid = syscall(SYS_getpid);
	ppid = syscall(SYS_getppid);
	if (!strcmp(mode, "wx") || !strcmp(mode, "all"))
		mode_wx();
	if (!strcmp(mode, "rwx") || !strcmp(mode, "all"))
		mode_rwx();
	if (!strcmp(mode, "xonly") || !strcmp(mode, "all"))
		mode_xonly();
	if (!strcmp(mode, "rewrite") || !strcmp(mode, "all"))
		mode_rewrite();
	if (!strcmp(mode, "shared") || !strcmp(mode, "all"))
		mode_shared();
	if (strcmp(mode, "wx") && strcmp(mode, "rwx") && strcmp(mode, "xonly") && strcmp(mode, "rewrite") &&
	    strcmp(mode, "shared") && strcmp(mode, "all")) {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	return failed;
}
