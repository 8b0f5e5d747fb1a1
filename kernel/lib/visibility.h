/* Included first in every kernel file (see Makefile). Every symbol is local
 * to the static image, so code can address it rip-relatively: the image sits
 * above 4 GiB, where 32-bit absolute addresses cannot reach. */
#pragma GCC visibility push(hidden)
