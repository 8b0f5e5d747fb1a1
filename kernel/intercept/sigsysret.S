/* The SIGSYS handler's restorer (intercept/plat_catchall.c installs it).
 * That handler runs with the guest's mask (NODEFER, no sa_mask), so a
 * guest signal may be deferred after its way out looked for deferred ones
 * (zv_signals_on_exit found none): no way out follows to deliver it. Here
 * the flag is read once more, and one found is delivered on this frame
 * (zv_sigsys_late) before the rt_sigreturn. A signal between the read and
 * the syscall moves rip back to the read (zv_catchall_kernel_ip). */
#include "arch/thread.h"
	.text
	.globl zv_sigsys_restorer, zv_sigsys_restorer_end
	.hidden zv_sigsys_restorer, zv_sigsys_restorer_end
	.type zv_sigsys_restorer,@function
zv_sigsys_restorer:			/* rsp: the frame's ucontext (ret popped pretcode) */
	mov %rsp, %rax
	and $-ZV_BLOCK_SIZE, %rax	/* the thread's block, as zv_current finds it */
	cmpl $0, ZV_THREAD_OFF + ZV_F_PENDING(%rax) /* a signal deferred since the way out looked? */
	jne 1f
	mov $15, %eax			/* __NR_rt_sigreturn */
zv_sigsys_restorer_end:			/* (a signal here still finds the syscall unmade) */
	syscall				/* back to the frame: never returns */
	hlt
1:	mov %rsp, %rbx			/* keep the frame's address (rt_sigreturn restores every register) */
	mov %rsp, %rdi			/* zv_sigsys_late(uc) */
	and $-16, %rsp			/* the ABI's call alignment */
	call zv_sigsys_late		/* which blocks every host signal until this sigreturn */
	mov %rbx, %rsp			/* the frame again, as rt_sigreturn reads it at rsp */
	mov $15, %eax			/* __NR_rt_sigreturn */
	syscall				/* never returns */
	hlt

	.section .note.GNU-stack,"",@progbits
