/* The fast path's entry stub. A rewritten site executes `call *%rax`, which
 * pushes the return address on the guest stack and jumps to address rax in
 * page 0; the sled there leads through the entry page (which clobbers r11)
 * to zv_fast_entry. From the guest's point of view this must behave like the
 * host's `syscall`: only rax (result), rcx (return address) and r11 (rflags)
 * change, the flags and every other register, the vector state and the
 * guest stack (beyond the 8 bytes the call itself wrote) are kept.
 *
 * Registers are saved in the thread's zv_fast area, reached through %gs.
 * Callee-saved registers need no saving: zv_fast_syscall preserves them.
 * Calls that need more than this (signal state, new tasks, execve) and any
 * return with deferred signals leave through a `syscall` outside kernel text,
 * which the catch-all turns into SIGSYS with a full signal frame. */
#include "arch/fast.h"
	/* .text.hot holds everything a fast host call executes, together: on
	 * these machines each page touched per host syscall costs a TLB walk. */
	.section .text.hot,"ax",@progbits

	.globl zv_fast_entry, zv_stub_entry, zv_fast_window, zv_fast_window_end, zv_fast_bounce_result
	.hidden zv_fast_entry, zv_stub_entry, zv_fast_window, zv_fast_window_end, zv_fast_bounce_result
/* The common part of both entries: the guest's rsp, flags, number and
 * arguments into the %gs area, then the thread's kernel stack. */
.macro guest_entry
	mov %rsp, %gs:ZV_F_RSP		/* the guest's rsp */
	mov %gs:ZV_F_KSTACK, %rsp	/* the thread's kernel stack (Go's stacks are small) */
	pushfq				/* the guest's flags, before anything changes them */
	popq %gs:ZV_F_EFLAGS
	cld				/* the C ABI expects DF clear */
	mov %rax, %gs:ZV_F_RAX		/* the number */
	mov %rdi, %gs:ZV_F_RDI		/* the arguments, which the host's syscall preserves */
	mov %rsi, %gs:ZV_F_RSI
	mov %rdx, %gs:ZV_F_RDX
	mov %r10, %gs:ZV_F_R10
	mov %r8, %gs:ZV_F_R8
	mov %r9, %gs:ZV_F_R9
.endm

	.type zv_fast_entry,@function
zv_fast_entry:
	guest_entry			/* rsp: [rsp] is the return address */
	mov %gs:ZV_F_SELF, %rdi		/* zv_fast_syscall(struct zv_thread *) */
	call zv_fast_syscall
	mov %rax, %gs:ZV_F_RESULT	/* kept for a bounce */
	cmpl $0, %gs:ZV_F_BOUNCE	/* the call must be made, or finished, on the SIGSYS path? */
	jne zv_fast_bounce
/* From here to zv_fast_window_end a host signal (which is deferred, since
 * this is kernel text) moves rip to zv_fast_bounce_result, so that no
 * deferred signal is left waiting for the guest's next system call. */
/* The common part of both exits: deferred signals bounce; otherwise the
 * guest's arguments, flags and stack come back, r11 = rflags as the host's
 * syscall leaves it. */
.macro guest_exit
	cmpl $0, %gs:ZV_F_PENDING	/* deferred signals to deliver? */
	jne zv_fast_bounce_result
	mov %gs:ZV_F_RDI, %rdi		/* the arguments back */
	mov %gs:ZV_F_RSI, %rsi
	mov %gs:ZV_F_RDX, %rdx
	mov %gs:ZV_F_R10, %r10
	mov %gs:ZV_F_R8, %r8
	mov %gs:ZV_F_R9, %r9
	mov %gs:ZV_F_EFLAGS, %r11	/* r11 = rflags, as the host's syscall leaves it */
	push %r11			/* and the flags themselves */
	popfq
	mov %gs:ZV_F_RSP, %rsp		/* back on the guest stack */
.endm
zv_fast_window:
	guest_exit			/* rsp: above the return address (zv_fast_syscall) */
	lea -8(%rsp), %rsp		/* on it, for ret to pop */
	mov (%rsp), %rcx		/* rcx = return address, as the host's syscall leaves it */
	ret				/* rax = result; ret keeps the return predictor in step */
zv_stub_exit:				/* the same for a jump stub's call: */
	guest_exit			/* rsp: the guest's, which nothing changed */
	mov %gs:ZV_F_RET, %rcx		/* rcx = the instruction after the original syscall */
	jmp *%rcx			/* straight back to the guest's code, past its window */
zv_fast_window_end:

/* A jump stub's entry (intercept/stubs.c): the stub ran the instructions
 * it displaced, then `lea 0(%rip), %rcx` (its key, which points at the
 * site's address stored in the stub) and jumped here through %r11. rcx and
 * r11 are the host syscall's to clobber; nothing was pushed on the guest
 * stack, so its red zone is untouched. */
	.type zv_stub_entry,@function
zv_stub_entry:
	guest_entry			/* rsp: the guest's, exactly as at the site */
	mov %gs:ZV_F_SELF, %rdi		/* zv_stub_syscall(struct zv_thread *, key) */
	mov %rcx, %rsi
	call zv_stub_syscall
	mov %rax, %gs:ZV_F_RESULT	/* kept for a bounce */
	cmpl $0, %gs:ZV_F_BOUNCE	/* the call must be made, or finished, on the SIGSYS path? */
	jne zv_fast_bounce
	jmp zv_stub_exit

/* Leave through SIGSYS: restore the guest's registers as they were at the
 * call (rsp above the return address, as after the host's syscall) and
 * execute the entry page's
 * `syscall`, outside kernel text. The SIGSYS handler reads zv_fast.bounce. */
zv_fast_bounce_result:
	movl $ZV_BOUNCE_RESULT, %gs:ZV_F_BOUNCE
zv_fast_bounce:
	mov %gs:ZV_F_KSTACK, %rsp	/* a valid stack, wherever the window was left */
	mov %gs:ZV_F_RDI, %rdi
	mov %gs:ZV_F_RSI, %rsi
	mov %gs:ZV_F_RDX, %rdx
	mov %gs:ZV_F_R10, %r10
	mov %gs:ZV_F_R8, %r8
	mov %gs:ZV_F_R9, %r9
	mov %gs:ZV_F_RAX, %rax		/* the number, for ZV_BOUNCE_CALL */
	pushq %gs:ZV_F_EFLAGS
	popfq
	mov %gs:ZV_F_RSP, %rsp		/* above the return address (zv_fast_syscall) */
	jmp *%gs:ZV_F_BSITE		/* the SIGSYS frame there is the guest's context */

	.section .note.GNU-stack,"",@progbits

/* The stubs platform's bounce `syscall` (zv_fast_bounce jumps to the
 * thread's bounce_site): a page of zvisor's image past etext, so that it is
 * outside the kernel text SUD and seccomp exempt and the catch-all turns it
 * into SIGSYS, and it costs no mapping of its own (a page in the kernel's
 * window split the window's first chunk: two more VMAs for every fork to
 * copy, and an mprotect per start). The Makefile checks that no code follows
 * it (kernel/zvisor.ld puts read-only data there). */
	.section .zv_bounce,"ax",@progbits
	.balign 4096
	.globl zv_bounce_page
	.hidden zv_bounce_page
zv_bounce_page:
	syscall
	ud2			/* never reached */
	.balign 4096
