/* --rewrite=load: the syscall sites of an ELF image, rewritten when its code
 * is mapped (by zvisor's loader for the executable and the interpreter, by
 * the guest's mmap for every later library), so that its calls never take
 * the SIGSYS path at all.
 *
 * Where the sites are: the image's unwind table (intercept/unwind.c) gives
 * each function's start and length. Each function is decoded from its
 * start to its end (intercept/x86len.c, checked against objdump by
 * tests/test_x86dec.py), so a site is a `syscall` the decoder reached from
 * a real instruction boundary, not two bytes that look like one.
 *
 * zpoline: whether a site is safe without its registers (the red zone,
 * DESIGN 5.1): see zv_site_safe_static. Its premise, that the function
 * copies rsp nowhere, is checked here over the whole function, which must
 * be entered at its start with the standard frame (ZV_FDE_ENTERED: not the
 * cold part of a split function, whose hot part this check would not see).
 * Sites that fail stay for the lazy path, which decides with the registers
 * of their first arrival.
 *
 * Jump stubs (intercept/stubs.c) need bounds and branch targets, not frame
 * facts, and every syscall byte pair judged (intercept/sudoff.c): a region
 * of code is a function entered at its start (an FDE with the standard
 * frame, else a symbol: musl's libc.a and Go have no unwind entries, else
 * Go's own table), or code whose entries are not known (another FDE: a
 * cold part, the PLT; or the bytes between two FDEs, which start where an
 * FDE's last instruction ends: crtstuff's functions), whose pairs inside
 * instructions are proven but which gets no windows. A function whose code
 * goes on past its end (hand-written assembly that ends its CFI before the
 * syscall, as glibc's __clone3) is judged as one run with what follows,
 * each part's start an entry (judge()).
 *
 * Everything is read from the file (mapped once), so it does not matter
 * which of the image's segments are mapped yet. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/sites.h"
#include "intercept/x86ops.h"
#include "intercept/stubs.h"
#include "intercept/symfuncs.h"
#include "intercept/gofuncs.h"
#include "intercept/unwind.h"
#include <asm/stat.h>
#include <linux/mman.h>
#include <elf.h>

#define CHUNK (64 * 1024)          /* code scanned for candidates at a time */
#define MAX_FUNCTION ZV_STUB_MAX_FUNCTION /* longer functions are left to the catch-all */
#define MAX_ZPOLINE_FUNCTION (64 * 1024)
#define MAX_GAP 128                /* bytes of padding after a function read with it */
#define MAX_FUNCTION_SITES 16
#define MAX_SITES 8192             /* rewritten per mapping */
#define MAX_RUN 8                  /* parts of one run */
#define MAX_PADS 64                /* landing pads of one run */

/* The image's bytes at run address a (the image runs at address +
 * bias), for jump tables: the whole of [a, a + n) or -1. */
struct reader { struct zv_elffile *im; uint64_t bias; };
static int read_run(void *ctx, uint64_t a, void *dst, uint64_t n)
{
	const struct reader *r = ctx;
	return zv_elffile_read(r->im, a - r->bias, dst, n, NULL) == (long)n ? 0 : -1;
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

struct scan {
	struct zv_elffile *im;
	struct zv_unwind u;
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
	uint64_t vlo, vhi, bias;     /* the executable part being scanned */
};

/* A region of code: [start, start + len); next: where the next region of
 * the same table starts (0: none known). */
enum { R_NONE, R_CODE, R_FUNC };
struct region {
	uint64_t start, len, next;
	int kind; /* R_FUNC: a function entered at its start; R_CODE: instructions, entries unknown */
	long fde; /* its FDE's index in the table, -1 if none */
};

/* The functions of the symbol table, or Go's (read once, when first needed). */
static int symbol_function(struct scan *s, uint64_t v, struct region *r)
{
	if (!s->syms_read) {
		s->syms_read = 1;
		int32_t *pairs;
		/* with an unwind table, the exported symbols name functions it
		 * has already (libc's: sorting them cost a tenth of its decode) */
		long n = zv_symtab_functions(s->im->fd, s->eh, s->u.count == 0, &s->symmem, &s->symsize, &pairs);
		if (n <= 0 && !s->u.count) { /* a Go binary without its symbols (nor unwind table): Go's own table */
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
	if (s->nsyms <= 0 || !zv_symtab_function_of(s->syms, s->nsyms, v, &r->start, &r->len, &r->next))
		return 0;
	r->kind = R_FUNC;
	r->fde = -1;
	return 1;
}

/* The region holding image address v (zpoline: only functions with the
 * standard frame). */
static int region_at(struct scan *s, uint64_t v, struct region *r)
{
	long k = zv_unwind_before(&s->u, v);
	uint64_t start = 0, len = 0, next = 0;
	int kind = k >= 0 ? zv_unwind_entry(s->im, &s->u, k, &start, &len) : ZV_FDE_NONE;
	if (k >= 0 && (uint64_t)k + 1 < s->u.count)
		next = zv_unwind_start(&s->u, k + 1);
	*r = (struct region){ start, len, next, R_FUNC, k };
	if (kind == ZV_FDE_ENTERED && v < start + len)
		return 1;
	if (!s->stubs)
		return 0;
	if (symbol_function(s, v, r))
		return 1;
	if (kind == ZV_FDE_CODE && v < start + len) {
		*r = (struct region){ start, len, next, R_CODE, k };
		return 1;
	}
	/* Between two FDEs: the first one's end is where its last
	 * instruction ends, so the bytes from there decode as they run. */
	if (kind != ZV_FDE_NONE && v >= start + len && next > v && next - (start + len) <= MAX_FUNCTION) {
		*r = (struct region){ start + len, next - (start + len), next, R_CODE, -1 };
		return 1;
	}
	return 0;
}

/* The stubs platform: the syscalls of the code just judged, [start, end),
 * that got no window look for trampolines in the padding of its
 * neighbours: the function before it (with the gap after that function,
 * which ends at start) and the function that starts at next. */
static void neighbors(struct scan *s, uint64_t start, uint64_t next)
{
	struct region r, g;
	struct zv_ibuf f;
	uint64_t gap = 0;
	if (start > s->vlo && region_at(s, start - 1, &g) && g.start + g.len == start && g.kind == R_CODE &&
	    g.len <= MAX_GAP && g.start > s->vlo && region_at(s, g.start - 1, &r) && r.start + r.len == g.start &&
	    r.kind == R_FUNC)
		gap = g.len; /* a function, then padding up to start */
	else if (!(start > s->vlo && region_at(s, start - 1, &r) && r.kind == R_FUNC && r.start + r.len == start))
		r.len = 0;
	if (r.len && r.start >= s->vlo && r.len <= MAX_FUNCTION &&
	    zv_elffile_read(s->im, r.start, s->code, r.len + gap, &f) == (long)(r.len + gap))
		zv_stubs_neighbor(s->stubs, f.p, r.len, gap, r.start + s->bias);
	if (!s->stubs->norphans || next < s->vlo || !region_at(s, next, &r) || r.kind != R_FUNC || r.start != next ||
	    r.start + r.len > s->vhi || r.len > MAX_FUNCTION)
		return;
	gap = r.next > r.start + r.len && r.next <= s->vhi ? r.next - r.start - r.len : 0;
	gap = gap > MAX_GAP ? MAX_GAP : gap;
	if (zv_elffile_read(s->im, r.start, s->code, r.len + gap, &f) == (long)(r.len + gap))
		zv_stubs_neighbor(s->stubs, f.p, r.len, gap, r.start + s->bias);
}

/* The batch's counts, to take back a judgement. */
struct marks { int n, ninside, nrecent; };
static struct marks mark(const struct zv_stub_batch *b) { return (struct marks){ b->n, b->ninside, b->nrecent }; }
static void undo(struct zv_stub_batch *b, struct marks m)
{
	b->n = m.n;
	b->ninside = m.ninside;
	b->nrecent = m.nrecent;
}

/* Judges the region r and, while its code goes on past its end, the
 * regions that follow, as one run: each part's start is an entry; windows
 * only if the run starts with a function and its end is where the code
 * stops (it ends in a return or a jump, or falls through padding, which
 * compilers put only after code that does not go on, or into the start of
 * a function). Returns where the run ends. */
/* Adds to j's entries the landing pads of the part of a run at offset at,
 * its region r (where the unwinder resumes the function: an indirect jump
 * no decode sees); 0 if they could not all be read. */
static int landing_pads(struct scan *s, const struct region *r, uint64_t at, struct zv_stub_judge *j, int room)
{
	if (r->fde < 0)
		return 1;
	uint64_t *e = (uint64_t *)j->entries + j->nentries;
	int n = zv_unwind_landing_pads(s->im, &s->u, r->fde, e, room - j->nentries);
	for (int i = 0; i < n; i++)
		e[i] += at;
	j->nentries += n > 0 ? n : 0;
	return n >= 0;
}

static uint64_t judge(struct scan *s, struct region r)
{
	struct zv_stub_batch *b = s->stubs;
	uint64_t start = r.start, len = r.len, next = r.next, entries[MAX_RUN + MAX_PADS];
	struct zv_stub_judge j = { .windows = r.kind == R_FUNC, .entries = entries };
	if (j.windows && !landing_pads(s, &r, 0, &j, MAX_RUN + MAX_PADS))
		j.windows = 0;
	uint64_t first = len;
	int parts = 1;
	for (;;) {
		uint64_t gap = next > start + len && next <= s->vhi ? next - start - len : 0;
		uint64_t read = gap > MAX_GAP ? MAX_GAP : gap;
		struct zv_ibuf f;
		if (start < s->vlo || start + len > s->vhi || len > MAX_FUNCTION ||
		    zv_elffile_read(s->im, start, s->code, len + read, &f) != (long)(len + read))
			return start + len;
		struct marks m = mark(b);
		if (zv_stubs_judge(b, f.p, len, read, start + s->bias, &j) < 0) {
			if (parts == 1)
				return start + len;
			/* what follows is not code: the first part alone, no windows */
			j = (struct zv_stub_judge){ 0 };
			len = first;
			zv_stubs_judge(b, f.p, len, 0, start + s->bias, &j);
			break;
		}
		struct region after;
		int goes_on = j.windows && j.falls && !(j.gap_pad && read == gap && gap > 0);
		if (goes_on && !gap && region_at(s, start + len, &after) && after.kind == R_FUNC && after.start == start + len)
			goes_on = 0; /* into a function's start */
		if (!goes_on)
			break;
		undo(b, m);
		if (++parts == MAX_RUN || !region_at(s, start + len, &after) || after.start != start + len ||
		    (after.kind == R_FUNC && !landing_pads(s, &after, len, &j, MAX_RUN + MAX_PADS - 1))) {
			j.windows = 0; /* its code goes on where it cannot be followed */
			zv_stubs_judge(b, f.p, len, read, start + s->bias, &j);
			break;
		}
		entries[j.nentries++] = len;
		len += after.len;
		next = after.next;
	}
	if (b->norphans)
		neighbors(s, start, next);
	return start + len;
}

/* The region before r, if it ends where r starts and has not been judged
 * (it starts at or after done). */
static int region_before(struct scan *s, const struct region *r, uint64_t done, struct region *p)
{
	return r->start > done && region_at(s, r->start - 1, p) && p->start + p->len == r->start && p->start >= done;
}

/* Judges the region of the pair at v and returns where it ends; code whose
 * entries are unknown may be the rest of a run that starts before it. */
static uint64_t judge_pair(struct scan *s, uint64_t v, uint64_t done)
{
	struct region r, p;
	if (!region_at(s, v, &r))
		return v + 1;
	if (r.kind == R_CODE) {
		struct region head = r;
		for (int k = 0; k < MAX_RUN - 1 && region_before(s, &head, done, &p); k++) {
			head = p;
			if (p.kind == R_FUNC)
				break;
		}
		if (head.kind == R_FUNC) {
			uint64_t end = judge(s, head);
			if (end > v)
				return end;
			done = end;
		}
	}
	return judge(s, r);
}

/* Finds the safe sites of the image's code in [vlo, vhi), which runs at
 * address + bias: the byte pairs are found a word at a time, and only the
 * functions that hold one are decoded (most functions have none). The
 * stubs platform keeps every pair it met (intercept/sudoff.c counts those
 * left once the windows are made). */
static void scan_code(struct scan *s)
{
	struct zv_stub_batch *b = s->stubs;
	uint64_t done = s->vlo; /* pairs below were judged with their function */
	if (b && b->nread < 4) {
		b->read_lo[b->nread] = s->vlo + s->bias;
		b->read_hi[b->nread++] = s->vhi + s->bias;
	} else if (b) {
		b->pairs_ok = 0;
	}
	for (uint64_t v = s->vlo; v + 1 < s->vhi; v += CHUNK - 1) {
		struct zv_ibuf c;
		uint64_t want = s->vhi - v < CHUNK ? s->vhi - v : CHUNK;
		if (zv_elffile_read(s->im, v, s->chunk, want, &c) < 2) {
			if (b)
				b->pairs_ok = 0;
			return;
		}
		for (uint64_t i = 0; i + 1 < c.len; i += 8) {
			uint64_t m = 0;
			if (i + 9 <= c.len) {
				m = zv_stubs_pair_mask(c.p + i, !b);
			} else {
				for (uint64_t k = 0; i + k + 1 < c.len; k++)
					if (b ? zv_stubs_is_call_pair(c.p + i + k) : c.p[i + k] == 0x0f && c.p[i + k + 1] == 0x05)
						m |= 0x80UL << (8 * k);
			}
			for (; m; m &= m - 1) {
				uint64_t x = v + i + ((uint64_t)__builtin_ctzl(m) >> 3);
				if (b) {
					if (b->npairs < b->maxpairs)
						b->pairs[b->npairs++] = x + s->bias;
					else
						b->pairs_ok = 0;
					if (x >= done)
						done = judge_pair(s, x, done);
					continue;
				}
				struct region r;
				struct zv_ibuf f;
				if (x < done || !region_at(s, x, &r))
					continue; /* outside any function that can be judged */
				done = r.start + r.len;
				if (r.start < s->vlo || done > s->vhi || r.len > MAX_ZPOLINE_FUNCTION ||
				    zv_elffile_read(s->im, r.start, s->code, r.len, &f) != (long)r.len)
					continue;
				s->nsites += scan_function(f.p, r.len, r.start + s->bias, s->sites + s->nsites,
							   MAX_SITES - s->nsites);
			}
		}
	}
}

/* The mapping [addr, addr + len) of fd's bytes from file offset off, with
 * protection prot and private, just became executable: rewrite the safe
 * sites of the functions in it (thread t), or, given a batch, make jump
 * stubs for their windows (intercept/stubs.c). */
void zv_sites_load(struct zv_thread *t, int fd, uint64_t addr, uint64_t len, uint64_t off, int prot,
		   struct zv_stub_batch *stubs)
{
	struct zv_elffile im = { .fd = fd, .cie = ~0UL };
	Elf64_Ehdr eh;
	if (zv_sys4(__NR_pread64, fd, &eh, sizeof eh, 0) != sizeof eh || eh.e_ident[0] != ELFMAG0 ||
	    eh.e_ident[1] != ELFMAG1 || eh.e_ident[2] != ELFMAG2 || eh.e_ident[3] != ELFMAG3 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > ZV_ELFFILE_MAX_PHDRS ||
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
	/* the code buffer is touched only where the file is not mapped */
	size_t wsize = CHUNK + MAX_FUNCTION + MAX_GAP + MAX_SITES * sizeof(uint64_t);
	uint8_t *work = zv_kmap(wsize, 4096, -1);
	if (zv_is_err((long)work)) {
		if (fmap)
			zv_kunmap(fmap, fmap_size);
		return;
	}
	struct scan s = { .im = &im, .chunk = work, .code = work + CHUNK,
			  .sites = (uint64_t *)(work + CHUNK + MAX_FUNCTION + MAX_GAP), .stubs = stubs, .eh = &eh };
	int eh_ok = zv_unwind_table(&im, &eh, &s.u) == 0;
	if (stubs) {
		stubs->npairs = stubs->nread = 0;
		stubs->pairs_ok = 1;
	}
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
			s.vlo = flo - x->p_offset + x->p_vaddr;
			s.vhi = fhi - x->p_offset + x->p_vaddr;
			s.bias = r.bias;
			if (flo < fhi)
				scan_code(&s);
			if (stubs)
				stubs->read = NULL;
		}
		if (!stubs) /* the stubs platform commits its windows itself */
			zv_sites_load_batch(t, s.sites, s.nsites, addr, addr + len, prot);
	}
	zv_unwind_free(&s.u);
	if (s.symmem)
		zv_kunmap(s.symmem, s.symsize);
	if (fmap)
		zv_kunmap(fmap, fmap_size);
	zv_kunmap(work, wsize);
}
