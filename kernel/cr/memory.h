/* The address space's sections (cr/memory.c saves, cr/remap.c restores). */
#ifndef ZV_CR_MEMORY_H
#define ZV_CR_MEMORY_H
#include <stdint.h>
#include "cr/image.h"

enum zv_cr_kind {
	ZV_CR_ANON = 1,   /* private anonymous: its present pages */
	ZV_CR_FILE,       /* private file mapping: the pages that differ from the file */
	ZV_CR_SHANON,     /* shared anonymous: its present pages */
	ZV_CR_SHFILE,     /* shared file mapping: the file holds the pages */
	ZV_CR_VDSO,       /* the host's vDSO (its bytes in section "vdso") */
	ZV_CR_VVAR,       /* its data pages: re-created with it */
	ZV_CR_STACK,      /* the first thread's stack, which grows down */
	ZV_CR_SHMEMFD,    /* shared mapping of a memfd: its fd's contents (cr/fds.c), mapped after the fds */
	ZV_CR_SHDEL,      /* shared mapping of a deleted file (a POSIX semaphore's): its present pages,
			   * restored as shared anonymous memory (no name leads to the file any more) */
	ZV_CR_SYSV,       /* a SysV shared memory segment's part (shmat): its present pages; fsize is
			   * the segment's id as the program knows it, mtime_s its size, mtime_ns its
			   * key << 32 | its mode (SHM_DEST: removed, gone with its last detach) */
};

/* One record of section "mm", followed by the path (pathlen bytes, NUL,
 * padded to 8) and nruns runs, whose pages are in "pages" from pages_off
 * on: one after the other, or, in a placed mapping, each page at
 * pages_off + (its address - start), the file holding a hole where a page
 * was not saved, so that the mapping can be mapped from the file whole.
 * Version 1's record lacks the last two fields (its pages follow each
 * other in record order): cr/restore.c reads it into this one. */
struct zv_cr_vma {
	uint64_t start, end, off;
	uint32_t prot, kind;
	uint64_t nruns;
	uint64_t fsize;           /* the file's size and mtime when saved (a memfd: its inode) */
	int64_t mtime_s, mtime_ns;
	uint32_t pathlen, pad;
	uint64_t pages_off;       /* in "pages", page-aligned */
	uint32_t flags;           /* ZV_CR_VMA_* */
	uint32_t nattch;          /* SYSV: the segment's attachments at the checkpoint (else 0) */
};
#define ZV_CR_VMA1_SIZE 72        /* version 1's record */
#define ZV_CR_VMA_PLACED 1        /* its pages are placed as in memory (above) */
struct zv_cr_run {
	uint64_t addr, npages;
};
/* A record's path, its runs, and the record after it. */
_Static_assert(sizeof(struct zv_cr_vma) == ZV_CR_VMA1_SIZE + 16, "the mm record's layout");
static inline const char *zv_cr_vma_path(const struct zv_cr_vma *v) { return (const char *)(v + 1); }
static inline const struct zv_cr_run *zv_cr_vma_runs(const struct zv_cr_vma *v)
{
	return (const void *)(zv_cr_vma_path(v) + (v->pathlen ? (v->pathlen + 8) & ~7UL : 0));
}
static inline const char *zv_cr_vma_next(const struct zv_cr_vma *v)
{
	return (const char *)(zv_cr_vma_runs(v) + v->nruns);
}

/* From this size on, an eager restore reads pages.bin with O_DIRECT
 * (cr/restore.c). The checkpoint writes it through the page cache at every
 * size (docs/DESIGN.md, "What a checkpoint spends its time on"). */
#define ZV_CR_DIRECT_BYTES (256UL << 20)

struct zv_cr_layout {
	uint64_t lo, hi;          /* the kernel image */
	uint64_t rw_lo, rw_hi;    /* its data and bss */
	char build[24];           /* hash of its text and read-only data */
};
void zv_cr_image_layout(struct zv_cr_layout *l);

struct zv_cr_mapline {
	uint64_t lo, hi, off, inode, dev_major, dev_minor;
	int shared_copy; /* a copy of rewritten code standing for path (intercept/sharedtext.c) */
	int stub_region; /* stubs mapped from such a copy: saved as anonymous memory */
	int lazy;        /* anonymous memory a restore mapped from its image (cr/lazy.c) */
	char perms[5];
	char path[4096];
};
char *zv_cr_read_maps(const char *path, uint64_t *maplen);
int zv_cr_maps_next(const char **s, struct zv_cr_mapline *m);

struct zv_cr_stat {
	uint64_t size;
	uint64_t held;            /* bytes of its disk blocks: less than size with holes */
	int64_t mtime_s, mtime_ns;
};
int zv_cr_stat_path(const char *path, struct zv_cr_stat *st);
/* cr/shmobj.c: a SysV segment's part v (the host's id) described: its
 * id, size, key and mode; 0, or -1 refused. */
struct zv_cr_out;
long zv_cr_sysv_describe(struct zv_cr_out *o, uint64_t id, struct zv_cr_vma *v);
/* Whether a SysV segment the processes hpids[0..n) attach is attached by
 * others too: -1 with why naming it, else 0. */
long zv_cr_sysv_outside(const int *hpids, int n, char *why, size_t len);
/* Kernel memory the checkpoint itself uses: left out of the image. */
void zv_cr_scratch(void *p, uint64_t len);
#endif
