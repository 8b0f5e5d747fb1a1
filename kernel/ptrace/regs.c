/* The guest's registers as a tracer sees them: struct user_regs_struct from
 * the guest's frame (rip where the guest is, never a stub; orig_rax; the
 * guest's own %gs base, which zvisor keeps virtual on the fast platforms;
 * TF hidden while zvisor steps for the tracer), the USER area's offsets,
 * and the vector state as NT_PRFPREG and NT_X86_XSTATE lay it out. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"

#define TF 0x100UL
#define FLAG_MASK 0x50dd5UL /* CF PF AF ZF SF TF DF OF RF AC: what a tracer may change */
#define TASK_SIZE 0x7ffffffff000UL

static uint64_t fs_base(void)
{
	uint64_t v = 0;
	if (zv_host_fsgsbase()) /* the kernel has no TLS of its own: fs is the guest's */
		asm volatile("rdfsbase %0" : "=r"(v));
	else
		zv_sys2(__NR_arch_prctl, 0x1003 /* ARCH_GET_FS */, &v);
	return v;
}

static uint64_t gs_base(struct zv_thread *t)
{
	uint64_t v = 0;
	if (zv_plat->owns_gs)
		return t->guest_gs;
	if (zv_host_fsgsbase())
		asm volatile("rdgsbase %0" : "=r"(v));
	else
		zv_sys2(__NR_arch_prctl, 0x1004 /* ARCH_GET_GS */, &v);
	return v;
}

void zv_pt_regs_from(struct zv_thread *t, const struct zv_ucontext *uc, struct zv_pt_regs *r)
{
	const struct zv_mcontext *m = &uc->mc;
	*r = (struct zv_pt_regs){
		.r15 = m->r15, .r14 = m->r14, .r13 = m->r13, .r12 = m->r12, .rbp = m->rbp, .rbx = m->rbx,
		.r11 = m->r11, .r10 = m->r10, .r9 = m->r9, .r8 = m->r8, .rax = m->rax, .rcx = m->rcx,
		.rdx = m->rdx, .rsi = m->rsi, .rdi = m->rdi, .orig_rax = (uint64_t)t->pt.orig_rax,
		.rip = zv_plat->guest_ip ? zv_plat->guest_ip(m->rip, m->rcx) : m->rip,
		.cs = m->cs ? m->cs : 0x33, .eflags = m->eflags & ~(t->pt.stepping ? TF : 0), .rsp = m->rsp,
		.ss = m->ss ? m->ss : 0x2b, .fs_base = fs_base(), .gs_base = gs_base(t),
	};
}

void zv_pt_regs_to(struct zv_thread *t, struct zv_ucontext *uc, const struct zv_pt_regs *r)
{
	struct zv_mcontext *m = &uc->mc;
	m->r15 = r->r15, m->r14 = r->r14, m->r13 = r->r13, m->r12 = r->r12, m->rbp = r->rbp, m->rbx = r->rbx;
	m->r11 = r->r11, m->r10 = r->r10, m->r9 = r->r9, m->r8 = r->r8, m->rax = r->rax, m->rcx = r->rcx;
	m->rdx = r->rdx, m->rsi = r->rsi, m->rdi = r->rdi, m->rsp = r->rsp;
	t->pt.orig_rax = (long)r->orig_rax;
	uint64_t shown = zv_plat->guest_ip ? zv_plat->guest_ip(m->rip, m->rcx) : m->rip;
	if (r->rip != shown) /* moved: inside a window it goes on in the stub */
		m->rip = zv_plat->resume_ip ? zv_plat->resume_ip(r->rip) : r->rip;
	uint64_t keep = t->pt.stepping ? TF : 0; /* zvisor's own TF stays */
	if (r->eflags & TF)
		t->pt.stepping = 0; /* the tracer's TF is the guest's */
	m->eflags = (m->eflags & ~FLAG_MASK) | (r->eflags & FLAG_MASK) | keep;
	if (r->fs_base != fs_base())
		zv_sys2(__NR_arch_prctl, 0x1002 /* ARCH_SET_FS */, r->fs_base);
	if (r->gs_base != gs_base(t)) {
		if (zv_plat->owns_gs)
			t->guest_gs = r->gs_base;
		else
			zv_sys2(__NR_arch_prctl, 0x1001 /* ARCH_SET_GS */, r->gs_base);
	}
}

/* SETREGS refuses what the host's putreg refuses. */
int zv_pt_regs_check(const struct zv_pt_regs *r)
{
	if (r->fs_base >= TASK_SIZE || r->gs_base >= TASK_SIZE)
		return -EIO;
	if ((r->cs & 3) != 3 || (r->ss & 3) != 3)
		return -EIO;
	return 0;
}

long zv_pt_user_reg(uint64_t off)
{
	if (off >= sizeof(struct zv_pt_regs))
		return -1;
	return (long)(off / 8);
}

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static uint64_t xcr0(void)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!(r[2] & (1u << 27))) /* OSXSAVE */
		return 3;
	uint32_t lo, hi;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

long zv_pt_xstate_size(void)
{
	uint32_t r[4];
	if (xcr0() == 3)
		return 512;
	cpuid(0xd, 0, r);
	return r[1];
}

/* The frame's xsave image (fx_sw_bytes at 464 describe it), or none. */
static uint8_t *frame_fp(struct zv_ucontext *uc, uint32_t *size)
{
	uint8_t *fp = (uint8_t *)uc->mc.fpstate;
	if (!fp)
		return NULL;
	const uint32_t *sw = (const uint32_t *)(fp + 464);
	*size = sw[0] == 0x46505853U ? sw[4] : 512; /* xstate_size */
	return fp;
}

long zv_pt_fp_get(struct zv_ucontext *uc, uint8_t *buf, size_t max)
{
	uint32_t size = 0;
	uint8_t *fp = frame_fp(uc, &size);
	long want = zv_pt_xstate_size();
	if ((size_t)want > max)
		return -EIO;
	memset(buf, 0, want);
	if (fp) {
		memcpy(buf, fp, size < (uint32_t)want ? size : (uint32_t)want);
	} else { /* a new image: the initial state */
		*(uint16_t *)buf = 0x37f;
		*(uint32_t *)(buf + 24) = 0x1f80;
		*(uint32_t *)(buf + 28) = 0xffff;
	}
	/* As ptrace's regset: sw_reserved holds XCR0 (gdb reads it there). */
	memset(buf + 464, 0, 48);
	uint64_t x = xcr0();
	memcpy(buf + 464, &x, 8);
	return want;
}

long zv_pt_fp_set(struct zv_ucontext *uc, const uint8_t *buf, size_t n, int fx_only)
{
	uint32_t size = 0;
	uint8_t *fp = frame_fp(uc, &size);
	uint32_t mxcsr_mask = fp ? *(const uint32_t *)(fp + 28) : 0xffff;
	if (!mxcsr_mask)
		mxcsr_mask = 0xffbf;
	if (n < 512 || (*(const uint32_t *)(buf + 24) & ~mxcsr_mask))
		return -EINVAL;
	if (!fx_only) {
		uint64_t hdr[8];
		if (n < 576)
			return -EINVAL;
		memcpy(hdr, buf + 512, sizeof hdr);
		if ((hdr[0] & ~xcr0()) || hdr[1] /* xcomp_bv: the standard format only */)
			return -EINVAL;
		for (int i = 2; i < 8; i++)
			if (hdr[i])
				return -EINVAL;
	}
	if (!fp)
		return 0; /* no state yet to change (a new image's first stop) */
	uint8_t sw[48];
	memcpy(sw, fp + 464, sizeof sw);
	size_t len = fx_only ? 512 : (n < size ? n : size);
	memcpy(fp, buf, len);
	memcpy(fp + 464, sw, sizeof sw); /* the frame's own description stays */
	if (fx_only && size > 512)
		*(uint64_t *)(fp + 512) |= 3; /* x87 and SSE are in use now */
	return 0;
}
