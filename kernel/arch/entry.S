/* The few pieces of the kernel that C cannot express: the jump into the
 * guest, the signal restorer, clone children that start on a fresh stack,
 * the host syscall that a signal can cancel before it starts, and int
 * $0x80. (Process entry is main.c's _start; the guarded calls are
 * sys/guard.S's.) Everything here is kernel text, which the interception
 * platforms exempt. */
	.text

/* void zv_enter_guest(uint64_t sp, const void *img, size_t len,
 *                     uint64_t entry, uint64_t scratch_sp)
 * Copies the prepared stack image to [sp, sp+len) and starts the guest at
 * entry with every general register zero, as the host's execve leaves them. */
	.globl zv_enter_guest
	.hidden zv_enter_guest
	.type zv_enter_guest,@function
zv_enter_guest:
	mov %r8, %rsp			/* copy on a scratch stack: the image may cover our frames */
	mov %rcx, %r8			/* r8 = entry */
	mov %rdi, %r9			/* r9 = guest sp */
	mov %rdx, %rcx			/* rcx = length; rdi = dst, rsi = src already */
	cld
	rep movsb			/* the guest's initial stack, in place */
	mov %r9, %rsp			/* switch to the guest stack */
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

	.section .note.GNU-stack,"",@progbits
