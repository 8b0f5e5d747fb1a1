/* Page 0 (DESIGN 5.8): the fast path maps its trampoline at address 0, yet a
 * guest's NULL accesses must fault as natively: same signal, si_addr and
 * si_code (SEGV_MAPERR), same rip and stack for a handler. Before each case
 * the guest makes 1000 getpid through one inline-asm site, so on the fast
 * path that site is rewritten and page 0 is mapped. Usage: nullpage CASE
 * [handler]; with `handler` a SIGSEGV handler records the fault and
 * siglongjmps out, without it the guest must die from SIGSEGV. CASEs:
 *   nullread     *(volatile int *)0
 *   nullread100  ((volatile int *)0)[100]
 *   nullwrite    *(volatile int *)0 = 1
 *   nullcall     xor %eax,%eax; call *%rax
 *   call0x10     mov $0x10,%eax; call *%rax (a small non-NULL pointer)
 *   nulljmp      xor %eax,%eax; jmp *%rax (no return address pushed) */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile unsigned long fault_addr, fault_rip, fault_top;
static volatile int fault_code, faults;
static volatile unsigned long ret_addr, rsp_before; /* set by the call cases */

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	fault_addr = (unsigned long)si->si_addr;
	fault_code = si->si_code;
	fault_rip = uc->uc_mcontext.gregs[REG_RIP];
	unsigned long rsp = uc->uc_mcontext.gregs[REG_RSP];
	fault_top = rsp == rsp_before - 8 ? *(unsigned long *)rsp : rsp == rsp_before ? 1 : 2;
	faults++;
	siglongjmp(env, 1);
}

__attribute__((noinline)) static long raw_getpid(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory");
	return r;
}

/* call (or jmp, if jmp) *%rax with rax = target; records the return
 * address and the rsp before the call. */
static void call_rax(unsigned long target, int jmp)
{
	if (jmp)
		__asm__ volatile("lea 1f(%%rip), %%rcx\n"
				 "mov %%rcx, %[ret]\n"
				 "mov %%rsp, %[sp]\n"
				 "jmp *%%rax\n"
				 "1:\n"
				 : [ret] "=m"(ret_addr), [sp] "=m"(rsp_before)
				 : "a"(target)
				 : "rcx", "memory");
	else
		__asm__ volatile("lea 1f(%%rip), %%rcx\n"
				 "mov %%rcx, %[ret]\n"
				 "mov %%rsp, %[sp]\n"
				 "call *%%rax\n"
				 "1:\n"
				 : [ret] "=m"(ret_addr), [sp] "=m"(rsp_before)
				 : "a"(target)
				 : "rcx", "memory");
}

static const char *cases[] = { "nullread", "nullread100", "nullwrite", "nullcall",
			       "call0x10", "nulljmp" };

static void run_case(int c)
{
	volatile int *volatile nullp = NULL;
	switch (c) {
	case 0: (void)*nullp; break;
	case 1: (void)nullp[100]; break;
	case 2: *nullp = 1; break;
	case 3: call_rax(0, 0); break;
	case 4: call_rax(0x10, 0); break;
	case 5: call_rax(0, 1); break;
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	int c = -1, handler = argc > 2 && !strcmp(argv[2], "handler");
	for (int i = 0; argc > 1 && i < (int)(sizeof(cases) / sizeof(cases[0])); i++)
		if (!strcmp(argv[1], cases[i]))
			c = i;
	if (c < 0 || (argc > 2 && !handler)) {
		fprintf(stderr, "usage: nullpage CASE [handler]\n");
		return 2;
	}
	long pid = getpid(), ok = 0;
	for (int i = 0; i < 1000; i++)
		ok += raw_getpid() == pid;
	printf("case %s%s: getpid %ld of 1000 ok\n", argv[1], handler ? " with handler" : "", ok);
	fflush(stdout);
	if (handler) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		for (int round = 0; round < 2; round++) {
			if (sigsetjmp(env, 1) == 0) {
				run_case(c);
				printf("no fault?\n");
				return 1;
			}
			printf("round %d: SIGSEGV si_addr %#lx, SEGV_MAPERR %d", round, fault_addr,
			       fault_code == SEGV_MAPERR);
			if (c >= 3) /* a jump: rip is the target; call pushed ret_addr */
				printf(", rip %#lx, stack top %s", fault_rip,
				       fault_top == ret_addr ? "return address"
				       : fault_top == 1      ? "as before"
							     : "wrong");
			printf("\n");
		}
		ok = 0;
		for (int i = 0; i < 1000; i++)
			ok += raw_getpid() == pid;
		printf("after %d faults: getpid %ld of 1000 ok\n", faults, ok);
		return 0;
	}
	run_case(c);
	printf("still alive?\n");
	return 1;
}
