/* The red zone (DESIGN 5.1): a leaf function may keep live data in the 128
 * bytes below %rsp, and the host's `syscall` leaves them alone. A rewritten
 * site's `call *%rax` pushes its return address at -8(%rsp), so a site may be
 * rewritten only where that cannot destroy live data, and the trampoline must
 * not touch the rest of the red zone. Two leaf functions in assembly fill the
 * whole red zone with distinct canaries, make a raw getppid, and copy the red
 * zone out afterwards; each is called 10000 times (a site the fast path
 * considered safe would be rewritten by then):
 *   rsp  canaries addressed through %rsp, as gcc -O2 leaf code does
 *   rbp  canaries addressed through %rbp == %rsp, as gcc -O0 leaf code does
 *   low  canaries in the low half of the red zone only (below -64, out
 *        of reach of any operand at the slot the call's push takes): the
 *        site may be rewritten (at load, too), and the canaries must
 *        survive the trampoline
 *   c    a leaf written in C (gcc -O2 keeps its locals in the red zone)
 * The functions carry unwind information (CFI), as compiled code does, so
 * that --rewrite=load judges their sites when the program is mapped.
 * argv[1] "low" runs only the low case, "none" none of them (the stats
 * test compares the two). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ITERS 10000

struct rz_out {
	long result;	  /* the syscall's return value */
	unsigned long rz[16]; /* rz[i]: the word at -8*(i+1) after the syscall */
};

/* void rz_leaf_rsp(unsigned long salt, struct rz_out *out): word i (1..16)
 * below %rsp holds salt + i during a getppid. No push, no call: a leaf. */
void rz_leaf_rsp(unsigned long salt, struct rz_out *out);
void rz_leaf_rbp(unsigned long salt, struct rz_out *out);
void rz_leaf_low(unsigned long salt, struct rz_out *out);
__asm__(
	".text\n"
	".globl rz_leaf_rsp\n"
	".type rz_leaf_rsp,@function\n"
	"rz_leaf_rsp:\n"
	"  .cfi_startproc\n"
	"  .irp i,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"  lea \\i(%rdi), %rax\n"
	"  mov %rax, -8*\\i(%rsp)\n"
	"  .endr\n"
	"  mov $110, %eax\n"
	"  syscall\n"
	"  mov %rax, 0(%rsi)\n"
	"  .irp i,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"  mov -8*\\i(%rsp), %rax\n"
	"  mov %rax, 8*\\i(%rsi)\n"
	"  .endr\n"
	"  ret\n"
	"  .cfi_endproc\n"
	".size rz_leaf_rsp, .-rz_leaf_rsp\n"
	/* the same in [rsp - 128, rsp - 64) only */
	".globl rz_leaf_low\n"
	".type rz_leaf_low,@function\n"
	"rz_leaf_low:\n"
	"  .cfi_startproc\n"
	"  .irp i,9,10,11,12,13,14,15,16\n"
	"  lea \\i(%rdi), %rax\n"
	"  mov %rax, -8*\\i(%rsp)\n"
	"  .endr\n"
	"  mov $110, %eax\n"
	"  syscall\n"
	"  mov %rax, 0(%rsi)\n"
	"  .irp i,9,10,11,12,13,14,15,16\n"
	"  mov -8*\\i(%rsp), %rax\n"
	"  mov %rax, 8*\\i(%rsi)\n"
	"  .endr\n"
	"  ret\n"
	"  .cfi_endproc\n"
	".size rz_leaf_low, .-rz_leaf_low\n"
	/* gcc -O0 style: push %rbp; mov %rsp,%rbp; locals at -N(%rbp) with
	 * no sub from %rsp, so they are in the red zone */
	".globl rz_leaf_rbp\n"
	".type rz_leaf_rbp,@function\n"
	"rz_leaf_rbp:\n"
	"  .cfi_startproc\n"
	"  push %rbp\n"
	"  .cfi_def_cfa_offset 16\n"
	"  .cfi_offset %rbp, -16\n"
	"  mov %rsp, %rbp\n"
	"  mov %rdi, -8(%rbp)\n"  /* the spills gcc -O0 makes: salt, out */
	"  mov %rsi, -16(%rbp)\n"
	"  .irp i,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"  lea \\i(%rdi), %rax\n"
	"  mov %rax, -8*\\i(%rbp)\n"
	"  .endr\n"
	"  mov $110, %eax\n"
	"  syscall\n"
	"  mov -16(%rbp), %rsi\n"
	"  mov %rax, 0(%rsi)\n"
	"  .irp i,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"  mov -8*\\i(%rbp), %rax\n"
	"  mov %rax, 8*\\i(%rsi)\n"
	"  .endr\n"
	"  pop %rbp\n"
	"  .cfi_def_cfa_offset 8\n"
	"  ret\n"
	"  .cfi_endproc\n"
	".size rz_leaf_rbp, .-rz_leaf_rbp\n");

/* A leaf in C: its locals live in the red zone across the inline syscall. */
__attribute__((noinline)) static void rz_leaf_c(unsigned long salt, struct rz_out *out)
{
	volatile unsigned long local[16];
	for (int i = 0; i < 16; i++)
		local[i] = salt + i + 1;
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "0"(110L) : "rcx", "r11", "memory");
	out->result = r;
	for (int i = 0; i < 16; i++)
		out->rz[i] = local[i];
}

enum style { RSP, RBP, LOW, C };

static int check(const char *name, void (*leaf)(unsigned long, struct rz_out *), enum style style,
		 long ppid)
{
	for (long n = 0; n < ITERS; n++) {
		unsigned long salt = 0x5a17c0de00000000UL ^ ((unsigned long)n << 12);
		struct rz_out out;
		memset(&out, 0, sizeof(out));
		leaf(salt, &out);
		if (out.result != ppid) {
			printf("%s: FAIL: getppid returned %ld in call %ld\n", name, out.result, n);
			return 1;
		}
		for (int i = style == LOW ? 9 : 1; i <= 16; i++) {
			unsigned long want = salt + i;
			if (style == RBP && i == 1)
				want = salt;		 /* -8(%rbp) holds salt itself */
			if (style == RBP && i == 2)
				want = (unsigned long)&out; /* -16(%rbp) holds out */
			if (out.rz[i - 1] != want) {
				printf("%s: FAIL: canary at %s-%d broken in call %ld: %#lx, expected "
				       "%#lx\n", name, style == RBP ? "rbp" : "rsp", 8 * i, n,
				       out.rz[i - 1], want);
				return 1;
			}
		}
	}
	printf("%s: %d calls, getppid ok, red zone intact\n", name, ITERS);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	long ppid = syscall(SYS_getppid);
	int bad = 0;
	const char *mode = argc > 1 ? argv[1] : "all";
	if (!strcmp(mode, "none")) {
		printf("no case run\n"); /* the same calls as a case's line */
		return 0;
	}
	if (strcmp(mode, "low"))
		bad |= check("rsp-addressed red zone", rz_leaf_rsp, RSP, ppid);
	if (strcmp(mode, "low"))
		bad |= check("rbp-addressed red zone (rbp == rsp)", rz_leaf_rbp, RBP, ppid);
	bad |= check("low half of the red zone", rz_leaf_low, LOW, ppid);
	if (strcmp(mode, "low"))
		bad |= check("C leaf", rz_leaf_c, C, ppid);
	return bad;
}
