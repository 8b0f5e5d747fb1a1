/* Decoders of argument lists that need more than a signature (named by id
 * in a row's trace column, sys/sysdesc.h): each prints the arguments of one
 * call, without the parentheses, as strace 6.1 does. */
#ifndef ZV_TRACE_DECODE_H
#define ZV_TRACE_DECODE_H
#include "trace/trace.h"

#define ZV_DECLARE_DECODER(n) zv_decoder zv_dec_##n;
ZV_DECODERS(ZV_DECLARE_DECODER)
ZV_RESULT_DECODERS(ZV_DECLARE_DECODER) /* results (ret '=' or after) */
/* Each id's decoder (trace/dectab.c). */
extern zv_decoder *const zv_decoders[ZV_DEC_COUNT];

/* Pieces the decoders share. OK: the call returned and did not fail, so
 * what it wrote may be shown; SEP: strace's argument separator. */
#define OK(c) ((c)->exiting && ((c)->ret >= 0 || (c)->ret <= -4096))
#define SEP(b) tb_puts(b, ", ")
void zv_dec_stat_struct(struct zv_tb *b, uint64_t p, int ok);
void zv_dec_args(struct zv_tb *b, const struct zv_tcall *c, const char *sig); /* signature letters */
void zv_dec_arg(struct zv_tb *b, const struct zv_tcall *c, int i, char kind); /* argument i */
void zv_dec_mode_type(struct zv_tb *b, uint32_t mode);                  /* S_IFREG|0644 */
void zv_dec_iovec(struct zv_tb *b, uint64_t p, long cnt, long filled);  /* [{iov_base=...}] */
void zv_dec_rlimit(struct zv_tb *b, uint64_t p, const char *inf);      /* {rlim_cur=..., rlim_max=...} */
void zv_dec_rusage(struct zv_tb *b, uint64_t p);                        /* {ru_utime=..., ...} */
void zv_dec_termios(struct zv_tb *b, uint64_t p);                       /* {c_iflag=..., ...} */
void zv_dec_iso_time(struct zv_tb *b, int64_t t, long nsec);          /* 2026-11-23T06:16:13+0000 */
void zv_dec_loff(struct zv_tb *b, uint64_t p);                          /* [offset] */
void zv_dec_fd_offsets(struct zv_tb *b, const struct zv_tcall *c);      /* fd, [off], fd, [off] */
#endif
