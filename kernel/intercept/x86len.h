/* x86-64 instruction lengths and the syscall sites of a code region
 * (intercept/x86len.c). Freestanding: no libc, no state, no vector code. */
#ifndef ZV_INTERCEPT_X86LEN_H
#define ZV_INTERCEPT_X86LEN_H
#include <stddef.h>
#include <stdint.h>

/* Length (1..15) of the 64-bit-mode instruction at p, of which avail bytes
 * may be read; -1 when the bytes are no valid instruction (an undefined or
 * invalid opcode, more than 15 bytes, or more than avail). */
int zv_x86_insn_len(const uint8_t *p, size_t avail);

/* Linear sweep of [code, code + len), mapped at run-time address base:
 * stores in out[] the run-time address of each plain `syscall` (exactly the
 * bytes 0f 05) that lies on an instruction boundary the sweep trusts (see
 * x86len.c) and returns how many, at most max. */
int zv_x86_find_syscalls(const uint8_t *code, size_t len, uint64_t base, uint64_t *out, int max);
#endif
