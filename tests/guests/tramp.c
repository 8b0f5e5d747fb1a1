/* A syscall with no 5-byte window: `mov %edi, %eax; syscall` at the start of
 * a function. On the stubs platform it becomes `jmp rel8` to a trampoline
 * in the padding after the function's `ret` (DESIGN "Jump stubs and SUD off"). Checks:
 *   - calls through it return what they should;
 *   - a 50 us timer over many calls: no handler sees the padding's address
 *     (a thread on the trampoline is shown at the syscall);
 *   - a handler that moves rip onto the syscall itself: the call is made
 *     there, as natively;
 *   - `bytes`: prints the site's first byte (0f natively, eb with a
 *     trampoline). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

long tr_call(long nr);           /* syscall nr, no arguments */
long tr_kill(long pid, long sig); /* kill(pid, sig) */
extern const char tr_site[], tr_pad[], tr_pad_end[], tr_kill_ret[];

__asm__(".text\n"
	".globl tr_call, tr_site, tr_pad, tr_pad_end, tr_kill, tr_kill_ret\n"
	".type tr_call, @function\n"
	".p2align 5\n"
	"tr_call:\n"
	".cfi_startproc\n"
	"	mov %edi, %eax\n"
	"tr_site:\n"
	"	syscall\n"
	"	ret\n"
	"tr_pad:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopl 0(%rax,%rax): dead padding */
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"tr_pad_end:\n"
	".cfi_endproc\n"
	".size tr_call, .-tr_call\n"
	".type tr_kill, @function\n"
	".p2align 5\n"
	"tr_kill:\n"
	".cfi_startproc\n"
	"	mov $62, %eax\n"
	"	syscall\n"
	"tr_kill_ret:\n"
	"	ret\n"
	".cfi_endproc\n"
	".size tr_kill, .-tr_kill\n");

static volatile long ticks, on_pad, redirected;

static void on_timer(int sig, siginfo_t *si, void *ucv)
{
	uintptr_t ip = ((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
	ticks++;
	if (ip >= (uintptr_t)tr_pad && ip < (uintptr_t)tr_pad_end)
		on_pad++;
}

/* Called at the end of tr_kill's kill: run getpid at tr_site instead of
 * returning; its `ret` then returns from tr_kill. */
static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] != (uintptr_t)tr_kill_ret)
		return;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)tr_site;
	uc->uc_mcontext.gregs[REG_RAX] = SYS_getpid;
	redirected++;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "bytes")) {
		printf("site byte %02x\n", (unsigned char)tr_site[0]);
		return 0;
	}
	long pid = getpid(), bad = 0;
	for (int i = 0; i < 100000; i++)
		bad += tr_call(SYS_getpid) != pid;
	printf("calls through the site: wrong results %ld\n", bad);

	struct sigaction sa = { .sa_sigaction = on_timer, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	bad = 0;
	for (int i = 0; i < 100000; i++)
		bad += tr_call(SYS_getppid) != getppid();
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("timer: signals arrived %s, seen on the padding %ld, wrong results %ld\n", ticks ? "yes" : "no",
	       on_pad, bad);

	sa.sa_sigaction = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	long r = tr_kill(pid, SIGUSR1);
	printf("rip moved onto the syscall: %ld time(s), tr_kill returned %s\n", redirected,
	       r == pid ? "the pid" : "something else");
	return 0;
}
