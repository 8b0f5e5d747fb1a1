/* Function bounds from a Go binary's pclntab (intercept/gofuncs.c). */
#ifndef ZV_INTERCEPT_GOFUNCS_H
#define ZV_INTERCEPT_GOFUNCS_H
#include <stddef.h>
#include <stdint.h>
#include <elf.h>

/* The functions of the Go binary mapped read-only at file (size bytes,
 * ELF header eh, program headers ph[nph]) as sorted (start, size) pairs of
 * image addresses in *out, inside kernel memory *mem of *msize bytes (the
 * caller unmaps it); the count, or -1 when it has no valid table. */
long zv_gopclntab_functions(const uint8_t *file, uint64_t size, const Elf64_Ehdr *eh, const Elf64_Phdr *ph,
			    int nph, void **mem, size_t *msize, int32_t **out);
#endif
