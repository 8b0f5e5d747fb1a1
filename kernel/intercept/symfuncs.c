/* Function bounds from an ELF file's symbol table, for code that has no
 * unwind entry: musl's libc.a (built without unwind tables), Go binaries
 * (no .eh_frame at all) and hand-written assembly with .type/.size. Only
 * the stubs platform uses them (intercept/loadsites.c): its windows need
 * bounds and branch targets, not the frame facts the zpoline red-zone check
 * takes from an FDE.
 *
 * A function symbol is STT_FUNC. A split function's cold part
 * ("name.cold") is left out: its hot part jumps into its middle, which a
 * decode of the cold part alone cannot see. A function of size 0 (musl's
 * assembly, written without .size: __clone, __set_thread_area) extends to
 * the next symbol of any type or the end of its section, whichever comes
 * first: code that other code enters has a symbol (musl's __cp_begin,
 * __cp_end), and the decode of the range must succeed as for any other. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/symfuncs.h"
#include <elf.h>

#define MAX_SECTIONS 256
#define MAX_SYMTAB (64UL << 20) /* bytes of symbols or names read at most */

static long pread_all(int fd, void *buf, uint64_t len, uint64_t off)
{
	return zv_sys4(__NR_pread64, fd, buf, len, off) == (long)len ? 0 : -1;
}

static int is_cold(const char *names, uint64_t nsize, uint32_t name)
{
	if (name >= nsize)
		return 1;
	uint64_t n = 0;
	while (name + n < nsize && names[name + n])
		n++;
	return n >= 5 && !memcmp(names + name + n - 5, ".cold", 5);
}

/* The size of a function of size 0 at v in section shndx: up to the next
 * symbol (bounds: sorted (address, section) pairs) or the section's end;
 * 0 if v is not in an executable section. */
static int32_t size_to_next(const Elf64_Shdr *sh, int nsh, int shndx, int32_t v, const int32_t *bounds, long nb)
{
	if (shndx <= 0 || shndx >= nsh || !(sh[shndx].sh_flags & SHF_EXECINSTR) || (uint64_t)v < sh[shndx].sh_addr ||
	    (uint64_t)v >= sh[shndx].sh_addr + sh[shndx].sh_size)
		return 0;
	uint64_t end = sh[shndx].sh_addr + sh[shndx].sh_size;
	long lo = 0, hi = nb; /* the first bound above v */
	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;
		if (bounds[2 * mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nb && (uint64_t)bounds[2 * lo] < end)
		end = (uint64_t)bounds[2 * lo];
	return end - (uint64_t)v > 0x7fffffffUL ? 0 : (int32_t)(end - (uint64_t)v);
}

long zv_symtab_functions(int fd, const Elf64_Ehdr *eh, int dynsym_ok, void **mem, size_t *msize, int32_t **out)
{
	Elf64_Shdr sh[MAX_SECTIONS];
	if (eh->e_shnum == 0 || eh->e_shnum > MAX_SECTIONS || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    pread_all(fd, sh, eh->e_shnum * sizeof(Elf64_Shdr), eh->e_shoff) < 0)
		return -1;
	const Elf64_Shdr *sym = NULL;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !sym && dynsym_ok))
			sym = &sh[i];
	if (!sym || sym->sh_link >= eh->e_shnum || sym->sh_size > MAX_SYMTAB || sh[sym->sh_link].sh_size > MAX_SYMTAB ||
	    sym->sh_entsize != sizeof(Elf64_Sym))
		return -1;
	const Elf64_Shdr *str = &sh[sym->sh_link];
	uint64_t nsyms = sym->sh_size / sizeof(Elf64_Sym);
	/* symbols, then names, then the pairs (at most one per symbol), then
	 * the symbols' addresses as bounds (and a pair per section's end) */
	size_t size = (sym->sh_size + str->sh_size + 8 + nsyms * 8 + (nsyms + MAX_SECTIONS) * 8 + 4095) & ~4095UL;
	uint8_t *m = zv_kmap(size, 4096, -1);
	if (zv_is_err((long)m))
		return -1;
	const Elf64_Sym *s = (const void *)m;
	const char *names = (const char *)m + sym->sh_size;
	int32_t *pairs = (int32_t *)(m + ((sym->sh_size + str->sh_size + 7) & ~7UL));
	if (pread_all(fd, m, sym->sh_size, sym->sh_offset) < 0 ||
	    pread_all(fd, (void *)names, str->sh_size, str->sh_offset) < 0) {
		zv_kunmap(m, size);
		return -1;
	}
	long n = 0;
	int32_t *bounds = pairs + 2 * nsyms; /* (address, section) pairs */
	long nb = 0;
	for (uint64_t i = 0; i < nsyms; i++) {
		int type = ELF64_ST_TYPE(s[i].st_info);
		if (s[i].st_shndx == SHN_UNDEF || s[i].st_shndx >= eh->e_shnum || s[i].st_value > 0x7fffffffUL ||
		    type == STT_SECTION || type == STT_FILE)
			continue;
		bounds[2 * nb] = (int32_t)s[i].st_value;
		bounds[2 * nb + 1] = s[i].st_shndx;
		nb++;
		if (type != STT_FUNC || s[i].st_size > 0x7fffffffUL - s[i].st_value ||
		    is_cold(names, str->sh_size, s[i].st_name))
			continue;
		pairs[2 * n] = (int32_t)s[i].st_value;
		pairs[2 * n + 1] = s[i].st_size ? (int32_t)s[i].st_size : -(int32_t)s[i].st_shndx;
		n++;
	}
	zv_sort_pairs(bounds, nb);
	long kept = 0;
	for (long i = 0; i < n; i++) {
		if (pairs[2 * i + 1] < 0 && !(pairs[2 * i + 1] = size_to_next(sh, eh->e_shnum, -pairs[2 * i + 1],
									       pairs[2 * i], bounds, nb)))
			continue;
		pairs[2 * kept] = pairs[2 * i];
		pairs[2 * kept + 1] = pairs[2 * i + 1];
		kept++;
	}
	n = kept;
	zv_sort_pairs(pairs, n);
	*out = pairs;
	*mem = m;
	*msize = size;
	return n;
}

int zv_symtab_function_of(const int32_t *pairs, long n, uint64_t v, uint64_t *start, uint64_t *len, uint64_t *next)
{
	long lo = 0, hi = n - 1, found = -1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if ((uint64_t)pairs[2 * mid] <= v) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	if (found < 0 || v >= (uint64_t)pairs[2 * found] + (uint64_t)pairs[2 * found + 1])
		return 0;
	*start = (uint64_t)pairs[2 * found];
	*len = (uint64_t)pairs[2 * found + 1];
	*next = found + 1 < n ? (uint64_t)pairs[2 * found + 2] : *start + *len;
	return 1;
}

/* Sorts n (start, FDE) pairs by start (heapsort: no recursion, no
 * allocation). */
void zv_sort_pairs(int32_t *v, long n)
{
	for (long end = n, i = n / 2; end > 1;) {
		long root;
		if (i > 0)
			root = --i;
		else {
			end--;
			int32_t a = v[0], b = v[1];
			v[0] = v[2 * end];
			v[1] = v[2 * end + 1];
			v[2 * end] = a;
			v[2 * end + 1] = b;
			root = 0;
		}
		for (long child; (child = 2 * root + 1) < end; root = child) {
			if (child + 1 < end && v[2 * child + 2] > v[2 * child])
				child++;
			if (v[2 * root] >= v[2 * child])
				break;
			int32_t a = v[2 * root], b = v[2 * root + 1];
			v[2 * root] = v[2 * child];
			v[2 * root + 1] = v[2 * child + 1];
			v[2 * child] = a;
			v[2 * child + 1] = b;
		}
	}
}
