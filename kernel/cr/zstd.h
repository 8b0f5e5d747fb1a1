/* The host's zstd for compressed sections (cr/zstd.c). */
#ifndef ZV_CR_ZSTD_H
#define ZV_CR_ZSTD_H
const char *zv_cr_zstd_path(void);                 /* NULL: not installed */
long zv_cr_zstd_compress(const char *src, const char *dst); /* 0 or -errno */
long zv_cr_zstd_reader(const char *path, long *pid); /* a pipe of path's bytes, decompressed */
long zv_cr_zstd_wait(long pid);                     /* its exit status */
#endif
