/* No libc, no dynamic loader: the first instruction the guest runs is its
 * own _start, and its only syscalls are a raw write and exit. */
	.globl _start
	.text
_start:
	mov	$1, %eax		/* write(1, msg, len) */
	mov	$1, %edi
	lea	msg(%rip), %rsi
	mov	$len, %edx
	syscall
	cmp	$len, %rax		/* exit 1 if the write was short */
	jne	1f
	mov	$60, %eax		/* exit(7) */
	mov	$7, %edi
	syscall
1:	mov	$60, %eax
	mov	$1, %edi
	syscall
	hlt

	.section .rodata
msg:	.ascii "hello from asm\n"
	.set len, . - msg
	.section .note.GNU-stack,"",@progbits
