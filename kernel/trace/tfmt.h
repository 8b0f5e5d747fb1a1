/* Formatting trace lines as strace prints them: a line buffer, guest memory
 * read without trusting it, strings with strace's quoting, flags and enums
 * by name. */
#ifndef ZV_TRACE_TFMT_H
#define ZV_TRACE_TFMT_H
#include <stdint.h>
#include <stddef.h>
#include "trace/names.h"

#define ZV_TB_SIZE 8192

/* One event's text; output past the end is dropped (the line ends "..."). */
struct zv_tb {
	size_t len;
	int full;
	char buf[ZV_TB_SIZE];
};

/* one byte; full, and dropped, past the buffer's last 5 (kept for "...\n") */
static inline void tb_putc(struct zv_tb *b, char c)
{
	if (b->len < sizeof b->buf - 5)
		b->buf[b->len++] = c;
	else
		b->full = 1;
}
void tb_putn(struct zv_tb *b, const char *s, size_t n); /* n bytes; cut and full as tb_puts */
size_t zv_strlen(const char *s);
/* A string; a literal's length is the compiler's (most of a line's words) */
static inline __attribute__((always_inline)) void tb_puts(struct zv_tb *b, const char *s)
{
	tb_putn(b, s, __builtin_constant_p(__builtin_strlen(s)) ? __builtin_strlen(s) : zv_strlen(s));
}
/* A number as tb_printf's %ld (neg: v is the magnitude of a negative) or
 * %lx, padded with spaces to width (negative: on the right, as %-5d), as
 * tb_printf would print it but without parsing a format: every line has a
 * few. */
void tb_num(struct zv_tb *b, unsigned long v, int hex, int neg, int width);
static inline void tb_dec(struct zv_tb *b, long v) { tb_num(b, v < 0 ? -(unsigned long)v : (unsigned long)v, 0, v < 0, 0); }
static inline void tb_udec(struct zv_tb *b, unsigned long v) { tb_num(b, v, 0, 0, 0); }
/* 0x%lx */
static inline void tb_hex(struct zv_tb *b, unsigned long v) { tb_putn(b, "0x", 2); tb_num(b, v, 1, 0, 0); }
void tb_printf(struct zv_tb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* zv_peek: guest memory, never faulting (sys/calls.h). */

/* The options that shape the text (-s, -y, -X raw: see trace.h). */
extern int zv_tb_strsize;

/* Guest data as strace prints it. */
void tb_ptr(struct zv_tb *b, uint64_t p);                  /* NULL or 0x... */
void tb_path(struct zv_tb *b, uint64_t p);                 /* "..." up to PATH_MAX, NULL, or the address */
void tb_str(struct zv_tb *b, uint64_t p);                  /* NUL-terminated, cut at -s: "..."... */
void tb_buf(struct zv_tb *b, uint64_t p, long n);          /* n bytes, cut at -s */
void tb_quote(struct zv_tb *b, const char *s, size_t n, int cut); /* kernel bytes */
void tb_fd(struct zv_tb *b, long fd);                      /* 3, with -y 3</path> */
void tb_atfd(struct zv_tb *b, long fd);                    /* AT_FDCWD or tb_fd */
/* v as NAME|NAME|0x..., or zero (e.g. "0") when v is 0. */
void tb_flags(struct zv_tb *b, uint64_t v, const struct zv_names *t, const char *zero);
/* v as its NAME, else printed with the zv_snprintf format unknown (default
 * "0x%lx"; strace writes e.g. 0x99 followed by a comment naming the kind). */
void tb_enum(struct zv_tb *b, uint64_t v, const struct zv_names *t, const char *unknown);
void tb_mode(struct zv_tb *b, uint64_t mode);              /* 0644 */
void tb_signame(struct zv_tb *b, int sig);                 /* SIGINT, or the number */
void tb_sigset(struct zv_tb *b, uint64_t p, uint64_t size); /* [INT TERM] as strace */
void tb_timespec(struct zv_tb *b, uint64_t p);             /* {tv_sec=1, tv_nsec=0} */
#endif
