/* Freestanding string and memory helpers (gcc may emit calls to the mem*
 * functions for struct copies, so they keep their standard names). */
#ifndef ZV_LIB_STRING_H
#define ZV_LIB_STRING_H
#include <stddef.h>
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t zv_strlen(const char *s);
int zv_strcmp(const char *a, const char *b);
int zv_strncmp(const char *a, const char *b, size_t n);
/* The value of NAME in an environment array (NULL-terminated), or NULL. */
const char *zv_env_value(char **envp, const char *name);
char *zv_strchr(const char *s, int c);
unsigned long zv_parse_hex(const char *s, const char **end);
char *zv_strrchr(const char *s, int c);
/* Copies at most n-1 bytes and always terminates; returns strlen(src). */
size_t zv_strlcpy(char *d, const char *s, size_t n);
int zv_startswith(const char *s, const char *prefix);
/* Parses a decimal unsigned number; returns -1 unless all of s is digits. */
long zv_parse_ulong(const char *s, unsigned long *out);
/* A decimal number with an optional '-' at s; *end is where it stops. */
long zv_parse_dec(const char *s, const char **end);
#endif
