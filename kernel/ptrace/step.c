/* Single steps of a traced thread (PTRACE_SINGLESTEP): EFLAGS.TF in the
 * guest's frame, one host SIGTRAP (TRAP_TRACE) per instruction. A step
 * never shows zvisor: one that lands in a stub's moved instruction is the
 * same guest instruction as the window it came from (it goes on silently
 * until the guest rip moves), and one that reaches the stub's way into the
 * kernel (the syscall the window stands for) drops TF there, makes the
 * call, and stops after it, as a step over `syscall` does natively
 * (ptrace/layer.c posts that SIGTRAP). */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"

#define TF 0x100UL
#define TRAP_BRKPT 1
#define TRAP_TRACE 2
#define TRAP_HWBKPT 4
#define DR6_BS 0x4000UL

static uint64_t shown_ip(const struct zv_ucontext *uc)
{
	return zv_plat->guest_ip ? zv_plat->guest_ip(uc->mc.rip, uc->mc.rcx) : uc->mc.rip;
}

void zv_pt_step_begin(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (uc->mc.eflags & TF)
		return; /* the guest's own, or the tracer's through SETREGS */
	uc->mc.eflags |= TF;
	t->pt.stepping = 1;
	t->pt.step_from = shown_ip(uc);
}

void zv_pt_step_end(struct zv_thread *t, struct zv_ucontext *uc)
{
	if (t->pt.stepping)
		uc->mc.eflags &= ~TF;
	t->pt.stepping = 0;
}

/* Whether rip is zvisor's, not the guest's: a stub region, page 0's
 * trampoline, kernel text. */
static int zvisors(uint64_t rip)
{
	if (zv_in_kernel_text(rip) || zv_in_trampoline(rip))
		return 1;
	uint64_t r[64][2];
	int k = zv_plat->reserved ? zv_plat->reserved(r, 64) : 0;
	for (int i = 0; i < k; i++)
		if (rip >= r[i][0] && rip < r[i][1])
			return 1;
	return 0;
}

int zv_pt_trap(struct zv_thread *t, zv_siginfo *si, struct zv_ucontext *uc)
{
	if (zv_pt_debugreg_hit(t, si)) {
		si->si_code = TRAP_HWBKPT;
		memset(si->bytes, 0, sizeof si->bytes);
		uint64_t ip = shown_ip(uc);
		memcpy(si->bytes, &ip, 8); /* si_addr */
		return 0;
	}
	if (!t->pt.stepping || si->si_code != TRAP_TRACE)
		return 0;
	uint64_t rip = uc->mc.rip, g = shown_ip(uc);
	if (zvisors(rip) || g != rip) { /* a stub, or a trampoline's jump in padding */
		if (zv_plat->resume_ip && g != rip && zv_plat->resume_ip(g) == rip && g != t->pt.step_from) {
			/* a moved instruction of another guest address: a step */
		} else if (g == t->pt.step_from && zv_plat->resume_ip && zv_plat->resume_ip(g) == rip) {
			return 1; /* the jump into the stub: the same instruction still */
		} else {
			/* on its way into the kernel (the syscall itself, or a
			 * trampoline's jump): no more traps until the call is made */
			uc->mc.eflags &= ~TF;
			t->pt.stepping = 0;
			t->pt.step_syscall = 1;
			zv_pt_set_bounce(t);
			return 1;
		}
	}
	t->pt.dr6 = 0xffff0ff0UL | DR6_BS;
	if (t->pt.slot)
		t->pt.slot->dr[6] = t->pt.dr6;
	return 0;
}
