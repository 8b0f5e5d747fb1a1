/* A signal frame that cannot be written, as in LTP's signal06: the host
 * then forces SIGSEGV (si_code SI_KERNEL) instead of running the handler,
 * and kills the process when the signal was SIGSEGV itself or SIGSEGV is
 * blocked or ignored. Each case runs in a child and reports how it ended.
 *   ro-altstack   SIGHUP's handler is SA_ONSTACK on a read-only altstack:
 *                 SIGSEGV's handler (on the normal stack) runs instead
 *   segv-onstack  the same, with SIGSEGV's handler on that altstack too: dies
 *   segv-blocked  the same, with SIGSEGV blocked: dies
 *   segv-default  the same, SIGSEGV at its default: dies
 *   toggle        signal06: a thread flips the altstack between read-only
 *                 and writable while the main thread sends itself SIGHUP
 *                 30000 times; a double in a register must survive every
 *                 frame, failed or not */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char altstack[4096 * 10] __attribute__((aligned(4096)));
static volatile int hups, segvs, segv_code = -1;
static volatile int stop;

static void on_hup(int sig) { hups++; }

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	segvs++;
	segv_code = si->si_code;
}

static void handle(int sig, int flags, void (*h)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

static void handle_segv(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | flags;
	sigaction(SIGSEGV, &sa, NULL);
}

static void use_altstack(void)
{
	stack_t st = { .ss_sp = altstack, .ss_size = sizeof altstack };
	sigaltstack(&st, NULL);
}

static void raw_tkill_self(int sig)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(SYS_tkill), "D"(syscall(SYS_gettid)), "S"(sig)
			 : "rcx", "r11", "memory");
}

static int ro_altstack(const char *mode)
{
	use_altstack();
	handle(SIGHUP, SA_ONSTACK, on_hup);
	if (!strcmp(mode, "segv-onstack"))
		handle_segv(SA_ONSTACK);
	else if (strcmp(mode, "segv-default"))
		handle_segv(0);
	if (!strcmp(mode, "segv-blocked")) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGSEGV);
		sigprocmask(SIG_BLOCK, &s, NULL);
	}
	mprotect(altstack, sizeof altstack, PROT_READ);
	raw_tkill_self(SIGHUP);
	printf("SIGHUP handler ran %d, SIGSEGV handler ran %d, si_code %s\n", hups, segvs,
	       segv_code == SI_KERNEL ? "SI_KERNEL" : segv_code == -1 ? "-" : "other");
	return 0;
}

static void *flipper(void *arg)
{
	while (!stop) {
		mprotect(altstack, sizeof altstack, PROT_READ);
		mprotect(altstack, sizeof altstack, PROT_READ | PROT_WRITE);
	}
	return NULL;
}

static volatile double D;

static int toggle(void)
{
	use_altstack();
	handle(SIGHUP, SA_ONSTACK, on_hup);
	handle(SIGSEGV, 0, on_hup);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (int round = 0; round < 2; round++) {
		pthread_t th;
		stop = 0;
		pthread_create(&th, NULL, flipper, NULL);
		int loop = 0;
		D = 123.456;
		/* the comparison keeps D in an xmm register across the calls */
		while (D == 123.456 && loop < 30000) {
			long r;
			__asm__ volatile("syscall" : "=a"(r) : "a"(SYS_tkill), "D"(tid), "S"(SIGHUP)
					 : "rcx", "r11");
			loop++;
		}
		stop = 1;
		pthread_join(th, NULL);
		printf("round %d: %s\n", round, loop == 30000 ? "the double survived" : "the double was lost");
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *modes[] = { "ro-altstack", "segv-onstack", "segv-blocked", "segv-default", "toggle" };
	for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
		if (argc > 1 && strcmp(argv[1], modes[i]))
			continue;
		printf("%s: ", modes[i]);
		pid_t pid = fork();
		if (pid == 0)
			_exit(!strcmp(modes[i], "toggle") ? toggle() : ro_altstack(modes[i]));
		int st;
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st))
			printf("killed by signal %d\n", WTERMSIG(st));
		else if (WEXITSTATUS(st))
			printf("exit %d\n", WEXITSTATUS(st));
	}
	return 0;
}
