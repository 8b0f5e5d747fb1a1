/* Checkpoint/restore's two jumps (cr/freeze.c, cr/restore.c): a thread that
 * parks saves the registers the C ABI preserves, and a restored thread
 * comes back to that point on its own kernel stack (restored memory). C
 * cannot name rsp and rip; this is setjmp/longjmp without the signal mask,
 * which cr/freeze.c saves itself. */
	.text

/* int zv_cr_setjmp(uint64_t buf[8]): 0 now; 1 when zv_cr_longjmp(buf) comes back. */
	.globl zv_cr_setjmp
	.hidden zv_cr_setjmp
	.type zv_cr_setjmp,@function
zv_cr_setjmp:
	mov %rbx, 0(%rdi)		/* callee-saved registers */
	mov %rbp, 8(%rdi)
	mov %r12, 16(%rdi)
	mov %r13, 24(%rdi)
	mov %r14, 32(%rdi)
	mov %r15, 40(%rdi)
	lea 8(%rsp), %rdx		/* the caller's rsp after our return */
	mov %rdx, 48(%rdi)
	mov (%rsp), %rdx		/* our return address */
	mov %rdx, 56(%rdi)
	xor %eax, %eax			/* 0: the first return */
	ret

/* void zv_cr_longjmp(const uint64_t buf[8]): returns 1 from buf's zv_cr_setjmp. */
	.globl zv_cr_longjmp
	.hidden zv_cr_longjmp
	.type zv_cr_longjmp,@function
zv_cr_longjmp:
	mov 0(%rdi), %rbx
	mov 8(%rdi), %rbp
	mov 16(%rdi), %r12
	mov 24(%rdi), %r13
	mov 32(%rdi), %r14
	mov 40(%rdi), %r15
	mov 48(%rdi), %rsp		/* the parked frame's stack */
	mov $1, %eax			/* 1: the restored return */
	jmp *56(%rdi)

/* void zv_call_on_stack(void *sp, void (*fn)(void *), void *arg): runs fn(arg)
 * on the stack below sp; fn never returns (restore leaves its first stack,
 * which the image may cover; a new image's first thread runs on its kernel
 * stack). */
	.globl zv_call_on_stack
	.hidden zv_call_on_stack
	.type zv_call_on_stack,@function
zv_call_on_stack:
	mov %rdi, %rsp			/* the new stack */
	and $-16, %rsp			/* ABI alignment at the call */
	mov %rdx, %rdi			/* fn's argument */
	xor %ebp, %ebp			/* outermost frame */
	call *%rsi
	hlt				/* fn never returns */
