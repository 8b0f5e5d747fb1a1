/* The few pieces of the kernel that C cannot express: process entry, the
 * jump into the guest, the signal restorer, clone children that start on a
 * fresh stack, and the host syscall that a signal can cancel before it
 * starts. Everything here is kernel text, which the interception platforms
 * exempt. */
	.text

/* _start: the host's execve enters here with rsp at argc. */
	.globl _start
	.hidden _start
	.type _start,@function
_start:
	xor %ebp, %ebp			/* outermost frame */
	mov %rsp, %rdi			/* zv_main(initial stack pointer) */
	and $-16, %rsp			/* ABI alignment for the C call */
	call zv_main
	hlt				/* zv_main never returns */

/* void zv_enter_guest(uint64_t sp, const void *img, size_t len,
 *                     uint64_t entry, uint64_t scratch_sp, then)
 * Copies the prepared stack image to [sp, sp+len) and starts the guest at
 * entry with every general register zero, as the host's execve leaves them;
 * or, when then is not NULL, calls then(sp, entry) on the scratch stack,
 * which enters the guest itself (a tracer's exec stop comes first). */
	.globl zv_enter_guest
	.hidden zv_enter_guest
	.type zv_enter_guest,@function
zv_enter_guest:
	mov %r8, %rsp			/* copy on a scratch stack: the image may cover our frames */
	mov %rcx, %r8			/* r8 = entry */
	mov %r9, %r11			/* r11 = then, or 0 */
	mov %rdi, %r9			/* r9 = guest sp */
	mov %rdx, %rcx			/* rcx = length; rdi = dst, rsi = src already */
	cld
	rep movsb			/* the guest's initial stack, in place */
	test %r11, %r11
	jz 1f
	mov %r9, %rdi			/* then(sp, entry), on the scratch stack: it enters the guest itself */
	mov %r8, %rsi
	and $-16, %rsp
	call *%r11
	hlt
1:	mov %r9, %rsp			/* switch to the guest stack */
	push %r8			/* entry, just below the guest's sp (free memory) */
	xor %eax, %eax			/* clear the register file */
	xor %ebx, %ebx
	xor %ecx, %ecx
	xor %edx, %edx			/* rdx = 0: no atexit function for the guest */
	xor %esi, %esi
	xor %edi, %edi
	xor %ebp, %ebp
	xor %r8d, %r8d
	xor %r9d, %r9d
	xor %r10d, %r10d
	xor %r11d, %r11d
	xor %r12d, %r12d
	xor %r13d, %r13d
	xor %r14d, %r14d
	xor %r15d, %r15d
	.globl zv_guest_jump
	.hidden zv_guest_jump
zv_guest_jump:
	ret				/* pops entry: rsp is back at the guest's argc */

/* The restorer of every host signal handler zvisor installs. */
	.globl zv_sigreturn
	.hidden zv_sigreturn
	.type zv_sigreturn,@function
zv_sigreturn:
	mov $15, %eax			/* __NR_rt_sigreturn */
	syscall
	hlt

/* void zv_enter_frame(void *uc): rt_sigreturn through a frame built by the
 * kernel (uc points at the ucontext, just above the pretcode slot). Loads a
 * complete guest register file, vector state and signal mask at once. */
	.globl zv_enter_frame
	.hidden zv_enter_frame
	.type zv_enter_frame,@function
zv_enter_frame:
	mov %rdi, %rsp			/* the host reads the frame at rsp - 8 */
	mov $15, %eax			/* __NR_rt_sigreturn */
	syscall
	hlt

/* long zv_clone_raw(flags, child_sp, ptid, ctid, tls, void (*fn)(void))
 * clone(2) whose child calls fn on child_sp (fn never returns); the parent
 * gets the host's result. */
	.globl zv_clone_raw
	.hidden zv_clone_raw
	.type zv_clone_raw,@function
zv_clone_raw:
	mov %rcx, %r10			/* 4th syscall argument lives in r10 */
	mov $56, %eax			/* __NR_clone; fn stays in r9, which clone ignores */
	syscall
	test %rax, %rax
	jnz 1f				/* parent (or error) */
	xor %ebp, %ebp			/* child: outermost frame on its new stack */
	and $-16, %rsp
	call *%r9
	hlt
1:	ret

/* long zv_clone3_raw(struct clone_args *args, size_t size, void (*fn)(void)) */
	.globl zv_clone3_raw
	.hidden zv_clone3_raw
	.type zv_clone3_raw,@function
zv_clone3_raw:
	mov $435, %eax			/* __NR_clone3; fn stays in rdx, which clone3 ignores */
	syscall
	test %rax, %rax
	jnz 1f
	xor %ebp, %ebp
	and $-16, %rsp
	call *%rdx
	hlt
1:	ret

/* long zv_sc_cancellable(const long args[7], volatile int *pending)
 * Runs host syscall args[0] with args[1..6]. A guest signal deferred before
 * zv_sc_begin, or arriving between it and the syscall instruction (the
 * handler moves rip to zv_sc_cancel), makes the call return ZV_CANCELLED
 * without running, instead of blocking with the signal unseen; one arriving
 * during the call interrupts it as usual (-EINTR). */
	.section .text.hot,"ax",@progbits	/* beside the fast path: fewer pages per call */
	.globl zv_sc_cancellable, zv_sc_begin, zv_sc_end, zv_sc_cancel
	.hidden zv_sc_cancellable, zv_sc_begin, zv_sc_end, zv_sc_cancel
	.type zv_sc_cancellable,@function
zv_sc_cancellable:
	mov %rsi, %r11			/* r11 = &pending (syscall clobbers it only after the check) */
	mov 0(%rdi), %rax		/* syscall number */
	mov 16(%rdi), %rsi		/* arguments 2..6 */
	mov 24(%rdi), %rdx
	mov 32(%rdi), %r10
	mov 40(%rdi), %r8
	mov 48(%rdi), %r9
	mov 8(%rdi), %rdi		/* argument 1 last: rdi held the array */
zv_sc_begin:
	cmpl $0, (%r11)			/* a signal deferred already? */
	jne zv_sc_cancel
	syscall
zv_sc_end:
	ret
zv_sc_cancel:
	mov $-4099, %rax		/* ZV_CANCELLED: the call never started */
	ret
	.text

/* long zv_int80(const long args[7]): a 32-bit (i386 ABI) system call made
 * for the guest, which issued it with int $0x80: number in eax, arguments
 * in ebx, ecx, edx, esi, edi, ebp. */
	.globl zv_int80
	.hidden zv_int80
	.type zv_int80,@function
zv_int80:
	push %rbp			/* rbp and rbx are callee-saved and used as arguments */
	push %rbx
	mov 0(%rdi), %rax		/* number */
	mov 8(%rdi), %rbx		/* arguments 1..6 */
	mov 16(%rdi), %rcx
	mov 24(%rdi), %rdx
	mov 32(%rdi), %rsi
	mov 48(%rdi), %rbp
	mov 40(%rdi), %rdi		/* argument 5 last: rdi held the array */
	int $0x80
	movslq %eax, %rax		/* the i386 result is 32 bits, sign-extended */
	pop %rbx
	pop %rbp
	ret

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

	.section .note.GNU-stack,"",@progbits
