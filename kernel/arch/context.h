/* The host's signal frame and related ABI structures (x86-64), as the host
 * kernel lays them out. Defined here rather than taken from libc headers,
 * whose ucontext_t differs from the kernel's. */
#ifndef ZV_ARCH_CONTEXT_H
#define ZV_ARCH_CONTEXT_H
#include <stdint.h>
#include <stddef.h>

struct zv_mcontext { /* struct sigcontext */
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate; /* xsave area, 64-byte aligned; 0 if none */
	uint64_t reserved1[8];
};

struct zv_stack { /* stack_t */
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t pad;
	uint64_t ss_size;
};

struct zv_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	struct zv_stack uc_stack;
	struct zv_mcontext mc;
	uint64_t uc_sigmask;
};

typedef struct {
	int32_t si_signo, si_errno, si_code, pad;
	union {
		uint8_t bytes[112];
		struct { int32_t pid; uint32_t uid; } kill;
		struct { uint64_t call_addr; int32_t syscall; uint32_t arch; } sys;
	};
} zv_siginfo;

struct zv_sigframe { /* struct rt_sigframe */
	uint64_t pretcode;
	struct zv_ucontext uc;
	zv_siginfo info;
};

struct zv_ksigaction { /* the kernel's struct sigaction */
	uint64_t handler, flags, restorer, mask;
};

#define ZV_SIG_DFL 0UL
#define ZV_SIG_IGN 1UL
#define ZV_SA_NOCLDSTOP 0x00000001UL
#define ZV_SA_NOCLDWAIT 0x00000002UL
#define ZV_SA_SIGINFO 0x00000004UL
#define ZV_SA_RESTORER 0x04000000UL
#define ZV_SA_ONSTACK 0x08000000UL
#define ZV_SA_RESTART 0x10000000UL
#define ZV_SA_NODEFER 0x40000000UL
#define ZV_SA_RESETHAND 0x80000000UL
#define ZV_SS_ONSTACK 1
#define ZV_SS_DISABLE 2
#define ZV_SS_AUTODISARM (1U << 31)
#define ZV_MINSIGSTKSZ 2048
#define ZV_SIG_BLOCK 0
#define ZV_SIG_UNBLOCK 1
#define ZV_SIG_SETMASK 2
#define ZV_SIGBIT(s) (1UL << ((s) - 1))

/* Size of the xsave area a frame's fpstate points at (with its trailer). */
static inline size_t zv_fpstate_size(const void *fp)
{
	const uint32_t *sw = (const uint32_t *)((const char *)fp + 464);
	if (sw[0] == 0x46505853U) /* FP_XSTATE_MAGIC1: extended_size follows */
		return sw[1];
	return 512; /* legacy fxsave image only */
}

/* Assembly entry points (arch/entry.S). */
void zv_sigreturn(void);
__attribute__((noreturn)) void zv_enter_frame(void *uc);
/* arch/crjmp.S: fn(arg) on the stack below sp; fn never returns (restore's
 * first stack, a new image's first thread's). */
__attribute__((noreturn)) void zv_call_on_stack(void *sp, void (*fn)(void *), void *arg);
__attribute__((noreturn)) void zv_enter_guest(uint64_t sp, const void *img, size_t len, uint64_t entry,
					      uint64_t scratch_sp);
long zv_clone_raw(unsigned long flags, void *child_sp, void *ptid, void *ctid, unsigned long tls,
		  void (*fn)(void));
long zv_clone3_raw(void *args, size_t size, void (*fn)(void));
long zv_sc_cancellable(const long args[7], volatile int *pending);
extern char zv_sc_begin[], zv_sc_end[], zv_sc_cancel[];
struct zv_thread;
extern char zv_guest_jump[]; /* the jump to a new image's entry point */
long zv_int80(const long args[7]);
#endif
