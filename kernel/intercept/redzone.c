/* Whether a syscall site may become `call *%rax`, whose push overwrites the
 * 8 bytes below the guest's rsp: the top slot of the SysV red zone, where a
 * leaf function may keep live data across an inline `syscall`.
 *
 * The decision is taken once, when the site first arrives through SIGSYS, so
 * the guest's registers at that moment are known. The code after the site
 * is decoded along every path (both ways at conditional jumps, following
 * direct jumps) until each path returns, calls (a call overwrites the same
 * slot natively, so nothing live can be there) or jumps indirectly. The site
 * stays on the SIGSYS path if any instruction on the way has a memory operand
 * that may touch [rsp-8, rsp), computed from the known register values and
 * the tracked changes of rsp, if a syscall argument points into the red zone
 * (write(fd, rsp - 16, 16) would read the clobbered slot), or if the code
 * cannot be decoded within the budget. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "intercept/x86len.h"
#include "intercept/x86ops.h"

#define CODE_WINDOW 1024 /* bytes of code read at a time */
#define BUDGET 256       /* instructions decoded in all */
#define MAX_PATHS 32

struct path {
	uint64_t ip;
	long rsp_delta; /* rsp at ip minus rsp at the syscall */
};

/* Reads guest code without risking a fault in the kernel. */
static long read_guest(uint64_t addr, void *buf, size_t len)
{
	struct { void *base; size_t len; } local = { buf, len }, remote = { (void *)addr, len };
	return zv_sys6(__NR_process_vm_readv, zv_proc.hpid, (long)&local, 1, (long)&remote, 1, 0);
}

static uint64_t reg_value(const struct zv_mcontext *mc, int r)
{
	switch (r) {
	case 0: return mc->rax; case 1: return mc->rcx; case 2: return mc->rdx; case 3: return mc->rbx;
	case 4: return mc->rsp; case 5: return mc->rbp; case 6: return mc->rsi; case 7: return mc->rdi;
	case 8: return mc->r8; case 9: return mc->r9; case 10: return mc->r10; case 11: return mc->r11;
	case 12: return mc->r12; case 13: return mc->r13; case 14: return mc->r14; default: return mc->r15;
	}
}

/* Whether the memory operand of in may overlap the slot [slot, slot + 8).
 * mc NULL: no register value is known (a check at load, see
 * zv_site_safe_static); the slot is then 8 bytes below rsp at the site,
 * and only rsp-based operands can reach it. */
static int touches_slot(const struct zv_x86_insn *in, const struct zv_mcontext *mc, long rsp_delta,
			uint64_t slot)
{
	if (!in->has_mem || in->base == ZV_X86_RIP)
		return 0;
	if (in->base < 0)
		return 0; /* an absolute address */
	if (in->index >= 0)
		return in->base == 4; /* unknown index: only rsp-based ones are suspect */
	if (!mc) {
		long ea = rsp_delta + in->disp; /* from rsp at the site */
		return in->base == 4 && ea < 0 && ea + in->width > -8;
	}
	uint64_t base;
	if (in->base == 4)
		base = mc->rsp + rsp_delta;
	else if (in->base == 0 || in->base == 1 || in->base == 11)
		return 0; /* rax holds the result, rcx and r11 what syscall leaves */
	else
		base = reg_value(mc, in->base);
	uint64_t ea = base + (uint64_t)in->disp;
	return ea < slot + 8 && ea + in->width > slot;
}

/* Whether no instruction after site, on any path, may touch the slot the
 * call's push overwrites (see touches_slot for mc). */
static int code_after_safe(uint64_t site, const struct zv_mcontext *mc)
{
	uint64_t slot = mc ? mc->rsp - 8 : 0;
	uint8_t code[CODE_WINDOW];
	uint64_t lo = 0;
	long got = 0; /* code holds [lo, lo + got) */
	struct path paths[MAX_PATHS];
	uint64_t seen[MAX_PATHS]; /* jump targets explored already: loops end there */
	int npaths = 0, nseen = 0, budget = BUDGET;
	paths[npaths++] = (struct path){ site + 2, 0 };
	while (npaths > 0) {
		struct path p = paths[--npaths];
		for (;;) {
			if (p.ip == site)
				break; /* back at the syscall: judged already */
			if (budget-- <= 0)
				return 0; /* too far to judge */
			if (p.ip < lo || p.ip + 15 > lo + (uint64_t)got) {
				/* read the code from here on (a jump may lead
				 * to another function's) */
				lo = p.ip;
				got = read_guest(lo, code, sizeof code);
				if (got <= 0)
					return 0;
			}
			struct zv_x86_insn in;
			const uint8_t *c = code + (p.ip - lo);
			if (zv_x86_decode(c, lo + got - p.ip, &in) < 0)
				return 0;
			if (touches_slot(&in, mc, p.rsp_delta, slot))
				return 0;
			if (in.pushes && p.rsp_delta == 0)
				break; /* it overwrites the slot: what was there is dead */
			/* A copy of rsp made here could reach the slot under
			 * another name (the known register values are those
			 * at the site). */
			if (in.exposes_rsp)
				return 0;
			uint64_t next = p.ip + in.len;
			if (in.flow == ZV_X86_RET || in.flow == ZV_X86_CALL || in.flow == ZV_X86_JMP_INDIRECT)
				break;
			if (in.flow == ZV_X86_JMP || in.flow == ZV_X86_JCC) {
				uint64_t target = next + in.rel;
				if (in.flow == ZV_X86_JCC) {
					if (npaths == MAX_PATHS)
						return 0;
					paths[npaths++] = (struct path){ next, p.rsp_delta };
				}
				int known = 0;
				for (int i = 0; i < nseen; i++)
					known |= seen[i] == target;
				if (known)
					break; /* a loop: its code is judged on the first pass */
				if (nseen == MAX_PATHS)
					return 0;
				seen[nseen++] = target;
				next = target;
			}
			if (in.rsp_change == ZV_X86_RSP_UNKNOWN)
				break; /* a new frame: the old red zone is dead */
			p.rsp_delta += in.rsp_change;
			p.ip = next;
		}
	}
	return 1;
}

/* How many argument registers call nr reads: what zvisor trace knows of
 * it, or all six. (Registers beyond those often hold stale stack
 * addresses, which must not keep a site off the fast path.) */
static int args_read(uint64_t nr)
{
	const struct zv_sysdesc *d = nr < 512 ? &zv_sysent[nr].trace : NULL;
	return d && (d->sig || d->decode || d->nargs) ? d->nargs : 6;
}

int zv_site_safe(uint64_t site, void *ucv)
{
	const struct zv_mcontext *mc = &((struct zv_ucontext *)ucv)->mc;
	uint64_t rsp = mc->rsp;
	/* A syscall argument that points into the red zone. */
	const uint64_t args[6] = { mc->rdi, mc->rsi, mc->rdx, mc->r10, mc->r8, mc->r9 };
	for (int i = 0, n = args_read(mc->rax); i < n; i++)
		if (args[i] >= rsp - 128 && args[i] < rsp)
			return 0;
	return code_after_safe(site, mc);
}

/* The same decision without register values, for a site found at load in
 * a function (from its start, as its unwind entry gives it) that never
 * copies rsp anywhere (zv_x86_insn.exposes_rsp): then no register but rsp
 * can point into the function's red zone, because a pointer the caller
 * passed points above the return address, so no argument is a red-zone
 * buffer, and only rsp-based operands after the site can touch the slot.
 * The walk after the site checks those, and that the code it passes
 * through (another function's, after a jump) copies rsp nowhere either. */
int zv_site_safe_static(uint64_t site)
{
	return code_after_safe(site, NULL);
}
