/* --rewrite=load: the syscall sites of an ELF image, rewritten when its code
 * is mapped (by zvisor's loader for the executable and the interpreter, by
 * the guest's mmap for every later library), so that its calls never take
 * the SIGSYS path at all.
 *
 * Where the sites are: the image's unwind table (PT_GNU_EH_FRAME, the
 * sorted table that .eh_frame_hdr keeps of every function's start and its
 * FDE; static executables have no such table, so one is built from their
 * .eh_frame section) gives each function's start and length. Each function is decoded
 * from its start to its end (intercept/x86len.c, checked against objdump by
 * tests/test_x86dec.py), so a site is a `syscall` the decoder reached from a
 * real instruction boundary, not two bytes that look like one. Code without
 * an unwind entry (rare: PLT stubs, hand-written assembly without CFI) and
 * images without the table (Go binaries) are left to lazy rewriting.
 *
 * Whether a site is safe without its registers (the red zone, DESIGN 5.1):
 * see zv_site_safe_static. Its premise, that the function copies rsp
 * nowhere, is checked here over the whole function, which must be entered
 * at its start with the standard frame (its FDE changes nothing at the
 * first instruction: not the cold part of a split function, whose hot part
 * this check would not see). Sites that fail stay for the lazy path, which
 * decides with the registers of their first arrival.
 *
 * Everything is read from the file (pread on the mapping's fd), so it does
 * not matter which of the image's segments are mapped yet. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/sites.h"
#include "intercept/x86ops.h"
#include "intercept/stubs.h"
#include "intercept/symfuncs.h"
#include "intercept/gofuncs.h"
#include <asm/stat.h>
#include <linux/mman.h>
#include <elf.h>

#define MAX_PHDRS 32
#define CHUNK (64 * 1024)          /* code scanned for candidates at a time */
#define MAX_FUNCTION (64 * 1024)   /* longer functions are left to lazy rewriting */
#define MAX_GAP 128                /* bytes of padding after a function read with it */
#define MAX_TABLE (1 << 20)        /* bytes of .eh_frame_hdr */
#define MAX_CFI 512                /* bytes of one FDE or CIE */
#define MAX_FUNCTION_SITES 16
#define MAX_SITES 8192             /* rewritten per mapping */

/* DWARF call-frame encodings and instructions used below. */
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_CFA_nop 0x00
#define DW_CFA_advance_loc1 0x02
#define DW_CFA_advance_loc4 0x04
#define DW_CFA_def_cfa 0x0c
#define DW_CFA_offset_rip 0x90 /* DW_CFA_offset of register 16 (rip) */

/* An image being scanned: its file and program headers. */
struct image {
	int fd, nph;
	const uint8_t *file; /* the whole file mapped read-only, or NULL: then pread */
	uint64_t file_size;
	Elf64_Phdr ph[MAX_PHDRS];
	uint64_t cie, cie_ok; /* the last CIE judged, and the verdict */
};

/* Bytes of the image at [vaddr, vaddr + len), read from its file. */
struct buf {
	const uint8_t *p;
	uint64_t len, vaddr;
};

/* Reads up to len bytes of the image at address v into dst (only what the
 * file holds of the segment there); returns the count, <= 0 on failure. */
static long read_at(const struct image *im, uint64_t v, void *dst, uint64_t len, struct buf *b)
{
	for (int i = 0; i < im->nph; i++) {
		const Elf64_Phdr *s = &im->ph[i];
		if (s->p_type != PT_LOAD || v < s->p_vaddr || v - s->p_vaddr >= s->p_filesz)
			continue;
		uint64_t room = s->p_vaddr + s->p_filesz - v, off = v - s->p_vaddr + s->p_offset, n = len < room ? len : room;
		long r;
		if (im->file && off <= im->file_size && n <= im->file_size - off) {
			if (b) { /* no copy: point into the mapped file */
				*b = (struct buf){ im->file + off, n, v };
				return (long)n;
			}
			memcpy(dst, im->file + off, n);
			r = (long)n;
		} else {
			r = zv_sys4(__NR_pread64, im->fd, dst, n, off);
		}
		if (b)
			*b = (struct buf){ dst, r > 0 ? (uint64_t)r : 0, v };
		return r;
	}
	return -1;
}

/* The image's bytes at run address a (the image runs at address +
 * bias), for jump tables: the whole of [a, a + n) or -1. */
struct reader { struct image *im; uint64_t bias; };
static int read_run(void *ctx, uint64_t a, void *dst, uint64_t n)
{
	const struct reader *r = ctx;
	return read_at(r->im, a - r->bias, dst, n, NULL) == (long)n ? 0 : -1;
}

/* The bytes at image address v, n of them, or NULL outside b. */
static const uint8_t *at(const struct buf *b, uint64_t v, uint64_t n)
{
	if (v < b->vaddr || v - b->vaddr > b->len || n > b->len - (v - b->vaddr))
		return NULL;
	return b->p + (v - b->vaddr);
}

static int32_t s32(const uint8_t *p) { return (int32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }

static uint64_t uleb(const uint8_t **pp, const uint8_t *end)
{
	uint64_t v = 0;
	for (int shift = 0; *pp < end && shift < 64; shift += 7) {
		uint8_t b = *(*pp)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	*pp = end + 1; /* malformed: callers see p > end */
	return 0;
}

/* The size of a value in call-frame encoding enc, 0 if not handled. */
static int encoded_size(int enc)
{
	switch (enc & 0x0f) {
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x00: case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

/* Whether the CIE at image address cie is the standard x86-64 one: code
 * alignment 1, data alignment -8, return address in rip, augmentation "zR"
 * with 4-byte pc-relative FDE addresses (a personality routine and LSDA,
 * "zPLR", may come with it), and initial instructions that say only
 * "CFA = rsp + 8, return address at CFA - 8": a function entered by a
 * call. ("S", a signal frame, is not.) */
static int standard_cie(const struct buf *eh, uint64_t cie)
{
	const uint8_t *p = at(eh, cie, 8);
	if (!p)
		return 0;
	uint32_t length = (uint32_t)s32(p);
	if (length < 8 || !at(eh, cie + 4, length) || s32(p + 4) != 0)
		return 0;
	const uint8_t *end = p + 4 + length;
	p += 8;
	int version = *p++;
	if (version != 1 && version != 3)
		return 0;
	const uint8_t *aug = p;
	while (p < end && *p)
		p++;
	if (p++ >= end || aug[0] != 'z')
		return 0;
	if (uleb(&p, end) != 1 || p >= end || *p++ != 0x78) /* code alignment 1, data alignment -8 */
		return 0;
	uint64_t ra = version == 1 ? (p < end ? *p++ : 0) : uleb(&p, end);
	uint64_t auglen = uleb(&p, end);
	if (ra != 16 || p > end || auglen > (uint64_t)(end - p))
		return 0;
	const uint8_t *data = p, *data_end = p + auglen;
	int r_ok = 0;
	for (const uint8_t *c = aug + 1; *c; c++) {
		if (data >= data_end)
			return 0;
		int enc = *data++;
		if (*c == 'P') {
			int n = encoded_size(enc);
			if (!n || n > data_end - data)
				return 0;
			data += n;
		} else if (*c == 'R') {
			r_ok = enc == (DW_EH_PE_pcrel | DW_EH_PE_sdata4);
		} else if (*c != 'L') {
			return 0;
		}
	}
	if (!r_ok)
		return 0;
	p = data_end;
	static const uint8_t entry[] = { DW_CFA_def_cfa, 7, 8, DW_CFA_offset_rip, 1 };
	for (size_t i = 0; i < sizeof entry; i++)
		if (p >= end || *p++ != entry[i])
			return 0;
	while (p < end)
		if (*p++ != DW_CFA_nop)
			return 0;
	return 1;
}

/* Whether the CIE at image address cie is standard, read from the file
 * (the image's few CIEs: the last verdict is kept). */
static int cie_is_standard(struct image *im, uint64_t cie)
{
	if (cie != im->cie) {
		uint8_t raw[MAX_CFI];
		struct buf b;
		im->cie = cie;
		im->cie_ok = read_at(im, cie, raw, sizeof raw, &b) > 0 && standard_cie(&b, cie);
	}
	return (int)im->cie_ok;
}

/* The length of the function that starts at start, whose FDE is at image
 * address fde, if that FDE describes a whole function entered at its start
 * with the standard frame; 0 otherwise. */
static uint64_t function_length(struct image *im, uint64_t fde, uint64_t start)
{
	uint8_t raw[MAX_CFI];
	struct buf frame, *eh = &frame;
	if (read_at(im, fde, raw, sizeof raw, eh) <= 0)
		return 0;
	const uint8_t *p = at(eh, fde, 16);
	if (!p)
		return 0;
	uint32_t length = (uint32_t)s32(p);
	if (length < 12 || length == 0xffffffffu || !at(eh, fde + 4, length))
		return 0;
	const uint8_t *end = p + 4 + length;
	uint64_t cie = fde + 4 - (uint32_t)s32(p + 4);
	if (!cie_is_standard(im, cie))
		return 0;
	/* pc_begin: pcrel sdata4, the same as the table's */
	if (fde + 8 + (int64_t)s32(p + 8) != start)
		return 0;
	uint64_t range = (uint32_t)s32(p + 12);
	p += 16;
	uint64_t auglen = uleb(&p, end);
	if (p > end || auglen > (uint64_t)(end - p))
		return 0;
	p += auglen;
	/* Nothing may change the frame before the first instruction runs. */
	while (p < end) {
		uint8_t op = *p++;
		if (op == DW_CFA_nop)
			continue;
		if ((op & 0xc0) == 0x40 || (op >= DW_CFA_advance_loc1 && op <= DW_CFA_advance_loc4))
			break;
		return 0;
	}
	return range;
}

/* Decodes the function [code, code + len), which runs at address at_addr,
 * and adds to out[] its sites that zv_site_safe_static passes, if it never
 * copies rsp (the premise of that check) and decodes cleanly to its end. */
static int scan_function(const uint8_t *code, uint64_t len, uint64_t at_addr, uint64_t *out, int room)
{
	uint64_t sites[MAX_FUNCTION_SITES];
	int n = 0, kept = 0;
	for (uint64_t off = 0; off < len;) {
		struct zv_x86_insn in;
		int l = zv_x86_decode(code + off, len - off, &in);
		if (l < 0 || in.exposes_rsp)
			return 0;
		if (l == 2 && code[off] == 0x0f && code[off + 1] == 0x05) {
			if (n == MAX_FUNCTION_SITES)
				return 0;
			sites[n++] = at_addr + off;
		}
		off += (uint64_t)l;
	}
	for (int i = 0; i < n && kept < room; i++)
		if (zv_site_safe_static(sites[i]))
			out[kept++] = sites[i];
	return kept;
}

/* The index of the last function in the sorted .eh_frame_hdr table (count
 * pairs at tab, addresses relative to base) that starts at or before v. */
static long function_before(const uint8_t *tab, uint64_t count, uint64_t base, uint64_t v)
{
	long lo = 0, hi = (long)count - 1, found = -1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (base + (int64_t)s32(tab + 8 * mid) <= v) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

/* A table like .eh_frame_hdr's, (start, FDE) pairs relative to the
 * section's address, from the FDEs of the .eh_frame section of bytes eh
 * (len, at image address base) whose CIE is the standard one; into out
 * (room pairs). Returns the count. */
static long table_from_frames(struct image *im, const uint8_t *eh, uint64_t len, uint64_t base, int32_t *out,
			      long room)
{
	long n = 0;
	for (uint64_t off = 0; off + 8 <= len && n < room;) {
		uint32_t length = (uint32_t)s32(eh + off);
		if (length == 0 || length == 0xffffffffu || length > len - off - 4)
			break;
		uint32_t id = (uint32_t)s32(eh + off + 4);
		if (id != 0 && length >= 12 && cie_is_standard(im, base + off + 4 - id)) {
			int64_t start = (int64_t)(off + 8) + s32(eh + off + 8); /* pcrel sdata4 */
			out[2 * n] = (int32_t)start;
			out[2 * n + 1] = (int32_t)off;
			n++;
		}
		off += 4 + (uint64_t)length;
	}
	zv_sort_pairs(out, n);
	return n;
}

/* The image's .eh_frame section (address and size), from its section
 * headers; 0 when it has none. */
static uint64_t frames_section(int fd, const Elf64_Ehdr *eh, uint64_t *size)
{
	Elf64_Shdr sh[64], names;
	char name[12];
	if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum > 64 || eh->e_shstrndx >= eh->e_shnum ||
	    zv_sys4(__NR_pread64, fd, sh, eh->e_shnum * sizeof(Elf64_Shdr), eh->e_shoff) !=
		    (long)(eh->e_shnum * sizeof(Elf64_Shdr)))
		return 0;
	names = sh[eh->e_shstrndx];
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_PROGBITS || !(sh[i].sh_flags & SHF_ALLOC) || sh[i].sh_name >= names.sh_size ||
		    zv_sys4(__NR_pread64, fd, name, sizeof name, names.sh_offset + sh[i].sh_name) != sizeof name)
			continue;
		if (!memcmp(name, ".eh_frame", 10)) {
			*size = sh[i].sh_size;
			return sh[i].sh_addr;
		}
	}
	return 0;
}

struct scan {
	struct image *im;
	const uint8_t *tab; /* the .eh_frame_hdr table */
	uint64_t count, base;
	uint8_t *chunk, *code;
	uint64_t *sites;
	int nsites;
	struct zv_stub_batch *stubs; /* the stubs platform: windows instead of sites */
	const int32_t *syms;         /* and functions from the symbol table */
	long nsyms;
	int syms_read;
	const Elf64_Ehdr *eh;
	void *symmem;
	size_t symsize;
};

/* The function holding image address v that can be judged: its unwind
 * entry's, or (stubs only) its symbol's; *next: where the next function of
 * the same table starts (*start + *len if it is not known). */
static int function_of(struct scan *s, uint64_t v, uint64_t *start, uint64_t *len, uint64_t *next)
{
	long k = s->count ? function_before(s->tab, s->count, s->base, v) : -1;
	if (k >= 0) {
		*start = s->base + (int64_t)s32(s->tab + 8 * k);
		uint64_t fde = s->base + (int64_t)s32(s->tab + 8 * k + 4);
		*len = function_length(s->im, fde, *start);
		*next = (uint64_t)k + 1 < s->count ? s->base + (int64_t)s32(s->tab + 8 * (k + 1)) : *start + *len;
		if (*len && v < *start + *len)
			return 1;
	}
	if (s->stubs && !s->syms_read) { /* read once, when first needed */
		s->syms_read = 1;
		int32_t *pairs;
		long n = zv_symtab_functions(s->im->fd, s->eh, &s->symmem, &s->symsize, &pairs);
		if (n <= 0) { /* a Go binary without its symbols: Go's own table */
			if (s->symmem)
				zv_kunmap(s->symmem, s->symsize);
			s->symmem = NULL;
			n = zv_gopclntab_functions(s->im->file, s->im->file_size, s->eh, s->im->ph, s->im->nph,
						   &s->symmem, &s->symsize, &pairs);
		}
		if (n > 0) {
			s->syms = pairs;
			s->nsyms = n;
		}
	}
	return s->nsyms > 0 && zv_symtab_function_of(s->syms, s->nsyms, v, start, len, next);
}

/* The stubs platform: the syscalls of the function just judged that got
 * no window look for trampolines in the padding of the next function, the
 * one that starts at v, if it lies in [vlo, vhi). */
static void neighbor(struct scan *s, uint64_t v, uint64_t vlo, uint64_t vhi, uint64_t bias)
{
	uint64_t start, len, next;
	struct buf f;
	if (v < vlo || !function_of(s, v, &start, &len, &next) || start != v || start + len > vhi || len > MAX_FUNCTION)
		return;
	uint64_t gap = next > start + len && next <= vhi ? next - start - len : 0;
	gap = gap > MAX_GAP ? MAX_GAP : gap;
	if (read_at(s->im, start, s->code, len + gap, &f) == (long)(len + gap))
		zv_stubs_neighbor(s->stubs, f.p, len, gap, start + bias);
}

/* Whether one of the 8 bytes at p is b: a word at a time, since most
 * code has no 05 (the second byte of `syscall`). */
static int has_byte(const uint8_t *p, uint64_t b)
{
	uint64_t w;
	__builtin_memcpy(&w, p, 8); /* inline: -fno-builtin makes memcpy a call */
	w ^= b * 0x0101010101010101UL;
	return ((w - 0x0101010101010101UL) & ~w & 0x8080808080808080UL) != 0;
}

/* The stubs platform also decodes the functions that hold a sysenter or
 * int $0x80 pair, to prove pairs inside instructions (intercept/sudoff.c). */
static int has_second(const uint8_t *p, int stubs)
{
	return has_byte(p, 0x05) || (stubs && (has_byte(p, 0x34) || has_byte(p, 0x80)));
}

/* Finds the safe sites of the image's code in [vlo, vhi), which runs at
 * address + bias. Only functions with a 0f 05 in their bytes are decoded:
 * the bytes are scanned first (most functions have none). */
static void scan_code(struct scan *s, uint64_t vlo, uint64_t vhi, uint64_t bias)
{
	uint64_t done = vlo; /* candidates below were judged with their function */
	for (uint64_t v = vlo; v + 1 < vhi; v += CHUNK - 1) {
		struct buf c;
		uint64_t want = vhi - v < CHUNK ? vhi - v : CHUNK;
		if (read_at(s->im, v, s->chunk, want, &c) < 2)
			return;
		for (uint64_t i = 0; i + 1 < c.len; i++) {
			if (i + 9 < c.len && !has_second(c.p + i + 1, s->stubs != NULL)) {
				i += 7; /* no 05 in the next 8 bytes: no syscall ends there */
				continue;
			}
			if (v + i < done || !(s->stubs ? zv_stubs_is_call_pair(c.p + i)
						      : c.p[i] == 0x0f && c.p[i + 1] == 0x05))
				continue;
			uint64_t start, len, next;
			if (!function_of(s, v + i, &start, &len, &next))
				continue; /* outside any function that can be judged */
			done = start + len;
			/* the padding up to the next function may hold trampolines */
			uint64_t gap = next > done && next <= vhi ? next - done : 0;
			gap = gap > MAX_GAP ? MAX_GAP : gap;
			struct buf f;
			if (start < vlo || done > vhi || len > MAX_FUNCTION ||
			    read_at(s->im, start, s->code, len + gap, &f) != (long)(len + gap))
				continue;
			if (s->stubs) {
				zv_stubs_function(s->stubs, f.p, len, gap, start + bias);
				if (s->stubs->norphans)
					neighbor(s, next, vlo, vhi, bias);
			} else
				s->nsites += scan_function(f.p, len, start + bias, s->sites + s->nsites,
							   MAX_SITES - s->nsites);
		}
	}
}

/* The table of the image's functions: .eh_frame_hdr's, or one built from
 * .eh_frame. Sets s->tab, s->count and s->base; the memory is *mem (size
 * *msize), to be unmapped by the caller. */
static int function_table(struct scan *s, const Elf64_Ehdr *eh, void **mem, size_t *msize)
{
	struct image *im = s->im;
	const Elf64_Phdr *hdr = NULL;
	for (int i = 0; i < im->nph; i++)
		if (im->ph[i].p_type == PT_GNU_EH_FRAME)
			hdr = &im->ph[i];
	uint64_t size = hdr ? hdr->p_filesz : 0, at = hdr ? hdr->p_vaddr : frames_section(im->fd, eh, &size);
	if (!at || size < 12 || size > MAX_TABLE)
		return -1;
	*msize = (size + (hdr ? 0 : size) + 4095) & ~4095UL; /* a built table is at most as large */
	uint8_t *m = zv_kmap(*msize, 4096, -1);
	if (zv_is_err((long)m))
		return -1;
	*mem = m;
	if (read_at(im, at, m, size, NULL) != (long)size)
		return -1;
	s->base = at;
	if (!hdr) {
		s->tab = m + size;
		s->count = (uint64_t)table_from_frames(im, m, size, at, (int32_t *)(m + size), (long)(size / 8));
		return 0;
	}
	/* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, fde_count
	 * udata4, then the table of (start, FDE) pairs, datarel sdata4 */
	s->tab = m + 12;
	s->count = (uint32_t)s32(m + 8);
	if (m[0] != 1 || m[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) || m[2] != DW_EH_PE_udata4 ||
	    m[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || s->count > (size - 12) / 8)
		return -1;
	return 0;
}

/* The mapping [addr, addr + len) of fd's bytes from file offset off, with
 * protection prot and private, just became executable: rewrite the safe
 * sites of the functions in it (thread t), or, given a batch, make jump
 * stubs for their windows (intercept/stubs.c). */
void zv_sites_load(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot,
		   struct zv_stub_batch *stubs)
{
	struct image im = { .fd = fd, .cie = ~0UL };
	Elf64_Ehdr eh;
	if (zv_sys4(__NR_pread64, fd, &eh, sizeof eh, 0) != sizeof eh || eh.e_ident[0] != ELFMAG0 ||
	    eh.e_ident[1] != ELFMAG1 || eh.e_ident[2] != ELFMAG2 || eh.e_ident[3] != ELFMAG3 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > MAX_PHDRS ||
	    zv_sys4(__NR_pread64, fd, im.ph, eh.e_phnum * sizeof(Elf64_Phdr), eh.e_phoff) !=
		    (long)(eh.e_phnum * sizeof(Elf64_Phdr)))
		return;
	im.nph = eh.e_phnum;
	/* The file, mapped once: every read below is a copy, not a syscall. */
	struct stat st;
	void *fmap = NULL;
	size_t fmap_size = 0;
	if (zv_sys2(__NR_fstat, fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < (1UL << 32)) {
		fmap_size = ((size_t)st.st_size + 4095) & ~4095UL;
		fmap = zv_kmap(fmap_size, 4096, -1); /* an address in the kernel's window */
		if (zv_is_err((long)fmap) ||
		    zv_mmap(fmap, fmap_size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) != fmap) {
			if (!zv_is_err((long)fmap))
				zv_kunmap(fmap, fmap_size);
			fmap = NULL;
		} else {
			im.file = fmap;
			im.file_size = (uint64_t)st.st_size;
		}
	}
	size_t wsize = CHUNK + MAX_FUNCTION + MAX_GAP + MAX_SITES * sizeof(uint64_t), tsize = 0;
	void *table = NULL;
	uint8_t *work = zv_kmap(wsize, 4096, -1);
	if (zv_is_err((long)work))
		return;
	struct scan s = { &im, NULL, 0, 0, work, work + CHUNK, (uint64_t *)(work + CHUNK + MAX_FUNCTION + MAX_GAP), 0, stubs, NULL, 0, 0, NULL, NULL, 0 };
	s.eh = &eh;
	int eh_ok = function_table(&s, &eh, &table, &tsize) == 0;
	if (!eh_ok)
		s.count = 0;
	if (eh_ok || stubs) {
		for (int i = 0; i < im.nph; i++) {
			/* each executable segment's part of this mapping */
			const Elf64_Phdr *x = &im.ph[i];
			if (x->p_type != PT_LOAD || !(x->p_flags & PF_X))
				continue;
			uint64_t flo = x->p_offset > off ? x->p_offset : off;
			uint64_t fhi = x->p_offset + x->p_filesz < off + len ? x->p_offset + x->p_filesz : off + len;
			struct reader r = { &im, addr - off + x->p_offset - x->p_vaddr };
			if (stubs) {
				stubs->read = read_run;
				stubs->read_ctx = &r;
			}
			if (flo < fhi)
				scan_code(&s, flo - x->p_offset + x->p_vaddr, fhi - x->p_offset + x->p_vaddr, r.bias);
			if (stubs)
				stubs->read = NULL;
		}
		if (!stubs) /* the stubs platform commits its windows itself */
			zv_sites_load_batch(t, s.sites, s.nsites, addr, addr + len, prot);
	}
	if (table)
		zv_kunmap(table, tsize);
	if (s.symmem)
		zv_kunmap(s.symmem, s.symsize);
	if (fmap)
		zv_kunmap(fmap, fmap_size);
	zv_kunmap(work, wsize);
}
