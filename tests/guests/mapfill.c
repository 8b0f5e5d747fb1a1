/* Memory calls where zvisor keeps memory of its own (the stub regions below
 * each image, zpoline's page 0 and entry page, the kernel's window), as
 * LTP's munmap04 and mmap17 meet them. Natively that memory does not exist;
 * under zvisor the host has it, so a MAP_FIXED_NOREPLACE mapping there must
 * fail as over any existing mapping (EEXIST), never with an errno that
 * means something else (ENOMEM: out of mappings), munmap of it must
 * succeed as over a hole, and mprotect fail as over a hole (ENOMEM), after
 * the argument checks the host makes first.
 *   munmap04: map 3-page areas 6 pages apart from 256 MiB up, skipping
 *   EEXIST, until the host's map count is full; unmapping one page in the
 *   middle of an area must then fail with ENOMEM.
 * Output is the same natively and under zvisor: only errnos that mean the
 * same thing in both, never addresses or counts. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define PAGE 4096UL
#define ENTRY_PAGE 0x65656000UL /* zpoline's entry page; natively a hole */

static const char *errname(long r)
{
	static char buf[32];
	if (r >= 0)
		return "ok";
	switch (-r) {
	case ENOMEM: return "ENOMEM";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	default:
		snprintf(buf, sizeof buf, "errno %ld", -r);
		return buf;
	}
}

static long map(uint64_t addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p = mmap((void *)addr, len, prot, flags, fd, off);
	return p == MAP_FAILED ? -errno : (long)p;
}

static long rc(long r) { return r < 0 ? -errno : r; }

/* musl's mprotect rounds the start down: the raw call */
static int raw_mprotect(uint64_t a, size_t len, long prot) { return (int)syscall(SYS_mprotect, a, len, prot); }

/* NOREPLACE over [lo, hi) page by page: every page is free (mapped, then
 * unmapped again) or taken (EEXIST); anything else is counted. */
static void probe(const char *what, uint64_t lo, uint64_t hi)
{
	long other = 0, first = 0;
	for (uint64_t a = lo; a < hi; a += PAGE) {
		long r = map(a, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (r >= 0)
			munmap((void *)r, PAGE);
		else if (r != -EEXIST && !other++)
			first = r;
	}
	printf("NOREPLACE below %s: %ld pages neither free nor EEXIST%s%s\n", what, other,
	       other ? ", first " : "", other ? errname(first) : "");
}

static void fill_map_count(void)
{
	size_t area = 3 * PAGE;
	long n = 0, max = 70000;
	void **maps = calloc(max, sizeof *maps);
	long stop = 0;
	for (uint64_t a = 0x10000000UL; n < max; a += 2 * area) {
		long r = map(a, area, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (r == -EEXIST)
			continue;
		if (r < 0) {
			stop = r;
			break;
		}
		maps[n++] = (void *)r;
	}
	printf("fill stopped with %s\n", errname(stop));
	/* a full map count refuses any new mapping, wherever it is */
	long r = map(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("another mapping after the fill: %s\n", errname(r));
	if (r >= 0)
		munmap((void *)r, PAGE);
	if (n > 2)
		printf("munmap of a middle page (munmap04): %s\n",
		       errname(rc(munmap((char *)maps[2] + PAGE, PAGE))));
	long bad = 0;
	for (long i = 0; i < n; i++)
		if (munmap(maps[i], area))
			bad++;
	printf("areas that would not unmap: %ld\n", bad);
	free(maps);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	/* zpoline's entry page: a hole natively */
	uint64_t e = ENTRY_PAGE;
	int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	printf("NOREPLACE on the entry page: %s\n",
	       map(e, PAGE, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0) == -ENOMEM ? "ENOMEM" : "not ENOMEM");
	munmap((void *)e, PAGE); /* if it was mapped natively */
	printf("NOREPLACE length 0: %s\n", errname(map(e, 0, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0)));
	printf("NOREPLACE unaligned: %s\n", errname(map(e + 1, PAGE, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0)));
	printf("NOREPLACE bad fd: %s\n", errname(map(e, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, 999, 0)));
	printf("NOREPLACE unaligned offset: %s\n",
	       errname(map(e, PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, 0, 1)));
	printf("munmap of the entry page: %s\n", errname(rc(munmap((void *)e, PAGE))));
	printf("munmap unaligned: %s\n", errname(rc(munmap((void *)(e + 1), PAGE))));
	printf("mprotect of the entry page: %s\n", errname(rc(mprotect((void *)e, PAGE, PROT_READ))));
	printf("mprotect bad prot: %s\n", errname(rc(mprotect((void *)e, PAGE, 0x100))));
	printf("mprotect GROWSUP|GROWSDOWN: %s\n",
	       errname(rc(mprotect((void *)e, PAGE, PROT_READ | PROT_GROWSUP | PROT_GROWSDOWN))));
	printf("mprotect unaligned: %s\n", errname(rc(raw_mprotect(e + 1, PAGE, PROT_READ))));
	printf("madvise of the entry page: %s\n", errname(rc(madvise((void *)e, PAGE, MADV_DONTNEED))));

	/* guest pages on both sides of it: munmap takes them, mprotect stops at the hole */
	long lo = map(e - 2 * PAGE, 2 * PAGE, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0);
	long hi = map(e + PAGE, 2 * PAGE, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0);
	printf("pages around it: %s %s\n", errname(lo), errname(hi));
	printf("mprotect across it: %s\n", errname(rc(mprotect((void *)(e - 2 * PAGE), 5 * PAGE, PROT_READ | PROT_WRITE))));
	*(volatile char *)(e - PAGE) = 1; /* the part below the hole was changed */
	printf("page below it written\n");
	printf("munmap across it: %s\n", errname(rc(munmap((void *)(e - 2 * PAGE), 5 * PAGE))));
	printf("pages around it after: %s %s\n",
	       errname(map(e - 2 * PAGE, PAGE, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0)),
	       errname(map(e + 2 * PAGE, PAGE, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0)));
	munmap((void *)(e - 2 * PAGE), PAGE);
	munmap((void *)(e + 2 * PAGE), PAGE);

	/* below this executable, libc and the stack (stub regions sit below images) */
	extern char __executable_start[];
	uint64_t exe = (uint64_t)__executable_start & ~(PAGE - 1);
	uint64_t libc = (uint64_t)&printf & ~(PAGE - 1);
	uint64_t min = 0x10000;
	probe("the executable", exe - 16 * 1024 * 1024 > min && exe > 16 * 1024 * 1024 ? exe - 16 * 1024 * 1024 : min, exe);
	probe("libc", libc - 16 * 1024 * 1024, libc & ~0xfffffUL);
	probe("the kernel window (and in it)", 0x7c0000000000UL - 16 * PAGE, 0x7c0000000000UL + 64 * PAGE);

	fill_map_count();
	return 0;
}
