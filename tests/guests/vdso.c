/* The vDSO as a guest finds it.
 *
 *   vdso parse   parses the image at AT_SYSINFO_EHDR as Go's runtime does
 *                (its own ELF reader: PT_DYNAMIC, DT_HASH/DT_GNU_HASH,
 *                versions), prints the exported symbols with their versions,
 *                checks that the image is the [vdso] of /proc/self/maps, and
 *                calls each time function through the symbol it found,
 *                comparing with the raw system call of the same name
 *   vdso unmap   unmaps [vdso] and [vvar*] (as some sandboxes do), then uses
 *                raw system calls and forks: nothing may touch the vDSO
 *   vdso absent  prints whether there is a vDSO at all (--vdso=none)
 *   vdso raw     prints CLOCK_REALTIME seconds from the raw clock_gettime,
 *                gettimeofday and time system calls, and from libc
 *   vdso loop N  N calls of clock_gettime through libc (for --count)
 *   vdso efault  the raw time calls and the vDSO's entries with bad
 *                pointers and clocks: their errors
 *   vdso seccomp a seccomp filter fails clock_gettime with EPERM: libc's
 *                call, through the vDSO, still works (it is no syscall)
 *   vdso strict  the same under SECCOMP_MODE_STRICT */
#define _GNU_SOURCE
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

#ifndef CLOCK_TAI
#define CLOCK_TAI 11
#endif

struct image {
	uintptr_t base, bias;
	const Elf64_Sym *sym;
	const char *str;
	const Elf64_Versym *versym;
	const Elf64_Verdef *verdef;
	unsigned nsym;
};

static int open_image(struct image *im)
{
	memset(im, 0, sizeof *im);
	im->base = getauxval(AT_SYSINFO_EHDR);
	if (!im->base)
		return -1;
	const Elf64_Ehdr *eh = (const void *)im->base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_type != ET_DYN) {
		printf("not a 64-bit ELF shared object\n");
		return -1;
	}
	const Elf64_Phdr *ph = (const void *)(im->base + eh->e_phoff);
	const Elf64_Dyn *dyn = NULL;
	int loads = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !loads++)
			im->bias = im->base + ph[i].p_offset - ph[i].p_vaddr;
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(im->base + ph[i].p_offset);
	}
	if (!dyn || loads != 1) {
		printf("no PT_DYNAMIC or not one PT_LOAD\n");
		return -1;
	}
	const Elf32_Word *hash = NULL, *gnu = NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = im->bias + dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_SYMTAB: im->sym = (const void *)p; break;
		case DT_STRTAB: im->str = (const void *)p; break;
		case DT_HASH: hash = (const void *)p; break;
		case DT_GNU_HASH: gnu = (const void *)p; break;
		case DT_VERSYM: im->versym = (const void *)p; break;
		case DT_VERDEF: im->verdef = (const void *)p; break;
		}
	}
	if (!im->sym || !im->str || (!hash && !gnu)) {
		printf("no symbol table\n");
		return -1;
	}
	if (hash) {
		im->nsym = hash[1]; /* nchain */
	} else { /* the highest symbol a GNU hash chain reaches, plus one */
		uint32_t nb = gnu[0], off = gnu[1], bloom = gnu[2];
		const uint32_t *buckets = gnu + 4 + bloom * 2, *chain = buckets + nb;
		uint32_t last = 0;
		for (uint32_t b = 0; b < nb; b++)
			if (buckets[b] > last)
				last = buckets[b];
		if (last >= off)
			while (!(chain[last - off] & 1))
				last++;
		im->nsym = last + 1;
	}
	return 0;
}

static const char *version_of(const struct image *im, unsigned i)
{
	if (!im->versym || !im->verdef)
		return "";
	unsigned want = im->versym[i] & 0x7fff;
	const Elf64_Verdef *d = im->verdef;
	for (;;) {
		if (d->vd_ndx == want && !(d->vd_flags & VER_FLG_BASE)) {
			const Elf64_Verdaux *aux = (const void *)((const char *)d + d->vd_aux);
			return im->str + aux->vda_name;
		}
		if (!d->vd_next)
			return "?";
		d = (const void *)((const char *)d + d->vd_next);
	}
}

/* The address of name@LINUX_2.6, as Go and musl look it up. */
static void *lookup(const struct image *im, const char *name)
{
	for (unsigned i = 1; i < im->nsym; i++) {
		const Elf64_Sym *s = &im->sym[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF)
			continue;
		if (!strcmp(im->str + s->st_name, name) && !strcmp(version_of(im, i), "LINUX_2.6"))
			return (void *)(im->bias + s->st_value);
	}
	return NULL;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int in_maps(uintptr_t addr, const char *want)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi && strstr(line, want))
			found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

static int parse(void)
{
	struct image im;
	if (open_image(&im) < 0) {
		printf("no vDSO\n");
		return 1;
	}
	char *names[128];
	unsigned n = 0;
	for (unsigned i = 1; i < im.nsym && n < 128; i++) {
		const Elf64_Sym *s = &im.sym[i];
		if (s->st_shndx == SHN_UNDEF)
			continue;
		char *line;
		if (asprintf(&line, "%s@%s %s %s", im.str + s->st_name, version_of(&im, i),
			     ELF64_ST_TYPE(s->st_info) == STT_FUNC ? "FUNC" : "OTHER",
			     ELF64_ST_BIND(s->st_info) == STB_WEAK ? "WEAK" : "GLOBAL") > 0)
			names[n++] = line;
	}
	qsort(names, n, sizeof names[0], cmp);
	for (unsigned i = 0; i < n; i++)
		printf("symbol %s\n", names[i]);
	printf("image in [vdso]: %s\n", in_maps(im.base, "[vdso]") ? "yes" : "no");

	int (*cgt)(clockid_t, struct timespec *) = lookup(&im, "__vdso_clock_gettime");
	int (*gtod)(struct timeval *, void *) = lookup(&im, "__vdso_gettimeofday");
	time_t (*tm)(time_t *) = lookup(&im, "__vdso_time");
	int (*res)(clockid_t, struct timespec *) = lookup(&im, "__vdso_clock_getres");
	int (*cpu)(unsigned *, unsigned *, void *) = lookup(&im, "__vdso_getcpu");
	static const struct { clockid_t id; const char *name; } clocks[] = {
		{ CLOCK_REALTIME, "REALTIME" }, { CLOCK_MONOTONIC, "MONOTONIC" },
		{ CLOCK_MONOTONIC_RAW, "MONOTONIC_RAW" }, { CLOCK_REALTIME_COARSE, "REALTIME_COARSE" },
		{ CLOCK_MONOTONIC_COARSE, "MONOTONIC_COARSE" }, { CLOCK_BOOTTIME, "BOOTTIME" },
		{ CLOCK_TAI, "TAI" }, { CLOCK_PROCESS_CPUTIME_ID, "PROCESS_CPUTIME" },
		{ CLOCK_THREAD_CPUTIME_ID, "THREAD_CPUTIME" },
	};
	for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
		struct timespec a, b, c;
		syscall(SYS_clock_gettime, clocks[i].id, &a);
		int r = cgt ? cgt(clocks[i].id, &b) : -1;
		syscall(SYS_clock_gettime, clocks[i].id, &c);
		printf("clock_gettime %s: %s\n", clocks[i].name,
		       r ? "failed" : ns(&b) >= ns(&a) - 1000000 && ns(&b) <= ns(&c) + 1000000 ? "agrees" : "differs");
		struct timespec r1, r2;
		int e1 = res ? res(clocks[i].id, &r1) : -1;
		int e2 = syscall(SYS_clock_getres, clocks[i].id, &r2);
		printf("clock_getres %s: %s\n", clocks[i].name,
		       e1 || e2 ? "failed" : ns(&r1) == ns(&r2) ? "agrees" : "differs");
	}
	struct timespec bad;
	printf("clock_gettime(-1000000): %d\n", cgt ? cgt(-1000000, &bad) : 0);
	struct timeval tv1, tv2;
	syscall(SYS_gettimeofday, &tv1, NULL);
	int r = gtod ? gtod(&tv2, NULL) : -1;
	printf("gettimeofday: %s\n", !r && tv2.tv_sec - tv1.tv_sec <= 1 && tv2.tv_sec >= tv1.tv_sec ? "agrees" : "differs");
	time_t t1 = syscall(SYS_time, NULL), t2 = tm ? tm(NULL) : 0, t3;
	tm(&t3);
	printf("time: %s\n", t2 - t1 <= 1 && t2 >= t1 && t3 >= t2 && t3 - t2 <= 1 ? "agrees" : "differs");
	unsigned c = ~0u, node = ~0u;
	r = cpu ? cpu(&c, &node, NULL) : -1;
	printf("getcpu: %s\n", !r && c < (unsigned)sysconf(_SC_NPROCESSORS_CONF) && node < 1024 ? "ok" : "bad");
	return 0;
}

static int unmap_one(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo = 0, hi = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, name) && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
		else
			lo = hi = 0;
	if (f)
		fclose(f);
	return lo ? munmap((void *)lo, hi - lo) : 1;
}

static int unmap(void)
{
	printf("unmap [vdso]: %d\n", unmap_one("[vdso]"));
	unmap_one("[vvar]");
	unmap_one("[vvar_vclock]");
	printf("[vdso] left: %s\n", in_maps(getauxval(AT_SYSINFO_EHDR), "[vdso]") ? "yes" : "no");
	struct timespec ts;
	printf("raw clock_gettime: %ld\n", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts));
	pid_t p = fork();
	if (p == 0)
		_exit(syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) == 0 ? 7 : 1);
	int st;
	waitpid(p, &st, 0);
	printf("child: %d\n", WEXITSTATUS(st));
	fflush(stdout);
	/* An exec'd image gets a vDSO again. */
	execl("/proc/self/exe", "vdso", "absent", (char *)NULL);
	return 1;
}

static int absent(void)
{
	struct timespec ts;
	printf("AT_SYSINFO_EHDR: %s\n", getauxval(AT_SYSINFO_EHDR) ? "present" : "absent");
	printf("[vdso] mapped: %s\n", in_maps(getauxval(AT_SYSINFO_EHDR), "[vdso]") ? "yes" : "no");
	printf("libc clock_gettime: %d\n", clock_gettime(CLOCK_REALTIME, &ts));
	return 0;
}

static int efault(void)
{
	struct image im;
	void *bad = (void *)8;
	printf("clock_gettime(REALTIME, 8): %ld\n", syscall(SYS_clock_gettime, CLOCK_REALTIME, bad) ? (long)-errno : 0L);
	printf("clock_gettime(THREAD_CPUTIME, 8): %ld\n", syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, bad) ? (long)-errno : 0L);
	printf("clock_gettime(99, &ts): %ld\n", syscall(SYS_clock_gettime, 99, &(struct timespec){ 0, 0 }) ? (long)-errno : 0L);
	printf("gettimeofday(8, NULL): %ld\n", syscall(SYS_gettimeofday, bad, NULL) ? (long)-errno : 0L);
	printf("gettimeofday(NULL, 8): %ld\n", syscall(SYS_gettimeofday, NULL, bad) ? (long)-errno : 0L);
	printf("time(8): %ld\n", syscall(SYS_time, bad) == -1 ? (long)-errno : 0L);
	if (open_image(&im) == 0) {
		int (*cgt)(clockid_t, struct timespec *) = lookup(&im, "__vdso_clock_gettime");
		printf("vdso clock_gettime(99): %d\n", cgt(99, &(struct timespec){ 0, 0 }));
	}
	return 0;
}

static int raw(void)
{
	struct timespec ts, lts;
	struct timeval tv;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
	syscall(SYS_gettimeofday, &tv, NULL);
	long t = syscall(SYS_time, NULL);
	clock_gettime(CLOCK_REALTIME, &lts);
	printf("%ld %ld %ld %ld\n", (long)ts.tv_sec, (long)tv.tv_sec, t, (long)lts.tv_sec);
	return 0;
}

/* Classic BPF, defined here: musl has no <linux/filter.h>. */
struct bpf_insn { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct bpf_prog { unsigned short len; struct bpf_insn *insns; };

static int seccomp_filter(void)
{
	struct bpf_insn f[] = {
		{ 0x20, 0, 0, 0 },                  /* ld [0]: nr (x86-64 only here) */
		{ 0x15, 0, 1, SYS_clock_gettime },  /* jeq */
		{ 0x06, 0, 0, 0x00050000 | 1 },     /* ret ERRNO(EPERM) */
		{ 0x06, 0, 0, 0x7fff0000 },         /* ret ALLOW */
	};
	struct bpf_prog prog = { 4, f };
	struct timespec ts;
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (prctl(PR_SET_SECCOMP, 2, &prog, 0, 0))
		return printf("no seccomp\n"), 1;
	long raw = syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	printf("raw clock_gettime: %ld (%s)\n", raw, raw ? strerror(errno) : "");
	printf("libc clock_gettime: %d\n", clock_gettime(CLOCK_MONOTONIC, &ts));
	return 0;
}

static int seccomp_strict(void)
{
	struct timespec ts;
	fflush(stdout);
	if (prctl(PR_SET_SECCOMP, 1, 0, 0, 0))
		return printf("no seccomp\n"), 1;
	char msg[] = "libc clock_gettime in strict mode: 0\n";
	msg[sizeof msg - 3] += clock_gettime(CLOCK_MONOTONIC, &ts) ? 1 : 0;
	write(1, msg, sizeof msg - 1);
	syscall(SYS_exit, 0);
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "parse";
	if (!strcmp(mode, "parse"))
		return parse();
	if (!strcmp(mode, "unmap"))
		return unmap();
	if (!strcmp(mode, "absent"))
		return absent();
	if (!strcmp(mode, "raw"))
		return raw();
	if (!strcmp(mode, "efault"))
		return efault();
	if (!strcmp(mode, "seccomp"))
		return seccomp_filter();
	if (!strcmp(mode, "strict"))
		return seccomp_strict();
	if (!strcmp(mode, "loop") && argc > 2) {
		struct timespec ts;
		for (long i = atol(argv[2]); i > 0; i--)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		return 0;
	}
	fprintf(stderr, "usage: vdso parse|unmap|absent|raw|efault|seccomp|strict|loop N\n");
	return 2;
}
