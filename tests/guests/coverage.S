/* coverage.S: every kind of code in which the stubs platform must judge
 * each syscall byte pair (0f 05, 0f 34, cd 80) for SUD to go off
 * (intercept/loadsites.c, DESIGN "Jump stubs and SUD off"). No libc, no symbols but
 * _start's: function bounds come only from the unwind table. Each part
 * prints "NAME ok" (or "NAME FAIL") after its syscalls ran:
 *   switch   a jump table whose bound is checked in memory, then loaded
 *            (glibc's __spawni_child): the cases' syscalls get windows
 *   split    a function whose CFI ends before its syscall, whose code goes
 *            on into a part with the return address undefined and falls
 *            into a third function (glibc's __clone3): one run, windows
 *   resume   a function ending in `jmp *%rdx` after switching stacks
 *            (____longjmp_chk): no window, its syscall becomes `jmp rel8`
 *            to a trampoline in the padding before it
 *   nofde    code between two FDEs without one (crtstuff), pairs inside
 *            immediates, and zeros after it up to the next section
 *   longfde  an FDE longer than 512 bytes, a pair inside an immediate and
 *            a window
 *   big      a function of more than 64 KiB, the same
 *   simple   an FDE with its own CIE (the PLT's kind), a pair inside an
 *            immediate
 *   landing  a landing pad (in the function's LSDA) just before a syscall,
 *            entered by an indirect call as an unwinder enters it: no
 *            window may hold it, the syscall takes a trampoline
 * Exit status 0. */
#define SYS_write 1
#define SYS_sched_yield 24
#define SYS_getppid 110
#define SYS_exit_group 231

	.text
	.globl _start
	.type _start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	mov $SYS_getppid, %eax
	syscall
	mov %rax, %r15                  /* the parent, as every part must see it */

	movl $1, case(%rip)             /* switch: case 1 is getppid */
	lea case(%rip), %rdi
	call .Lswitch
	lea name_switch(%rip), %rdi
	call .Lcheck

	mov $1, %edi                    /* split: sched_yield is 0, so B's getppid */
	call .Lsplit
	lea name_split(%rip), %rdi
	call .Lcheck

	lea .Lback(%rip), %rsi          /* resume: back at .Lback, on this stack */
	mov %rsp, %rdi
	call .Lresume
.Lback:
	lea name_resume(%rip), %rdi
	call .Lcheck

	call .Lnofde
	cmp $(0x80cd + 0x050f), %rax
	cmove %r15, %rax
	lea name_nofde(%rip), %rdi
	call .Lcheck

	call .Llong
	lea name_longfde(%rip), %rdi
	call .Lcheck

	call .Lbig
	lea name_big(%rip), %rdi
	call .Lcheck

	call .Lsimple
	cmp $0x80cd, %rax
	cmove %r15, %rax
	lea name_simple(%rip), %rdi
	call .Lcheck

	mov $SYS_getppid, %esi          /* landing: straight to the pad */
	lea .Llanding_pad(%rip), %rax
	call *%rax
	lea name_landing(%rip), %rdi
	call .Lcheck

	xor %edi, %edi
	mov $SYS_exit_group, %eax
	syscall
	.cfi_endproc
	.size _start, .-_start

/* Prints the name at rdi and " ok" if rax is the parent's pid (r15). */
	.p2align 4
.Lcheck:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	mov %rax, %rbx
	call .Lputs
	lea ok(%rip), %rdi
	lea fail(%rip), %rax
	cmp %rbx, %r15
	cmovne %rax, %rdi
	call .Lputs
	pop %rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc

/* write(1, rdi, strlen(rdi)) */
	.p2align 4
.Lputs:
	.cfi_startproc
	mov %rdi, %rsi
	xor %edx, %edx
1:	cmpb $0, (%rsi,%rdx)
	je 2f
	inc %rdx
	jmp 1b
2:	mov $1, %edi
	mov $SYS_write, %eax
	syscall
	ret
	.cfi_endproc

/* switch (*rdi) { case 0: sched_yield; case 1: getppid; case 2: write }:
 * the bound checked in memory, the index loaded from it after */
	.p2align 4
.Lswitch:
	.cfi_startproc
	push %r13
	.cfi_adjust_cfa_offset 8
	push %r14
	.cfi_adjust_cfa_offset 8
	lea table(%rip), %r13
	mov %rdi, %rcx
	cmpl $2, (%rcx)
	mov %rcx, %r14
	ja 9f
	mov (%rcx), %eax
	movslq (%r13,%rax,4), %rax
	add %r13, %rax
	jmp *%rax
.Lcase0:
	mov $SYS_sched_yield, %eax
	syscall
	jmp 8f
.Lcase1:
	mov $SYS_getppid, %eax
	syscall
	jmp 8f
.Lcase2:
	xor %edx, %edx
	mov $SYS_write, %eax
	syscall
	jmp 8f
9:	mov $-1, %rax
8:	pop %r14
	.cfi_adjust_cfa_offset -8
	pop %r13
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc

/* sched_yield's 0 leads to B, whose getppid falls into C's ret; the CFI
 * of A ends before its syscall, as glibc's __clone3 does */
	.p2align 4
.Lsplit:
	.cfi_startproc
	test %rdi, %rdi
	je .Lsplit_c
	mov %rdi, %r8
	mov $SYS_sched_yield, %eax
	.cfi_endproc
	syscall
	test %rax, %rax
	jl .Lsplit_c
	je .Lsplit_b
	ret
.Lsplit_b:
	.cfi_startproc
	.cfi_undefined rip
	mov %r8, %rdi
	mov $SYS_getppid, %eax
	syscall
	.cfi_endproc
.Lsplit_c:
	.cfi_startproc
	ret
	.cfi_endproc

/* A function before .Lresume, whose padding holds its trampoline. */
	.p2align 4
.Lbefore:
	.cfi_startproc
	xor %eax, %eax
	ret
	.cfi_endproc
	.fill 11, 1, 0x90
	.p2align 4, 0x90

/* getppid, then rsp = rdi and on at rsi: no table proves where the jump
 * lands, so no window; the syscall alone jumps to the padding above */
.Lresume:
	.cfi_startproc
	mov %rsi, %rdx
	mov %rdi, %r8
	mov $SYS_getppid, %eax
	syscall
	mov %r8, %rsp
	jmp *%rdx
	.cfi_endproc

/* The call site [.Llanding, .Llanding_pad) lands at .Llanding_pad: a
 * window from .Llanding would put the pad inside its jump. */
	.p2align 4
.Llanding:
	.cfi_startproc
	.cfi_lsda 0x1b, .Llsda
	mov %rdi, %r8
.Llanding_pad:
	mov %esi, %eax
	syscall
	ret
	.cfi_endproc
	.fill 8, 1, 0x90
	.p2align 4, 0x90

/* A function after which code runs with no FDE (crtstuff's). */
	.p2align 4
.Lplain:
	.cfi_startproc
	ret
	.cfi_endproc
	.p2align 4, 0x90
.Lnofde:
	mov $0x80cd, %eax               /* b8 cd 80 00 00 */
	mov $0x050f, %ecx               /* b9 0f 05 00 00 */
	add %ecx, %eax
	ret

/* The rest in a section of its own: zeros between, as between a
 * binary's .text and __libc_freeres_fn. */
	.section zvcode, "ax", @progbits
	.p2align 6

/* An FDE of about 900 bytes: its head is all the loader reads. */
.Llong:
	.cfi_startproc
	.rept 150
	push %rbx
	.cfi_adjust_cfa_offset 8
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.endr
	mov $0x050f, %ecx
	mov $SYS_getppid, %eax
	syscall
	ret
	.cfi_endproc

/* More than 64 KiB of one function. */
	.p2align 4
.Lbig:
	.cfi_startproc
	.fill 70000, 1, 0x90
	mov $0x050f, %ecx
	mov $SYS_getppid, %eax
	syscall
	ret
	.cfi_endproc

/* An FDE of its own CIE (the initial frame given in the FDE). */
	.p2align 4
.Lsimple:
	.cfi_startproc simple
	.cfi_def_cfa rsp, 8
	.cfi_offset rip, -8
	mov $0x80cd, %eax
	ret
	.cfi_endproc

	.section .gcc_except_table, "a", @progbits
.Llsda:
	.byte 0xff                      /* LPStart: the function's start */
	.byte 0xff                      /* no type table */
	.byte 0x01                      /* call sites in uleb128 */
	.uleb128 .Lcs_end - .Lcs_begin
.Lcs_begin:
	.uleb128 0                      /* from the start */
	.uleb128 .Llanding_pad - .Llanding
	.uleb128 .Llanding_pad - .Llanding /* the landing pad */
	.uleb128 0                      /* no action */
.Lcs_end:

	.data
	.p2align 2
case:	.long 0
	.section .rodata
	.p2align 2
table:	.long .Lcase0 - table, .Lcase1 - table, .Lcase2 - table
name_switch:	.asciz "switch"
name_split:	.asciz "split"
name_resume:	.asciz "resume"
name_nofde:	.asciz "nofde"
name_longfde:	.asciz "longfde"
name_big:	.asciz "big"
name_simple:	.asciz "simple"
name_landing:	.asciz "landing"
ok:	.asciz " ok\n"
fail:	.asciz " FAIL\n"
