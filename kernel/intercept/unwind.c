/* An ELF image's functions as its unwind table names them (for
 * intercept/loadsites.c).
 *
 * PT_GNU_EH_FRAME is the sorted table that .eh_frame_hdr keeps of every
 * FDE's start; static executables have no such table, so one is built
 * from their .eh_frame section. An FDE covers whole instructions: its
 * start and its end (start + range) are instruction boundaries, which the
 * assembler computes from labels. Whether its code is also a function
 * entered only at its start by a call is a further fact (ZV_FDE_ENTERED):
 * the standard CIE (code alignment 1, data alignment -8, return address
 * in rip, "CFA = rsp + 8, return address at CFA - 8") and nothing that
 * changes the frame before the first instruction. The cold part of a
 * split function, the PLT and hand-written code after a `cfi_endproc` are
 * described otherwise: their bytes are instructions (ZV_FDE_CODE), but
 * where other code enters them is not known.
 *
 * Everything is read from the file (intercept/loadsites.c maps it once),
 * so it does not matter which of the image's segments are mapped yet. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/unwind.h"
#include "intercept/symfuncs.h"

#define MAX_TABLE (1 << 20) /* bytes of .eh_frame_hdr */
#define MAX_CFI 512         /* bytes of one FDE or CIE read: the head holds what is judged */

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

long zv_elffile_read(const struct zv_elffile *im, uint64_t v, void *dst, uint64_t len, struct zv_ibuf *b)
{
	for (int i = 0; i < im->nph; i++) {
		const Elf64_Phdr *s = &im->ph[i];
		if (s->p_type != PT_LOAD || v < s->p_vaddr || v - s->p_vaddr >= s->p_filesz)
			continue;
		uint64_t room = s->p_vaddr + s->p_filesz - v, off = v - s->p_vaddr + s->p_offset, n = len < room ? len : room;
		long r;
		if (im->file && off <= im->file_size && n <= im->file_size - off) {
			if (b) { /* no copy: point into the mapped file */
				*b = (struct zv_ibuf){ im->file + off, n, v };
				return (long)n;
			}
			memcpy(dst, im->file + off, n);
			r = (long)n;
		} else {
			r = zv_sys4(__NR_pread64, im->fd, dst, n, off);
		}
		if (b)
			*b = (struct zv_ibuf){ dst, r > 0 ? (uint64_t)r : 0, v };
		return r;
	}
	return -1;
}

/* The bytes at image address v, n of them, or NULL outside b. */
static const uint8_t *at(const struct zv_ibuf *b, uint64_t v, uint64_t n)
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

/* The CIE at image address cie: ZV_FDE_CODE if its FDEs give their
 * addresses as 4-byte pc-relative values (augmentation "z..R"; a
 * personality routine and LSDA, "zPLR", may come with it), ZV_FDE_ENTERED
 * if it is also the standard x86-64 one: code alignment 1, data alignment
 * -8, return address in rip, and initial instructions that say only
 * "CFA = rsp + 8, return address at CFA - 8": a function entered by a
 * call. ("S", a signal frame, is neither.) */
static int cie_kind(const struct zv_ibuf *eh, uint64_t cie, int *lsda_enc)
{
	*lsda_enc = 0xff;
	const uint8_t *p = at(eh, cie, 8);
	if (!p)
		return ZV_FDE_NONE;
	uint32_t length = (uint32_t)s32(p);
	if (length < 8 || !at(eh, cie + 4, length) || s32(p + 4) != 0)
		return ZV_FDE_NONE;
	const uint8_t *end = p + 4 + length;
	p += 8;
	int version = *p++;
	if (version != 1 && version != 3)
		return ZV_FDE_NONE;
	const uint8_t *aug = p;
	while (p < end && *p)
		p++;
	if (p++ >= end || aug[0] != 'z')
		return ZV_FDE_NONE;
	uint64_t calign = uleb(&p, end);
	int dalign_std = p < end && *p == 0x78; /* -8 */
	while (p < end && (*p & 0x80)) /* the data alignment, an sleb */
		p++;
	p++;
	uint64_t ra = version == 1 ? (p < end ? *p++ : 0) : uleb(&p, end);
	uint64_t auglen = uleb(&p, end);
	if (p > end || auglen > (uint64_t)(end - p))
		return ZV_FDE_NONE;
	const uint8_t *data = p, *data_end = p + auglen;
	int r_ok = 0;
	for (const uint8_t *c = aug + 1; *c; c++) {
		if (data >= data_end)
			return ZV_FDE_NONE;
		int enc = *data++;
		if (*c == 'P') {
			int n = encoded_size(enc);
			if (!n || n > data_end - data)
				return ZV_FDE_NONE;
			data += n;
		} else if (*c == 'R') {
			r_ok = enc == (DW_EH_PE_pcrel | DW_EH_PE_sdata4);
		} else if (*c == 'L') {
			*lsda_enc = enc;
		} else {
			return ZV_FDE_NONE;
		}
	}
	if (!r_ok)
		return ZV_FDE_NONE;
	if (calign != 1 || !dalign_std || ra != 16)
		return ZV_FDE_CODE;
	p = data_end;
	static const uint8_t entry[] = { DW_CFA_def_cfa, 7, 8, DW_CFA_offset_rip, 1 };
	for (size_t i = 0; i < sizeof entry; i++)
		if (p >= end || *p++ != entry[i])
			return ZV_FDE_CODE;
	while (p < end)
		if (*p++ != DW_CFA_nop)
			return ZV_FDE_CODE;
	return ZV_FDE_ENTERED;
}

/* The kind of the CIE at image address cie, read from the file (the
 * image's few CIEs: the last verdict is kept). */
static int cie_of(struct zv_elffile *im, uint64_t cie)
{
	if (cie != im->cie) {
		uint8_t raw[MAX_CFI];
		struct zv_ibuf b;
		im->cie = cie;
		im->lsda_enc = 0xff;
		im->cie_ok = (uint64_t)(zv_elffile_read(im, cie, raw, sizeof raw, &b) > 0 ? cie_kind(&b, cie, &im->lsda_enc)
											  : ZV_FDE_NONE);
	}
	return (int)im->cie_ok;
}

int zv_unwind_entry(struct zv_elffile *im, const struct zv_unwind *u, long k, uint64_t *start, uint64_t *len)
{
	uint8_t raw[MAX_CFI];
	struct zv_ibuf frame, *eh = &frame;
	*start = zv_unwind_start(u, k);
	*len = 0;
	uint64_t fde = u->base + (int64_t)s32(u->tab + 8 * k + 4);
	if (zv_elffile_read(im, fde, raw, sizeof raw, eh) <= 0)
		return ZV_FDE_NONE;
	const uint8_t *p = at(eh, fde, 16);
	if (!p)
		return ZV_FDE_NONE;
	uint32_t length = (uint32_t)s32(p);
	if (length < 12 || length == 0xffffffffu)
		return ZV_FDE_NONE;
	/* Only the head is read: a long FDE's instructions go on past it. */
	const uint8_t *end = at(eh, fde + 4, length) ? p + 4 + length : eh->p + eh->len;
	int whole = at(eh, fde + 4, length) != NULL;
	uint64_t cie = fde + 4 - (uint32_t)s32(p + 4);
	int kind = cie_of(im, cie);
	/* pc_begin: pcrel sdata4, the same as the table's */
	if (kind == ZV_FDE_NONE || fde + 8 + (int64_t)s32(p + 8) != *start)
		return ZV_FDE_NONE;
	uint64_t range = (uint32_t)s32(p + 12);
	if (!range)
		return ZV_FDE_NONE;
	*len = range;
	if (kind != ZV_FDE_ENTERED)
		return ZV_FDE_CODE;
	p += 16;
	uint64_t auglen = uleb(&p, end);
	if (p > end || auglen > (uint64_t)(end - p))
		return ZV_FDE_CODE;
	p += auglen;
	/* Nothing may change the frame before the first instruction runs. */
	while (p < end) {
		uint8_t op = *p++;
		if (op == DW_CFA_nop)
			continue;
		if ((op & 0xc0) == 0x40 || (op >= DW_CFA_advance_loc1 && op <= DW_CFA_advance_loc4))
			return ZV_FDE_ENTERED;
		return ZV_FDE_CODE;
	}
	return whole ? ZV_FDE_ENTERED : ZV_FDE_CODE; /* a head of nops only, cut short: unknown */
}

/* A value in call-frame encoding enc at *pp (an address if pcrel, from
 * image address *pv, which moves on with it); 0 on success. */
static int encoded(const uint8_t **pp, const uint8_t *end, uint64_t *pv, int enc, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t at = *pv, v;
	if ((enc & 0x0f) == 0x01) { /* uleb128 */
		v = uleb(&p, end);
	} else {
		int n = encoded_size(enc);
		if (!n || end - p < n)
			return -1;
		v = 0;
		for (int i = 0; i < n; i++)
			v |= (uint64_t)p[i] << (8 * i);
		if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1) /* signed */
			v |= ~0UL << (8 * n);
		p += n;
	}
	if (p > end || (enc & 0x70 & ~DW_EH_PE_pcrel))
		return -1; /* only absolute and pc-relative */
	if (enc & DW_EH_PE_pcrel)
		v += at;
	*pv = at + (uint64_t)(p - *pp);
	*pp = p;
	*out = v;
	return 0;
}

int zv_unwind_landing_pads(struct zv_elffile *im, const struct zv_unwind *u, long k, uint64_t *out, int room)
{
	uint8_t raw[MAX_CFI];
	struct zv_ibuf eh;
	uint64_t fde = u->base + (int64_t)s32(u->tab + 8 * k + 4), lsda;
	if (zv_elffile_read(im, fde, raw, sizeof raw, &eh) < 20)
		return -1;
	const uint8_t *p = eh.p, *end = eh.p + eh.len;
	if (cie_of(im, fde + 4 - (uint32_t)s32(p + 4)) == ZV_FDE_NONE)
		return -1;
	if (im->lsda_enc == 0xff)
		return 0; /* a CIE without 'L': no LSDA */
	p += 16;
	uint64_t auglen = uleb(&p, end), v = fde + (uint64_t)(p - eh.p);
	if (p > end || auglen > (uint64_t)(end - p) || encoded(&p, p + auglen, &v, im->lsda_enc, &lsda))
		return -1;
	if (!lsda)
		return 0;
	/* The LSDA: LPStart's encoding (omitted: the function's start), the
	 * type table's (and its offset), then the call-site table. */
	if (zv_elffile_read(im, lsda, raw, sizeof raw, &eh) < 4)
		return -1;
	p = eh.p;
	end = eh.p + eh.len;
	v = lsda;
	if (*p++ != 0xff)
		return -1;
	if (*p++ != 0xff)
		uleb(&p, end);
	if (p >= end)
		return -1;
	int cs_enc = *p++;
	uint64_t cs_len = uleb(&p, end);
	if (p > end || cs_len > (uint64_t)(end - p))
		return -1; /* a table past what was read: not judged */
	const uint8_t *cs_end = p + cs_len;
	v = lsda + (uint64_t)(p - eh.p);
	int n = 0;
	while (p < cs_end) {
		uint64_t from, len, lp;
		if (encoded(&p, cs_end, &v, cs_enc & 0x0f, &from) || encoded(&p, cs_end, &v, cs_enc & 0x0f, &len) ||
		    encoded(&p, cs_end, &v, cs_enc & 0x0f, &lp))
			return -1;
		uleb(&p, cs_end); /* the action */
		if (p > cs_end)
			return -1;
		v = lsda + (uint64_t)(p - eh.p);
		if (!lp)
			continue;
		if (n == room)
			return -1;
		out[n++] = lp; /* from LPStart, the function's start */
	}
	return n;
}

long zv_unwind_before(const struct zv_unwind *u, uint64_t v)
{
	long lo = 0, hi = (long)u->count - 1, found = -1;
	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;
		if (u->base + (int64_t)s32(u->tab + 8 * mid) <= v) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

uint64_t zv_unwind_start(const struct zv_unwind *u, long k)
{
	return u->base + (int64_t)s32(u->tab + 8 * k);
}

/* A table like .eh_frame_hdr's, (start, FDE) pairs relative to the
 * section's address, from the FDEs of the .eh_frame section of bytes eh
 * (len, at image address base) whose CIE gives pc-relative addresses; into
 * out (room pairs). Returns the count. */
static long table_from_frames(struct zv_elffile *im, const uint8_t *eh, uint64_t len, uint64_t base, int32_t *out,
			      long room)
{
	long n = 0;
	for (uint64_t off = 0; off + 8 <= len && n < room;) {
		uint32_t length = (uint32_t)s32(eh + off);
		if (length == 0 || length == 0xffffffffu || length > len - off - 4)
			break;
		uint32_t id = (uint32_t)s32(eh + off + 4);
		if (id != 0 && length >= 12 && cie_of(im, base + off + 4 - id) != ZV_FDE_NONE) {
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

int zv_unwind_table(struct zv_elffile *im, const Elf64_Ehdr *eh, struct zv_unwind *u)
{
	*u = (struct zv_unwind){ 0 };
	const Elf64_Phdr *hdr = NULL;
	for (int i = 0; i < im->nph; i++)
		if (im->ph[i].p_type == PT_GNU_EH_FRAME)
			hdr = &im->ph[i];
	uint64_t size = hdr ? hdr->p_filesz : 0, where = hdr ? hdr->p_vaddr : frames_section(im->fd, eh, &size);
	if (!where || size < 12 || size > MAX_TABLE)
		return -1;
	size_t msize = (size + (hdr ? 0 : size) + 4095) & ~4095UL; /* a built table is at most as large */
	uint8_t *m = zv_kmap(msize, 4096, -1);
	if (zv_is_err((long)m))
		return -1;
	u->mem = m;
	u->msize = msize;
	if (zv_elffile_read(im, where, m, size, NULL) != (long)size)
		return -1;
	u->base = where;
	if (!hdr) {
		u->tab = m + size;
		u->count = (uint64_t)table_from_frames(im, m, size, where, (int32_t *)(m + size), (long)(size / 8));
		return 0;
	}
	/* .eh_frame_hdr: version 1, eh_frame_ptr pcrel sdata4, fde_count
	 * udata4, then the table of (start, FDE) pairs, datarel sdata4 */
	u->tab = m + 12;
	u->count = (uint32_t)s32(m + 8);
	if (m[0] != 1 || m[1] != (DW_EH_PE_pcrel | DW_EH_PE_sdata4) || m[2] != DW_EH_PE_udata4 ||
	    m[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || u->count > (size - 12) / 8) {
		u->count = 0;
		return -1;
	}
	return 0;
}

void zv_unwind_free(struct zv_unwind *u)
{
	if (u->mem)
		zv_kunmap(u->mem, u->msize);
	*u = (struct zv_unwind){ 0 };
}
