/* Function bounds of a Go binary from Go's own function table, for the
 * stubs platform's windows (intercept/loadsites.c) when the binary has no
 * symbol table (`go build -ldflags=-s`) and, being Go, no unwind table.
 *
 * The table is the pclntab (Go 1.18's magic 0xfffffff0, 1.20 and later
 * 0xfffffff1): a header (magic, 0, 0, minLC 1, pointer size 8, nfunc, ...,
 * pclnOffset), then at pclnOffset nfunc + 1 pairs (entry offset, data
 * offset) of 32-bit words, sorted by entry, the last entry being the end of
 * the last function. Entry offsets are relative to the module's text start,
 * which the header no longer holds (it would need a relocation): it is the
 * `text` field of the module's moduledata, the runtime's static record of
 * the module, whose first field points at the header and whose next slices
 * point into it. Function i is [text + entry[i], text + entry[i + 1]):
 * every text symbol of the Go linker has an entry (assembly functions
 * included), and cross-function jumps of Go code and Go assembly go to
 * symbols, i.e. function starts.
 *
 * The header is found through the .gopclntab section, or, when the section
 * headers are absent or say nothing, by its magic in the file's segments.
 * Everything read is checked against the file and its segments: a damaged
 * table gives no functions (and the program's calls take the SIGSYS
 * path), never a read outside the file. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/symfuncs.h"
#include <elf.h>

#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u
#define HEADER_SIZE 72 /* magic .. pclnOffset */
#define MAX_FUNCS (1L << 22)
#define MAX_SECTIONS 256

/* The file: every read is checked against its size. */
struct gofile {
	const uint8_t *f;
	uint64_t size;
	const Elf64_Phdr *ph;
	int nph;
};

static uint64_t u64(const uint8_t *p) { uint64_t v; __builtin_memcpy(&v, p, 8); return v; }
static uint32_t u32(const uint8_t *p) { uint32_t v; __builtin_memcpy(&v, p, 4); return v; }

/* The file bytes [off, off + len), or NULL outside the file. */
static const uint8_t *bytes(const struct gofile *g, uint64_t off, uint64_t len)
{
	return off <= g->size && len <= g->size - off ? g->f + off : NULL;
}

/* The file bytes of image addresses [v, v + len), all in one segment's
 * file part (flag: PF_X for code, 0 for any), or NULL. */
static const uint8_t *image(const struct gofile *g, uint64_t v, uint64_t len, uint32_t flag)
{
	for (int i = 0; i < g->nph; i++) {
		const Elf64_Phdr *s = &g->ph[i];
		if (s->p_type != PT_LOAD || (s->p_flags & flag) != flag || v < s->p_vaddr ||
		    v - s->p_vaddr > s->p_filesz || len > s->p_filesz - (v - s->p_vaddr))
			continue;
		return bytes(g, s->p_offset + (v - s->p_vaddr), len);
	}
	return NULL;
}

/* A pclntab header at h (room bytes to the end of its segment or section):
 * nfunc and the offset of the function table, 0 if it is not one. */
static long header(const uint8_t *h, uint64_t room, uint64_t *pcln)
{
	if (room < HEADER_SIZE || (u32(h) != GO_MAGIC_118 && u32(h) != GO_MAGIC_120) || h[4] || h[5] || h[6] != 1 ||
	    h[7] != 8)
		return 0;
	uint64_t nfunc = u64(h + 8), off = u64(h + 64);
	if (nfunc == 0 || nfunc > MAX_FUNCS || off < HEADER_SIZE || off > room || (nfunc + 1) * 8 > room - off)
		return 0;
	*pcln = off;
	return (long)nfunc;
}

/* The module's text start, from the moduledata that points at the header
 * at image address hv (nfunc functions, table at hv + pcln, entries ftab):
 * its slices must point into the header's table and its bounds must agree
 * with the first and last entries. 0 if none is found. */
static uint64_t module_text(const struct gofile *g, uint64_t hv, const uint8_t *h, long nfunc, uint64_t pcln,
			    const uint8_t *ftab)
{
	for (int i = 0; i < g->nph; i++) {
		const Elf64_Phdr *s = &g->ph[i];
		if (s->p_type != PT_LOAD || !(s->p_flags & PF_W))
			continue;
		const uint8_t *seg = bytes(g, s->p_offset, s->p_filesz);
		if (!seg || s->p_filesz < 192 || (s->p_vaddr & 7) != (s->p_offset & 7))
			continue;
		for (uint64_t k = (8 - (s->p_vaddr & 7)) & 7; k <= s->p_filesz - 192; k += 8) {
			const uint8_t *m = seg + k;
			if (u64(m) != hv)
				continue;
			/* pcHeader, funcnametab, cutab, filetab, pctab, pclntable,
			 * ftab (pointer, length, capacity), findfunctab, minpc,
			 * maxpc, text, etext */
			uint64_t text = u64(m + 176), minpc = u64(m + 160), maxpc = u64(m + 168);
			if (u64(m + 8) != hv + u64(h + 32) || u64(m + 104) != hv + pcln || u64(m + 128) != hv + pcln ||
			    u64(m + 136) != (uint64_t)nfunc + 1 || minpc != text + u32(ftab) ||
			    maxpc != text + u32(ftab + 8 * nfunc) || maxpc > u64(m + 184) || minpc >= maxpc ||
			    !image(g, minpc, maxpc - minpc, PF_X))
				continue;
			return text;
		}
	}
	return 0;
}

/* The .gopclntab section's file offset and size from the section headers,
 * 0 when there is none; *headers: whether there are section headers. */
static uint64_t section(const struct gofile *g, const Elf64_Ehdr *eh, uint64_t *size, int *headers)
{
	*headers = 0;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 || eh->e_shnum > MAX_SECTIONS ||
	    eh->e_shstrndx >= eh->e_shnum)
		return 0;
	const Elf64_Shdr *sh = (const void *)bytes(g, eh->e_shoff, eh->e_shnum * sizeof(Elf64_Shdr));
	if (!sh || (eh->e_shoff & 7))
		return 0;
	*headers = 1;
	const Elf64_Shdr *names = &sh[eh->e_shstrndx];
	static const char want[] = ".gopclntab";
	for (int i = 0; i < eh->e_shnum; i++) {
		const uint8_t *name = sh[i].sh_name < names->sh_size
			? bytes(g, names->sh_offset + sh[i].sh_name, sizeof want) : NULL;
		if (name && sh[i].sh_name + sizeof want <= names->sh_size && !memcmp(name, want, sizeof want) &&
		    bytes(g, sh[i].sh_offset, sh[i].sh_size)) {
			*size = sh[i].sh_size;
			return sh[i].sh_offset;
		}
	}
	return 0;
}

/* The image address of file offset off, in a segment of at least room
 * bytes from there (*room: what the segment's file part holds past off). */
static uint64_t address_of(const struct gofile *g, uint64_t off, uint64_t *room)
{
	for (int i = 0; i < g->nph; i++) {
		const Elf64_Phdr *s = &g->ph[i];
		if (s->p_type == PT_LOAD && off >= s->p_offset && off - s->p_offset < s->p_filesz) {
			*room = s->p_filesz - (off - s->p_offset);
			return s->p_vaddr + (off - s->p_offset);
		}
	}
	return 0;
}

/* A module whose header is at file offset off (at most room bytes
 * long): its function count, function table and text start, or 0. */
struct module {
	long nfunc;
	const uint8_t *ftab;
	uint64_t text;
};

static int try_header(const struct gofile *g, uint64_t off, uint64_t room, struct module *mod)
{
	uint64_t segroom, hv = address_of(g, off, &segroom), pcln;
	if (!hv)
		return 0;
	if (segroom < room)
		room = segroom;
	const uint8_t *h = bytes(g, off, room);
	long nfunc = h ? header(h, room, &pcln) : 0;
	if (!nfunc)
		return 0;
	mod->nfunc = nfunc;
	mod->ftab = h + pcln;
	mod->text = module_text(g, hv, h, nfunc, pcln, mod->ftab);
	return mod->text != 0;
}

/* The module's functions as (start, size) pairs into out; their count, or
 * -1 if the table is damaged (not sorted) or beyond 32-bit addresses. */
static long functions(const struct module *mod, int32_t *out)
{
	long n = 0;
	for (long i = 0; i < mod->nfunc; i++) {
		uint64_t a = u32(mod->ftab + 8 * i), b = u32(mod->ftab + 8 * (i + 1));
		if (b < a || mod->text + b > 0x7fffffffUL)
			return -1;
		if (a == b)
			continue;
		out[2 * n] = (int32_t)(mod->text + a);
		out[2 * n + 1] = (int32_t)(b - a);
		n++;
	}
	return n;
}

long zv_gopclntab_functions(const uint8_t *file, uint64_t size, const Elf64_Ehdr *eh, const Elf64_Phdr *ph,
			    int nph, void **mem, size_t *msize, int32_t **out)
{
	struct gofile g = { file, size, ph, nph };
	struct module mod;
	if (!file)
		return -1;
	int headers;
	uint64_t ssize = 0, soff = section(&g, eh, &ssize, &headers);
	int found = soff && try_header(&g, soff, ssize, &mod);
	/* No section headers: the header by its magic, 8-aligned in any
	 * segment (a binary with headers but no .gopclntab is not Go's). */
	for (int i = 0; !found && !headers && i < nph; i++) {
		const Elf64_Phdr *s = &ph[i];
		const uint8_t *seg = s->p_type == PT_LOAD ? bytes(&g, s->p_offset, s->p_filesz) : NULL;
		for (uint64_t k = (8 - (s->p_offset & 7)) & 7; seg && !found && k + HEADER_SIZE <= s->p_filesz; k += 8) {
			uint32_t w = u32(seg + k);
			if ((w == GO_MAGIC_120 || w == GO_MAGIC_118) && u32(seg + k + 4) == 0x08010000u)
				found = try_header(&g, s->p_offset + k, s->p_filesz - k, &mod);
		}
	}
	if (!found)
		return -1;
	size_t msz = ((size_t)mod.nfunc * 8 + 4095) & ~4095UL;
	int32_t *pairs = zv_kmap(msz, 4096, -1);
	if (zv_is_err((long)pairs))
		return -1;
	long n = functions(&mod, pairs);
	if (n <= 0) {
		zv_kunmap(pairs, msz);
		return -1;
	}
	*mem = pairs;
	*msize = msz;
	*out = pairs;
	return n;
}
