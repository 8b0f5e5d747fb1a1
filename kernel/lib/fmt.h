/* Minimal printf-style formatting: %s %c %d %i %u %x %p and the l/z
 * length modifiers, with an optional field width and '-' or '0' flags. */
#ifndef ZV_LIB_FMT_H
#define ZV_LIB_FMT_H
#include <stdarg.h>
#include <stddef.h>
int zv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int zv_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Formats into a stack buffer and writes it with one write(2). */
int zv_dprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *zv_strerror(int err);
#endif
