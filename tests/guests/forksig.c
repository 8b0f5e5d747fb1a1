/* A signal sent to a child right after fork, before it can have run, is
 * the child's: it must act (kill, dump, run the inherited handler), never
 * vanish (LTP kill11 sent SIGBUS to a child still in zvisor's fork path,
 * where the kernel dropped it with the parent's deferred signals). */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_usr1(int sig) { _exit(40 + sig); }

static int run(int sig, int rounds)
{
	int bad = 0;
	for (int i = 0; i < rounds; i++) {
		pid_t p = fork();
		if (p < 0)
			return -1;
		if (p == 0) {
			for (;;)
				pause();
		}
		kill(p, sig);
		int st;
		if (waitpid(p, &st, 0) != p)
			return -1;
		int ok = sig == SIGUSR1 ? WIFEXITED(st) && WEXITSTATUS(st) == 40 + SIGUSR1
					: WIFSIGNALED(st) && WTERMSIG(st) == sig;
		if (!ok && bad++ == 0)
			printf("round %d of signal %d: status %#x\n", i, sig, st);
	}
	return bad;
}

int main(void)
{
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	signal(SIGUSR1, on_usr1);
	const int sigs[] = { SIGBUS, SIGSEGV, SIGUSR1, SIGTERM };
	int failed = 0;
	for (unsigned k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
		int bad = run(sigs[k], 100);
		printf("signal %d right after fork: %s\n", sigs[k], bad ? "FAIL" : "acted 100 times");
		failed |= bad != 0;
	}
	return failed;
}
