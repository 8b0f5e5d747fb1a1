/* The image's internals shared by the writers and readers of big sections
 * (cr/memory.c): streaming hash, section streams, the index. */
#ifndef ZV_CR_STREAM_H
#define ZV_CR_STREAM_H
#include "cr/image.h"

struct zv_cr_hasher {
	uint64_t v[4], total;
	uint8_t tail[64] __attribute__((aligned(8)));
	unsigned ntail;
};
void zv_cr_hash_init(struct zv_cr_hasher *h, uint64_t seed);
void zv_cr_hash_update(struct zv_cr_hasher *h, const void *p, uint64_t len);
uint64_t zv_cr_hash_final(const struct zv_cr_hasher *h);

struct zv_cr_stream {
	struct zv_cr_out *o;
	int fd;
	char name[48];
	uint64_t off;          /* where the next byte goes (holes included) */
	int mode;              /* the file's mode once closed */
	struct zv_cr_hasher h;
};
long zv_cr_stream_open(struct zv_cr_out *o, struct zv_cr_stream *s, const char *name);
long zv_cr_stream_write(struct zv_cr_stream *s, const void *p, uint64_t len);
/* Leaves a hole of len bytes (not hashed; read back as zeros). */
long zv_cr_stream_skip(struct zv_cr_stream *s, uint64_t len);
long zv_cr_stream_close(struct zv_cr_stream *s);
long zv_cr_write_index(struct zv_cr_out *o, const char *build);
long zv_cr_write_index_as(struct zv_cr_out *o, const char *build, const char *file);

long zv_cr_read_index(struct zv_cr_in *in, const char *build);
const struct zv_cr_section *zv_cr_section(struct zv_cr_in *in, const char *name);
void *zv_cr_alloc(struct zv_cr_in *in, uint64_t len);
/* An fd on section name's file, size checked (-ENOENT: no such section). */
long zv_cr_open_section(struct zv_cr_in *in, const char *name, const struct zv_cr_section **sec);
long zv_cr_read_into(struct zv_cr_in *in, int fd, void *p, uint64_t len, struct zv_cr_hasher *h, const char *name);
long zv_cr_check_hash(struct zv_cr_in *in, const struct zv_cr_section *sec, const struct zv_cr_hasher *h);
#endif
