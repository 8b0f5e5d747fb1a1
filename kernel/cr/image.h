/* A checkpoint image (docs/CHECKPOINT.md): a directory holding index.json
 * and one raw file per section, each listed in the index with its size and
 * hash. Written into DIR.tmp.PID and renamed to DIR only when complete, so
 * that DIR is whole or absent; read back and checked before anything of it
 * is used. */
#ifndef ZV_CR_IMAGE_H
#define ZV_CR_IMAGE_H
#include <stdint.h>

#define ZV_CR_VERSION 2        /* what this zvisor writes; it reads 1 and 2 */
#define ZV_CR_VERSION_MIN 1
#define ZV_CR_MAX_SECTIONS 4096

struct zv_cr_section {
	char name[48];     /* the file is NAME.bin */
	uint64_t size;     /* of the file (a sparse one's holes included) */
	uint64_t data;     /* the bytes hashed: size, less the holes of a sparse "pages" */
	uint64_t hash;     /* zv_cr_hash of those bytes, in file order */
	int zstd;          /* stored compressed, as NAME.bin.zst */
};

/* An image being written, by the checkpointing thread of a frozen guest. */
struct zv_cr_out {
	int dirfd;                  /* DIR.tmp.PID */
	char why[256];              /* the refusal's reason, one line */
	unsigned nsec;
	struct zv_cr_section sec[ZV_CR_MAX_SECTIONS];
};

/* An image being read by `zvisor restore`, index already checked. */
struct zv_cr_in {
	int dirfd;
	int errfd;                  /* a copy of the restorer's stderr (> 2), for a failure after the fds are back */
	int version;                /* the index's */
	char why[256];
	void *arena;                /* restore's scratch memory (NULL: kernel memory) */
	long zstd_pid;              /* the decompressor of the section being read */
	uint64_t arena_len, arena_used;
	unsigned nsec;
	struct zv_cr_section sec[ZV_CR_MAX_SECTIONS];
};

/* Writes section NAME (NAME.bin) with len bytes. 0 or -errno (why set). */
long zv_cr_put(struct zv_cr_out *o, const char *name, const void *p, uint64_t len);
/* Refuses the checkpoint: sets o->why from fmt (lib/fmt.c's formats), and
 * returns -1. The caller prints `zvisor: checkpoint: WHY` and writes no DIR. */
long zv_cr_refuse(struct zv_cr_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether DIR is taken for a new image: it exists and is not an empty
 * directory (an empty one, as CRIU's users make it first, is replaced by
 * the finished image's rename). */
int zv_cr_dir_taken(const char *dir);
/* Section NAME's bytes, read into kernel memory and checked against its
 * size and hash: NULL with *len = 0 when the image has no such section;
 * (void *)-1 with in->why set when the file is damaged. Freed by
 * zv_cr_release. */
const void *zv_cr_get(struct zv_cr_in *in, const char *name, uint64_t *len);
void zv_cr_release(const void *p, uint64_t len);
uint64_t zv_cr_hash(const void *p, uint64_t len, uint64_t seed);
#endif
