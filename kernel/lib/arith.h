/* Integer arithmetic the kernel needs without libgcc. */
#ifndef ZV_LIB_ARITH_H
#define ZV_LIB_ARITH_H
#include <stdint.h>

/* a * b / c for c > 0, rounded down (up if up is set), or UINT64_MAX when
 * the quotient needs more than 64 bits. The product has 128 bits; the
 * division is the CPU's (gcc would call libgcc's __udivti3 for a 128-bit
 * one). */
static inline uint64_t zv_umuldiv(uint64_t a, uint64_t b, uint64_t c, int up)
{
	unsigned __int128 p = (unsigned __int128)a * b;
	uint64_t hi = (uint64_t)(p >> 64), lo = (uint64_t)p, q, r;
	if (hi >= c)
		return UINT64_MAX;
	__asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "r"(c));
	if (up && r && q != UINT64_MAX)
		q++;
	return q;
}
#endif
