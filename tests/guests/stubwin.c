/* Jump-stub windows (DESIGN "Jump stubs and SUD off"): code that the stubs platform moves into a
 * stub must look, to signal handlers, as if it ran in place.
 *
 *   win_getpid: mov $39, %eax      5 bytes
 *   win_inner:  mov (%rdi), %cl    2 bytes: too short alone, so the window
 *   win_syscall: syscall            starts at win_getpid and this is inner
 *               ret
 *
 * 1. A fault on the inner instruction: the handler must see rip ==
 *    win_inner, si_addr 0, SEGV_MAPERR; it points rdi at good memory and
 *    returns, so the thread resumes inside the window; glibc's backtrace()
 *    from the handler unwinds through win_inner to main.
 * 2. A timer signal every 20 us while the window runs 400,000 times, or
 *    until 50,000 signals have come (where every call is itself a signal,
 *    on the SIGSYS platforms, the loop would otherwise take a minute on a
 *    loaded machine): no handler may see an rip outside the program's
 *    text (a stub's address).
 * 3. A handler that moves rip onto an inner instruction itself (a signal
 *    raised by win_kill's own syscall): the thread must run on from there
 *    as natively, here making getpid instead. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <execinfo.h>
#endif

asm(".text\n"
    ".globl win_getpid\n"
    ".type win_getpid,@function\n"
    "win_getpid:\n"
    ".cfi_startproc\n"
    "mov $39, %eax\n"
    ".globl win_inner\n"
    "win_inner:\n"
    "mov (%rdi), %cl\n"
    ".globl win_syscall\n"
    "win_syscall:\n"
    "syscall\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size win_getpid, .-win_getpid\n"
    ".globl win_kill\n"
    ".type win_kill,@function\n"
    "win_kill:\n"
    ".cfi_startproc\n"
    "mov $62, %eax\n"
    ".globl win_kill_inner\n"
    "win_kill_inner:\n"
    "mov (%rdx), %cl\n"
    "syscall\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size win_kill, .-win_kill\n");
extern long win_getpid(const char *p);
extern long win_kill(long pid, long sig, const char *p);
extern char win_inner[], win_syscall[], win_kill_inner[];
extern char __executable_start[], etext[];

static const char good = 1;
static volatile uint64_t fault_rip, fault_addr;
static volatile int fault_code;
static volatile int unwound; /* the fault's backtrace: win_inner, then main */
int main(void);
static volatile long ticks, outside, rewound;
static volatile int in_loop; /* outside it, libc's own calls may be interrupted */

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	fault_rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	fault_addr = (uint64_t)si->si_addr;
	fault_code = si->si_code;
#ifdef __GLIBC__
	/* An unwinder steps from the signal frame to the interrupted rip and
	 * on through the window's function to its caller. */
	void *bt[16];
	int n = backtrace(bt, 16), at_inner = 0, in_main = 0;
	for (int i = 0; i < n; i++) {
		at_inner |= bt[i] == (void *)win_inner;
		in_main |= (char *)bt[i] > (char *)main && (char *)bt[i] < (char *)main + 4096;
	}
	unwound = at_inner && in_main;
#else
	unwound = 1; /* musl has no backtrace() */
#endif
	uc->uc_mcontext.gregs[REG_RDI] = (greg_t)&good; /* retry with a good pointer */
}

static void on_alarm(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	ticks++;
	if (in_loop && (rip < (uint64_t)__executable_start || rip >= (uint64_t)etext))
		outside++;
}

static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	/* back onto win_kill's inner instruction, now for getpid */
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)win_kill_inner;
	uc->uc_mcontext.gregs[REG_RAX] = 39;
	uc->uc_mcontext.gregs[REG_RDX] = (greg_t)&good;
	rewound++;
}

int main(void)
{
	long pid = getpid();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_SIGINFO;
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	long r = win_getpid(NULL);
	printf("fault on the inner instruction: rip %s, si_addr %#lx, SEGV_MAPERR %d\n",
	       fault_rip == (uint64_t)win_inner ? "win_inner" : "elsewhere", (unsigned long)fault_addr,
	       fault_code == SEGV_MAPERR);
	printf("after the handler: getpid %s\n", r == pid ? "ok" : "wrong");
	printf("unwinding from the fault: win_inner, then main: %s\n", unwound ? "yes" : "no");

	sa.sa_sigaction = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 20 }, { 0, 20 } };
	setitimer(ITIMER_REAL, &it, NULL);
	long wrong = 0;
	in_loop = 1;
	for (int i = 0; i < 400000 && ticks < 50000; i++)
		if (win_getpid(&good) != pid)
			wrong++;
	in_loop = 0;
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	printf("timer: signals arrived %s, seen outside the program's text %ld, wrong results %ld\n",
	       ticks > 0 ? "yes" : "no", outside, wrong);

	sa.sa_sigaction = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	long k = win_kill(pid, SIGUSR1, &good);
	printf("rewound onto an inner instruction: %ld time(s), win_kill returned %s\n", rewound,
	       k == pid ? "the pid" : "something else");
	return 0;
}
