/* An ELF image read from its file, and its functions as its unwind table
 * names them (intercept/unwind.c). */
#ifndef ZV_INTERCEPT_UNWIND_H
#define ZV_INTERCEPT_UNWIND_H
#include <stddef.h>
#include <stdint.h>
#include <elf.h>

#define ZV_ELFFILE_MAX_PHDRS 32

/* An image being scanned: its file and program headers. */
struct zv_elffile {
	int fd, nph;
	const uint8_t *file; /* the whole file mapped read-only, or NULL: then pread */
	uint64_t file_size;
	Elf64_Phdr ph[ZV_ELFFILE_MAX_PHDRS];
	uint64_t cie, cie_ok; /* the last CIE judged, and the verdict */
	int lsda_enc;         /* and the encoding of its FDEs' LSDA pointers (0xff: none) */
};

/* Bytes of the image at [vaddr, vaddr + len). */
struct zv_ibuf {
	const uint8_t *p;
	uint64_t len, vaddr;
};

/* Reads up to len bytes of the image at address v into dst (only what the
 * file holds of the segment there); returns the count, <= 0 on failure.
 * Given b, points b at the bytes instead (into the mapped file, no copy,
 * when it can). */
long zv_elffile_read(const struct zv_elffile *im, uint64_t v, void *dst, uint64_t len, struct zv_ibuf *b);

/* The image's sorted table of FDEs: (start, FDE) pairs of 32-bit values
 * relative to base, .eh_frame_hdr's or one built from .eh_frame. */
struct zv_unwind {
	const uint8_t *tab;
	uint64_t count, base;
	void *mem; /* to unmap */
	size_t msize;
};
/* Reads the table; -1 (count 0) if the image has none. */
int zv_unwind_table(struct zv_elffile *im, const Elf64_Ehdr *eh, struct zv_unwind *u);
void zv_unwind_free(struct zv_unwind *u);
/* The index of the last entry that starts at or before v, -1 if none. */
long zv_unwind_before(const struct zv_unwind *u, uint64_t v);
/* Entry k's start. */
uint64_t zv_unwind_start(const struct zv_unwind *u, long k);

/* What an FDE says of its code [start, start + len). */
#define ZV_FDE_NONE 0     /* unreadable, or not an FDE for start */
#define ZV_FDE_CODE 1     /* instructions from start to start + len */
#define ZV_FDE_ENTERED 2  /* and a function entered at its start by a call, with the standard frame */
/* Entry k's FDE: its kind, and its code's start and length. */
int zv_unwind_entry(struct zv_elffile *im, const struct zv_unwind *u, long k, uint64_t *start, uint64_t *len);

/* The landing pads of entry k's function (its LSDA's call sites: where
 * the unwinder resumes it, by an indirect jump), as offsets from its
 * start, into out; the count, or -1 when there are more than room or they
 * cannot be read. */
int zv_unwind_landing_pads(struct zv_elffile *im, const struct zv_unwind *u, long k, uint64_t *out, int room);

#endif
