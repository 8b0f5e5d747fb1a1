/* The red zone (DESIGN 5.1): a leaf function may keep live data in the 128
 * bytes below %rsp, and the host's `syscall` leaves them alone. A rewritten
 * site's `call *%rax` pushes its return address at -8(%rsp), so a site may be
 * rewritten only where that cannot destroy live data, and the trampoline must
 * not touch the rest of the red zone. Two leaf functions in assembly fill the
 * whole red zone with distinct canaries, make a raw getppid, and copy the red
 * zone out afterwards; each is called 10000 times (a site the fast path
 * considered safe would be rewritten by then):
 *   rsp  canaries addressed through %rsp, as gcc -O2 leaf code does
 *   rbp  canaries addressed through %rbp == %rsp, as gcc -O0 leaf code does */
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
__asm__(
	".text\n"
	".globl rz_leaf_rsp\n"
	".type rz_leaf_rsp,@function\n"
	"rz_leaf_rsp:\n"
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
	".size rz_leaf_rsp, .-rz_leaf_rsp\n"
	/* gcc -O0 style: push %rbp; mov %rsp,%rbp; locals at -N(%rbp) with
	 * no sub from %rsp, so they are in the red zone */
	".globl rz_leaf_rbp\n"
	".type rz_leaf_rbp,@function\n"
	"rz_leaf_rbp:\n"
	"  push %rbp\n"
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
	"  ret\n"
	".size rz_leaf_rbp, .-rz_leaf_rbp\n");

static int check(const char *name, void (*leaf)(unsigned long, struct rz_out *), int rbp_style,
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
		for (int i = 1; i <= 16; i++) {
			unsigned long want = salt + i;
			if (rbp_style && i == 1)
				want = salt;		 /* -8(%rbp) holds salt itself */
			if (rbp_style && i == 2)
				want = (unsigned long)&out; /* -16(%rbp) holds out */
			if (out.rz[i - 1] != want) {
				printf("%s: FAIL: canary at %s-%d broken in call %ld: %#lx, expected "
				       "%#lx\n", name, rbp_style ? "rbp" : "rsp", 8 * i, n,
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
	bad |= check("rsp-addressed red zone", rz_leaf_rsp, 0, ppid);
	bad |= check("rbp-addressed red zone (rbp == rsp)", rz_leaf_rbp, 1, ppid);
	return bad;
}
