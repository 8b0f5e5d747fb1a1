/* The guest's vDSO.
 *
 * The guest is shown the host's own vDSO: the same image at the same
 * address (AT_SYSINFO_EHDR), named [vdso] in /proc/self/maps, so glibc, musl
 * and Go's runtime (which parses it itself) find what they find natively.
 * When the kernel has nothing to do with vDSO calls, they run the host's
 * code untouched, at the host's speed.
 *
 * When the kernel must see them (--count, --time, --vdso=kernel), the
 * dynamic symbols of the time functions and getcpu are pointed at stubs
 * written into the unused tail of the mapping, one per function:
 *
 *     mov $NR, %eax     b8 NR
 *     syscall           0f 05
 *     ret               c3
 *
 * A vDSO function takes the same arguments as the system call of the same
 * name and returns its result the same way (-errno on failure), so the stub
 * is that system call, and everything the kernel does to calls (counting,
 * virtual time, tracing) applies to it. The platform intercepts it like any
 * other site; on zpoline it is written as `call *%rax` right away (and
 * known as a rewritten site), so it costs a function call. The host's code stays intact (no symbol leads there any
 * more). Symbols are looked up by their hashed tables through .dynsym, so
 * changing st_value is enough for every reader.
 *
 * --vdso=none shows no vDSO, as a host booted with vdso=0: no
 * AT_SYSINFO_EHDR, and the vDSO and vvar mappings are unmapped. */
#include "zvisor.h"
#include "sys/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/procself.h"
#include <elf.h>
#include <linux/mman.h>

#define STUB_SIZE 8 /* ZV_VDSO_STUB_AREA at the end of the mapping holds them: 8-byte stubs never straddle a cache line */

static const struct {
	const char *name;
	int nr;
} wrapped[] = {
	{ "clock_gettime", __NR_clock_gettime }, { "__vdso_clock_gettime", __NR_clock_gettime },
	{ "gettimeofday", __NR_gettimeofday },   { "__vdso_gettimeofday", __NR_gettimeofday },
	{ "time", __NR_time },                   { "__vdso_time", __NR_time },
	{ "clock_getres", __NR_clock_getres },   { "__vdso_clock_getres", __NR_clock_getres },
	{ "getcpu", __NR_getcpu },               { "__vdso_getcpu", __NR_getcpu },
};

static int wrapped_nr(const char *name)
{
	for (size_t i = 0; i < sizeof wrapped / sizeof wrapped[0]; i++)
		if (zv_strcmp(name, wrapped[i].name) == 0)
			return wrapped[i].nr;
	return -1;
}

/* The image's size in memory: the file as mapped, section headers included,
 * rounded up to a page. 0 if the headers make no sense. */
static uint64_t image_size(const Elf64_Ehdr *eh)
{
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_shoff > 65536 || eh->e_shnum > 64 || eh->e_phoff > 4096 || eh->e_phnum > 16)
		return 0;
	uint64_t end = eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr);
	const Elf64_Phdr *ph = (const void *)((const char *)eh + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_vaddr != 0 && i == 0)
				return 0; /* the host's vDSO is linked at 0 */
			if (ph[i].p_vaddr + ph[i].p_memsz > end)
				end = ph[i].p_vaddr + ph[i].p_memsz;
		}
	return (end + 4095) & ~4095UL;
}

uint64_t zv_vdso_image_size(const void *ehdr)
{
	return image_size(ehdr);
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Points the wrapped symbols of the vDSO at base to stubs. Returns 0, or
 * -ENOEXEC when the image is not as expected (the guest then calls the
 * host's code directly, which the kernel does not see). With entries, the
 * functions' own first bytes become a jump to their stub too (a restored
 * copy, whose callers cached their addresses: zv_vdso_relocated). */
static int wrap_vdso(struct zv_thread *t, uint8_t *base, int entries)
{
	const Elf64_Ehdr *eh = (const void *)base;
	uint64_t size = image_size(eh);
	if (!size || size > 65536 || size - (eh->e_shoff + eh->e_shnum * sizeof(Elf64_Shdr)) < ZV_VDSO_STUB_AREA)
		return -ENOEXEC;
	uint8_t *stubs = base + size - ZV_VDSO_STUB_AREA;
	if (!all_zero(stubs, ZV_VDSO_STUB_AREA))
		return -ENOEXEC;
	const Elf64_Shdr *sh = (const void *)(base + eh->e_shoff);
	const Elf64_Shdr *dynsym = NULL;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_DYNSYM)
			dynsym = &sh[i];
	if (!dynsym || dynsym->sh_entsize != sizeof(Elf64_Sym) || dynsym->sh_link >= eh->e_shnum ||
	    dynsym->sh_offset + dynsym->sh_size > size)
		return -ENOEXEC;
	const Elf64_Shdr *strtab = &sh[dynsym->sh_link];
	if (strtab->sh_offset + strtab->sh_size > size || !strtab->sh_size ||
	    base[strtab->sh_offset + strtab->sh_size - 1] != 0)
		return -ENOEXEC;
	Elf64_Sym *sym = (Elf64_Sym *)(base + dynsym->sh_offset);
	size_t nsym = dynsym->sh_size / sizeof(Elf64_Sym);
	const char *names = (const char *)base + strtab->sh_offset;

	if (zv_mprotect(base, size, PROT_READ | PROT_WRITE) < 0)
		return -ENOEXEC;
	/* One stub per system call: the alias and the __vdso_ name share it. */
	int stub_nr[ZV_VDSO_STUB_AREA / STUB_SIZE];
	int nstubs = 0;
	for (size_t i = 0; i < nsym; i++) {
		if (sym[i].st_name >= strtab->sh_size || ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC ||
		    sym[i].st_shndx == SHN_UNDEF)
			continue;
		int nr = wrapped_nr(names + sym[i].st_name);
		if (nr < 0)
			continue;
		int k = 0;
		while (k < nstubs && stub_nr[k] != nr)
			k++;
		if (k == nstubs) {
			if (nstubs == ZV_VDSO_STUB_AREA / STUB_SIZE)
				continue;
			uint8_t *s = stubs + k * STUB_SIZE;
			s[0] = 0xb8; /* mov $nr, %eax */
			memcpy(s + 1, &nr, 4);
			s[5] = 0x0f; /* syscall */
			s[6] = 0x05;
			s[7] = 0xc3; /* ret */
			stub_nr[nstubs++] = nr;
		}
		uint8_t *fn = base + sym[i].st_value, *stub = stubs + k * STUB_SIZE;
		if (entries && sym[i].st_value + 5 <= size && fn != stub) {
			int32_t rel = (int32_t)(stub - (fn + 5));
			fn[0] = 0xe9; /* jmp rel32 */
			memcpy(fn + 1, &rel, 4);
		}
		sym[i].st_value = (uint64_t)(stub - base);
		sym[i].st_size = STUB_SIZE;
	}
	if (zv_plat->vdso_stubs) /* their sites, while the vDSO is writable */
		zv_plat->vdso_stubs(t, stubs, nstubs, STUB_SIZE);
	zv_mprotect(base, size, PROT_READ | PROT_EXEC);
	zv_proc.vdso_stubs = (uint64_t)stubs;
	return 0;
}

/* The kernel's own use of the host's vDSO: its clock reads cost a function
 * call instead of a host system call (~300 ns here). Its code may fall back
 * to a `syscall` outside kernel text, so SUD's selector lets calls through
 * meanwhile; not on the seccomp platform, whose filter cannot. The guest
 * may unmap or remap the vDSO (and vvar): then the kernel stops using it. */
static int vdso_extent(const struct zv_map *m, void *arg)
{
	if (!zv_strcmp(m->name, "[vdso]") || zv_startswith(m->name, "[vvar")) {
		if (!zv_proc.host_vdso.lo || m->lo < zv_proc.host_vdso.lo)
			zv_proc.host_vdso.lo = m->lo;
		if (m->hi > zv_proc.host_vdso.hi)
			zv_proc.host_vdso.hi = m->hi;
	}
	return 0;
}

static void *host_function(uint8_t *base, const char *name)
{
	const Elf64_Ehdr *eh = (const void *)base;
	uint64_t size = image_size(eh);
	if (!size || size > 65536)
		return NULL;
	const Elf64_Shdr *sh = (const void *)(base + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_offset + sh[i].sh_size > size)
			continue;
		const Elf64_Shdr *str = &sh[sh[i].sh_link];
		if (str->sh_offset + str->sh_size > size || !str->sh_size || base[str->sh_offset + str->sh_size - 1])
			return NULL;
		const Elf64_Sym *sym = (const void *)(base + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++)
			if (sym[k].st_name < str->sh_size && ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC &&
			    sym[k].st_shndx != SHN_UNDEF && sym[k].st_value < size &&
			    !zv_strcmp((const char *)base + str->sh_offset + sym[k].st_name, name))
				return base + sym[k].st_value;
	}
	return NULL;
}

static void find_host_functions(uint8_t *base)
{
	zv_proc.host_vdso.ok = 0;
	zv_proc.host_vdso.lo = zv_proc.host_vdso.hi = 0;
	if (!zv_plat->host_vdso)
		return;
	zv_proc.host_vdso.clock_gettime = host_function(base, "__vdso_clock_gettime");
	zv_proc.host_vdso.gettimeofday = host_function(base, "__vdso_gettimeofday");
	zv_proc.host_vdso.time = host_function(base, "__vdso_time");
	if (!zv_proc.host_vdso.clock_gettime || !zv_proc.host_vdso.gettimeofday || !zv_proc.host_vdso.time)
		return;
	zv_maps_each(vdso_extent, NULL);
	zv_proc.host_vdso.ok = zv_proc.host_vdso.lo < zv_proc.host_vdso.hi;
}

/* The host's code the guest may run, for the platform (vdso_code): its
 * functions from .dynsym, aliases once, in address order. */
static void cover_host_code(struct zv_thread *t, uint8_t *base)
{
	const Elf64_Ehdr *eh = (const void *)base;
	uint64_t size = image_size(eh), fn[16][2];
	int n = 0;
	const Elf64_Shdr *sh = (const void *)(base + eh->e_shoff);
	for (int i = 0; size && size <= 65536 && i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_offset + sh[i].sh_size > size)
			continue;
		const Elf64_Sym *sym = (const void *)(base + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); k++) {
			uint64_t v = sym[k].st_value, l = sym[k].st_size;
			if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_shndx == SHN_UNDEF || !l ||
			    v + l > size || (zv_proc.vdso_stubs && v >= size - ZV_VDSO_STUB_AREA))
				continue; /* zvisor's own stubs have their windows already */
			int j = n;
			while (j > 0 && fn[j - 1][0] > v)
				j--;
			if ((j > 0 && fn[j - 1][0] == v) || n == 16)
				continue;
			for (int m = n; m > j; m--) {
				fn[m][0] = fn[m - 1][0];
				fn[m][1] = fn[m - 1][1];
			}
			fn[j][0] = v;
			fn[j][1] = l;
			n++;
		}
	}
	if (!size || size > 65536) {
		zv_plat->vdso_code(t, base, 4096, fn, 0, 0); /* not understood: not covered */
		return;
	}
	int rewrite = !zv_proc.host_vdso.ok && zv_mprotect(base, size, PROT_READ | PROT_WRITE) == 0;
	zv_plat->vdso_code(t, base, size, fn, n, rewrite);
	if (rewrite)
		zv_mprotect(base, size, PROT_READ | PROT_EXEC);
}

static uint8_t *guest_vdso; /* the vDSO the guest is shown, NULL if none */
static int covered;         /* its host code has its stubs (cover_host_code ran) */
static uint64_t *start_auxv; /* the host's auxv while zvisor's first image loads */

/* [vvar*] and [vdso]: each a mapping of its own, in address order. */
struct parts { int n; uint64_t r[4][2]; };
static int vdso_part(const struct zv_map *m, void *arg)
{
	struct parts *p = arg;
	if ((!zv_strcmp(m->name, "[vdso]") || zv_startswith(m->name, "[vvar")) && p->n < 4) {
		p->r[p->n][0] = m->lo;
		p->r[p->n++][1] = m->hi;
	}
	return 0;
}

/* What an exec made in this process keeps of the vDSO (kernel/inexec.c):
 * its pages, found once per process tree. The [vvar*] mappings below it
 * are the kernel's, the same in every image, so carried across execve
 * (V=): their sizes, low to high, and their sum. */
static void note_extent(uint64_t base)
{
	uint64_t size = image_size((const Elf64_Ehdr *)base);
	if (!size)
		return;
	if (!zv_proc.vvar_size) {
		struct parts p = { 0 };
		uint64_t lo = base;
		int k = 0;
		zv_maps_each(vdso_part, &p);
		for (int i = 0; i < p.n; i++) {
			if (p.r[i][1] > base)
				continue;
			lo = p.r[i][0] < lo ? p.r[i][0] : lo;
			if (k < ZV_VVAR_PARTS)
				zv_proc.vvar_part[k++] = p.r[i][1] - p.r[i][0];
		}
		if (lo == base)
			return; /* no [vvar]: not a layout the exec knows */
		zv_proc.vvar_size = base - lo;
		uint64_t sum = 0;
		for (int i = 0; i < k; i++)
			sum += zv_proc.vvar_part[i];
		zv_proc.vvar_parts = sum == zv_proc.vvar_size ? k : 0; /* (one run of pages) */
	}
	zv_proc.vdso_lo = base - zv_proc.vvar_size;
	zv_proc.vdso_hi = base + size;
}

static int unmap_vdso(const struct zv_map *m, void *arg)
{
	if (!zv_strcmp(m->name, "[vdso]") || !zv_strcmp(m->name, "[vvar]") || !zv_strcmp(m->name, "[vvar_vclock]"))
		zv_munmap((void *)m->lo, m->hi - m->lo);
	return 0;
}

int zv_vdso_wanted(void)
{
	return zv_proc.vdso_mode == ZV_VDSO_KERNEL ||
	       (zv_proc.vdso_mode == ZV_VDSO_AUTO &&
		((zv_proc.count_fd >= 0 && !zv_proc.trace.summary) || zv_proc.vt.on || zv_proc.trace.vdso_shown));
}

void zv_vdso_setup(struct zv_thread *t, uint64_t *auxv)
{
	uint64_t *ehdr = NULL;
	for (uint64_t *a = auxv; a[0] != AT_NULL; a += 2)
		if (a[0] == AT_SYSINFO_EHDR)
			ehdr = a;
	zv_proc.vdso_stubs = 0;
	if (zv_proc.vdso_mode == ZV_VDSO_NONE) {
		zv_maps_each(unmap_vdso, NULL);
		if (ehdr) /* drop the pair: the rest moves down one */
			for (uint64_t *a = ehdr;; a += 2) {
				a[0] = a[2];
				a[1] = a[3];
				if (a[0] == AT_NULL)
					break;
			}
		return;
	}
	zv_proc.host_vdso.ok = 0;
	if (ehdr && ehdr[1] && zv_proc.exec_mode == ZV_EXEC_INPROCESS)
		note_extent(ehdr[1]);
	if (ehdr && ehdr[1] && (zv_vdso_wanted() || zv_proc.vt.on || zv_proc.trace.on || zv_proc.trace.summary))
		find_host_functions((uint8_t *)ehdr[1]);
	if (ehdr && ehdr[1] && zv_vdso_wanted())
		wrap_vdso(t, (uint8_t *)ehdr[1], 0);
	guest_vdso = ehdr ? (uint8_t *)ehdr[1] : NULL;
	start_auxv = auxv;
}

static void rebase_auxv(uint64_t *a, uint64_t from, uint64_t to)
{
	for (; a && a[0] != AT_NULL; a += 2)
		if (a[0] == AT_SYSINFO_EHDR && a[1] == from)
			a[1] = to;
}

void zv_vdso_make_room(uint64_t size)
{
	size = (size + 4095) & ~4095UL;
	uint64_t base = (uint64_t)guest_vdso, vsize = base ? image_size((const void *)base) : 0;
	/* only the host's vDSO as it left it, nothing of it written or
	 * pointed at yet but the kernel's own clock functions */
	if (!vsize || !zv_proc.mmap_top || base + vsize != zv_proc.mmap_top || covered || zv_proc.vdso_stubs)
		return;
	struct parts p = { 0 };
	if (zv_proc.vvar_parts && base == zv_proc.vdso_lo + zv_proc.vvar_size) {
		/* the parts carried across execve (note_extent): no maps file to read */
		uint64_t at = zv_proc.vdso_lo;
		for (int i = 0; i < zv_proc.vvar_parts; i++) {
			p.r[p.n][0] = at;
			at += zv_proc.vvar_part[i];
			p.r[p.n++][1] = at;
		}
		p.r[p.n][0] = base;
		p.r[p.n++][1] = base + vsize;
	} else {
		zv_maps_each(vdso_part, &p);
	}
	uint64_t lo = base, hi = base + vsize, total = 0;
	for (int i = 0; i < p.n; i++) {
		lo = p.r[i][0] < lo ? p.r[i][0] : lo;
		total += p.r[i][1] - p.r[i][0];
	}
	/* one run of pages ending at the vDSO's end; the move does not overlap it */
	if (p.n < 1 || total != hi - lo || lo < size || size < hi - lo)
		return;
	/* the place below must be free (the source does not overlap it) */
	void *hold = zv_mmap((void *)(lo - size), hi - lo, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if ((uint64_t)hold != lo - size) {
		if (!zv_is_err((long)hold))
			zv_munmap(hold, hi - lo);
		return;
	}
	for (int i = 0; i < p.n; i++) {
		uint64_t l = p.r[i][1] - p.r[i][0];
		long r = zv_sys5(__NR_mremap, p.r[i][0], l, l, MREMAP_MAYMOVE | MREMAP_FIXED, p.r[i][0] - size);
		if (r != (long)(p.r[i][0] - size))
			zv_die(126, "cannot move the vDSO: %s", zv_strerror((int)-r));
	}
	uint64_t nb = base - size;
	guest_vdso = (uint8_t *)nb;
	rebase_auxv(start_auxv, base, nb);
	rebase_auxv(zv_proc.host_auxv, base, nb);
	if (zv_proc.vdso_hi) {
		zv_proc.vdso_lo -= size;
		zv_proc.vdso_hi -= size;
	}
	if (zv_proc.host_vdso.lo) {
		zv_proc.host_vdso.lo -= size;
		zv_proc.host_vdso.hi -= size;
	}
	if (zv_proc.host_vdso.clock_gettime) {
		zv_proc.host_vdso.clock_gettime = (void *)((uint64_t)zv_proc.host_vdso.clock_gettime - size);
		zv_proc.host_vdso.gettimeofday = (void *)((uint64_t)zv_proc.host_vdso.gettimeofday - size);
		zv_proc.host_vdso.time = (void *)((uint64_t)zv_proc.host_vdso.time - size);
	}
}

/* Once the program and its interpreter are mapped: the host's vDSO code is
 * made into stubs only when the platform wants it (stubs: if SUD may still
 * go off, intercept/sudoff.c), since it costs a region and two mprotects
 * per exec. */
void zv_vdso_cover(struct zv_thread *t)
{
	start_auxv = NULL; /* the guest's stack from now on */
	if (guest_vdso && zv_plat->vdso_code && (!zv_plat->vdso_code_wanted || zv_plat->vdso_code_wanted()) &&
	    !covered) {
		covered = 1; /* an image exec'd in this process finds it done */
		cover_host_code(t, guest_vdso);
	}
}

/* A restored process whose vDSO was another kernel's, or whose clocks
 * another boot's (cr/restore.c): the guest keeps the copy it saw at base,
 * as memory, without the data pages its code reads, so every time function
 * (whose address libcs and Go cached) jumps into the kernel, which reads
 * the host's vDSO at host (t: a thread block for the platform's rewriting). */
void zv_vdso_relocated(struct zv_thread *t, uint8_t *base, uint8_t *host)
{
	if (!zv_proc.vdso_stubs && wrap_vdso(t, base, 1) < 0)
		zv_die(1, "restore: the saved vDSO cannot be redirected");
	zv_proc.host_vdso.lo = zv_proc.host_vdso.hi = 0;
	zv_proc.host_vdso.ok = 0;
	if (host)
		find_host_functions(host);
}
