/* The guarded calls: kernel code that reads guest memory runs inside one,
 * and a fault on a bad guest pointer resumes at its frame with -EFAULT
 * (sys/hostsig.c moves rip to zv_guard_fault), as the host's uaccess
 * fixups do. Kernel text, exempt from interception. */
	.text

/* long zv_call_guarded(struct zv_thread *t, struct zv_ucontext *uc, long nr,
 *                      uint64_t *resume_sp)
 * Calls zv_syscall(t, uc, nr) after storing in *resume_sp the stack pointer
 * to resume from. A fault on guest memory inside the call (a bad pointer the
 * guest passed) makes the signal handler continue at zv_guard_fault with that
 * stack pointer: the call returns -EFAULT, as the host's would. */
	.globl zv_call_guarded, zv_guard_fault
	.hidden zv_call_guarded, zv_guard_fault
	.type zv_call_guarded,@function
/* The frame of a guarded call: callee-saved registers, which zv_guard_out
 * restores on both paths (a normal return and a fault). */
.macro guard_frame
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
.endm

zv_call_guarded:
	guard_frame
	mov %rsp, (%rcx)		/* where a fault resumes */
	sub $8, %rsp			/* 16-byte alignment for the call */
	call zv_syscall
	add $8, %rsp
zv_guard_out:
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
zv_guard_fault:
	mov $-14, %rax			/* -EFAULT */
	jmp zv_guard_out

/* long zv_cmpxchg16_guarded(uint16_t *p, uint16_t old, uint16_t new,
 *                           uint64_t *resume_sp)
 * Atomically replaces *p with new if it holds old: 1 if it did, 0 if not,
 * -EFAULT if p faulted (the guest changed the page's protection meanwhile).
 * Same frame as zv_call_guarded, so a fault resumes through zv_guard_fault. */
	.globl zv_cmpxchg16_guarded
	.hidden zv_cmpxchg16_guarded
	.type zv_cmpxchg16_guarded,@function
zv_cmpxchg16_guarded:
	guard_frame			/* the frame zv_guard_out unwinds */
	mov %rsp, (%rcx)		/* where a fault resumes */
	mov %esi, %eax			/* ax = the expected bytes */
	lock cmpxchg %dx, (%rdi)	/* one atomic 16-bit exchange */
	sete %al
	movzbl %al, %eax
	jmp zv_guard_out

/* long zv_cmpxchg32_guarded(uint32_t *p, uint32_t old, uint32_t new,
 *                           uint64_t *resume_sp)
 * The same for 32 bits (a futex word). */
	.globl zv_cmpxchg32_guarded
	.hidden zv_cmpxchg32_guarded
	.type zv_cmpxchg32_guarded,@function
zv_cmpxchg32_guarded:
	guard_frame
	mov %rsp, (%rcx)		/* where a fault resumes */
	mov %esi, %eax			/* eax = the expected word */
	lock cmpxchg %edx, (%rdi)
	sete %al
	movzbl %al, %eax
	jmp zv_guard_out

/* long zv_copy_guarded(void *dst, const void *src, size_t n, uint64_t *resume_sp)
 * Copies n bytes: 0, or -EFAULT if either side faulted (guest memory the
 * tracer reads). Same frame as zv_call_guarded. */
	.globl zv_copy_guarded
	.hidden zv_copy_guarded
	.type zv_copy_guarded,@function
zv_copy_guarded:
	guard_frame			/* the frame zv_guard_out unwinds */
	mov %rsp, (%rcx)		/* where a fault resumes */
	mov %rdx, %rcx			/* count */
	rep movsb			/* rdi = dst, rsi = src */
	xor %eax, %eax
	jmp zv_guard_out

/* long zv_fn_guarded(void *arg, long (*fn)(void *), uint64_t *resume_sp)
 * fn(arg) under a guard of its own: a fault on guest memory inside it
 * returns -EFAULT from here, to the caller (a layer, which then sees the
 * call's result as the host's tracer would), not from the outer guard. */
	.globl zv_fn_guarded
	.hidden zv_fn_guarded
	.type zv_fn_guarded,@function
zv_fn_guarded:
	guard_frame
	mov %rsp, (%rdx)		/* where a fault resumes */
	sub $8, %rsp			/* 16-byte alignment for the call */
	call *%rsi			/* rdi = arg */
	add $8, %rsp
	jmp zv_guard_out

	.section .note.GNU-stack,"",@progbits
