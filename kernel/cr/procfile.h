/* Reading the host's /proc files for the checkpoint's resource savers
 * (cr/fds.c, cr/timers.c): whole small files, their "key: value" lines and
 * the numbers in them. */
#ifndef ZV_CR_PROCFILE_H
#define ZV_CR_PROCFILE_H
#include <stddef.h>
#include <stdint.h>

/* Reads path (at most size - 1 bytes) into buf, NUL-terminated: its length
 * or -errno. */
long zv_cr_read_file(const char *path, char *buf, size_t size);
/* The value of the line starting with key in text (past blanks), or NULL;
 * after, when not NULL, is where the search starts. */
const char *zv_cr_field(const char *text, const char *key);
/* Numbers at s (leading blanks skipped); *end is where they stop. */
uint64_t zv_cr_oct(const char *s, const char **end);
uint64_t zv_cr_hex(const char *s, const char **end);
int64_t zv_cr_dec(const char *s, const char **end);
/* The next line of text after p, or NULL at the end. */
const char *zv_cr_next_line(const char *p);
#endif
