/* The targets of a function's jump tables (intercept/jumptab.c). */
#ifndef ZV_INTERCEPT_JUMPTAB_H
#define ZV_INTERCEPT_JUMPTAB_H
#include <stdint.h>

/* Reads n bytes of the image at run address a into dst; 0 on success. */
typedef int (*zv_image_reader)(void *ctx, uint64_t a, void *dst, uint64_t n);

/* One decoded function [code, code + len), running at at, with starts (a
 * bitmap of its instruction starts) and the offsets of its nij indirect
 * jumps; leas: the run addresses that its rip-relative `lea`s compute.
 * Marks in targets (a bitmap of offsets) every address that a jump table
 * of one of these jumps may send to. Returns 0 when each jump is a switch
 * whose table and bound the code proves, else -1 (then targets may hold
 * some of them: the caller treats the function as not judged). */
int zv_jumptab_mark(const uint8_t *code, uint64_t len, uint64_t at, const uint8_t *starts, uint8_t *targets,
		    const uint32_t *ij, int nij, const uint64_t *leas, int nleas, zv_image_reader read, void *ctx);
#endif
