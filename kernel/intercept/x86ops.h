/* An instruction's memory operand and effects, for the red-zone check
 * (intercept/x86ops.c). */
#ifndef ZV_INTERCEPT_X86OPS_H
#define ZV_INTERCEPT_X86OPS_H
#include <stddef.h>
#include <stdint.h>

#define ZV_X86_RIP 16                 /* base: rip-relative */
#define ZV_X86_RSP_UNKNOWN 0x7fffffffL /* rsp_change: set in a way not followed */
enum { ZV_X86_OTHER, ZV_X86_JMP, ZV_X86_JCC, ZV_X86_CALL, ZV_X86_RET, ZV_X86_JMP_INDIRECT };

struct zv_x86_insn {
	int len;
	int flow;        /* ZV_X86_*: control flow */
	int32_t rel;     /* JMP/JCC: target = next instruction + rel */
	int has_mem;     /* a ModRM memory operand: */
	int base, index; /* registers 0-15, -1 none, or ZV_X86_RIP */
	int64_t disp;
	int disp_at;      /* base ZV_X86_RIP: offset of its disp32 in the instruction */
	long rsp_change; /* bytes added to rsp, or ZV_X86_RSP_UNKNOWN */
	int pushes;      /* a push: it writes the 8 bytes below rsp */
	int width;       /* bytes the memory operand may span (0: lea, no access) */
	int exposes_rsp; /* copies rsp, or an address computed from it, anywhere but into rsp */
};

/* Decodes the instruction at p; returns its length or -1. */
int zv_x86_decode(const uint8_t *p, size_t avail, struct zv_x86_insn *out);
#endif
