/* Signals held by the guest, as LTP's sighold02 holds them: a child
 * catches every signal it can (1-31 but SIGKILL, SIGSTOP, SIGCHLD and
 * SIGALRM, and the real-time ones), blocks each one by one (sighold), and its parent
 * sends it each one while it waits in a blocking read. No handler may run
 * while they are held, sigpending must show every one, and releasing them
 * must run each handler once. SIGSYS, SIGSEGV and SIGBUS are among them:
 * zvisor keeps those unblocked on the host. Modes: "read" (the child waits
 * in read), "futex" (in a futex wait, as LTP's checkpoints do), "spin" (in
 * guest code, making no call). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1

static volatile sig_atomic_t caught[65];
static volatile sig_atomic_t ncaught;

static void handler(int sig)
{
	caught[sig]++;
	ncaught++;
}

static int skipped(int sig)
{
	return (sig >= 32 && sig < SIGRTMIN) || sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD ||
	       sig == SIGALRM;
}

static void list(const char *what, int (*has)(int))
{
	printf("%s:", what);
	for (int sig = 1; sig < 65; sig++)
		if (!skipped(sig) && has(sig))
			printf(" %d", sig);
	printf("\n");
}

static sigset_t pend;
static int is_pending(int sig) { return sigismember(&pend, sig) == 1; }
static int was_caught(int sig) { return caught[sig] != 0; }
static int caught_twice(int sig) { return caught[sig] > 1; }
static int not_caught(int sig) { return caught[sig] == 0; }

/* sighold(sig), which glibc marks deprecated */
static int hold(int sig)
{
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	return sigprocmask(SIG_BLOCK, &one, NULL);
}

static volatile int *word; /* shared with the parent: 1 when all are sent */

static void wait_for_parent(const char *mode, int rfd)
{
	if (!strcmp(mode, "read")) {
		char c;
		while (read(rfd, &c, 1) < 0 && errno == EINTR)
			;
	} else if (!strcmp(mode, "futex")) {
		while (!__atomic_load_n(word, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, word, FUTEX_WAIT, 0, NULL, NULL, 0);
	} else {
		while (!__atomic_load_n(word, __ATOMIC_ACQUIRE))
			;
	}
}

static int child(const char *mode, int rfd, int wfd)
{
	struct sigaction sa = { .sa_handler = handler };
	for (int sig = 1; sig < 65; sig++)
		if (!skipped(sig) && sigaction(sig, &sa, NULL))
			printf("sigaction %d failed\n", sig);
	for (int sig = 1; sig < 65; sig++)
		if (!skipped(sig) && hold(sig))
			printf("sighold %d failed\n", sig);
	write(wfd, "r", 1);
	wait_for_parent(mode, rfd);
	printf("handlers run while held: %d\n", (int)ncaught);
	list("caught while held", was_caught);
	sigpending(&pend);
	list("pending", is_pending);
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	list("not caught after release", not_caught);
	list("caught twice", caught_twice);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "read";
	setvbuf(stdout, NULL, _IONBF, 0);
	word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		return 1;
	pid_t pid = fork();
	if (pid == 0)
		_exit(child(mode, down[0], up[1]));
	char c;
	if (read(up[0], &c, 1) != 1)
		return 1;
	for (int sig = 1; sig < 65; sig++)
		if (!skipped(sig) && kill(pid, sig))
			printf("kill %d failed\n", sig);
	usleep(100 * 1000); /* let the signals land while the child waits */
	__atomic_store_n(word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
	write(down[1], "g", 1);
	int st;
	waitpid(pid, &st, 0);
	printf("child: %s %d\n", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}
