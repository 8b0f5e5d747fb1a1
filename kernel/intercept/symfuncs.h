/* Function bounds from an ELF symbol table (intercept/symfuncs.c). */
#ifndef ZV_INTERCEPT_SYMFUNCS_H
#define ZV_INTERCEPT_SYMFUNCS_H
#include <stddef.h>
#include <stdint.h>
#include <elf.h>

/* The file's functions as sorted (start, size) pairs of image addresses in
 * *out, inside kernel memory *mem of *msize bytes (the caller unmaps it);
 * the count, or -1. */
long zv_symtab_functions(int fd, const Elf64_Ehdr *eh, int dynsym_ok, void **mem, size_t *msize, int32_t **out);
/* The function of n pairs that holds image address v; *next: where the
 * next one starts (*start + *len for the last). */
int zv_symtab_function_of(const int32_t *pairs, long n, uint64_t v, uint64_t *start, uint64_t *len, uint64_t *next);
/* Sorts n (key, value) int32 pairs by key. */
void zv_sort_pairs(int32_t *v, long n);
#endif
