/* textdata.S: data in the text (as OpenSSL's assembly keeps its tables
 * there): a table holding a syscall byte pair, between two functions and
 * never executed, only read. Its pair lies in no instruction the loader can
 * find, so on the stubs platform SUD stays armed (--stats: uncovered=1) and
 * every call still arrives. No libc. Prints "table ok"; exit status 0. */
#define SYS_write 1
#define SYS_exit_group 231

	.text
	.globl _start
	.type _start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	lea msg(%rip), %rsi
	movzwl table(%rip), %eax
	cmp $0x050f, %eax               /* the table's first word, read as data */
	jne 1f
	mov $1, %edi
	mov $9, %edx
	mov $SYS_write, %eax
	syscall
1:	xor %edi, %edi
	mov $SYS_exit_group, %eax
	syscall
	.cfi_endproc
	.size _start, .-_start

	.p2align 4
.Lnext:
	.cfi_startproc
	ret
	.cfi_endproc

table:	.byte 0x0f, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	.p2align 4

	.section .rodata
msg:	.ascii "table ok\n"
