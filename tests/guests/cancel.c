/* Signals deferred inside the kernel (DESIGN 5.6): a SIGCHLD (handler
 * without SA_RESTART) that arrives while the kernel is about to make a call
 * for the guest must not make that call fail with EINTR. Natively the
 * handler runs before the call starts, so calls that cannot be interrupted
 * (close, pipe, fcntl) never return EINTR, and close always closes. Each
 * round forks a child that exits at once and closes a pipe's write end
 * while the SIGCHLD is on its way; a close lost this way once left a shell
 * pipeline waiting forever for EOF. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int children;

static void on_chld(int sig)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		children++;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3000, bad = 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_chld; /* no SA_RESTART */
	sigaction(SIGCHLD, &sa, NULL);
	for (int i = 0; i < rounds; i++) {
		int p[2];
		if (pipe(p) != 0) {
			printf("round %d: pipe: %s\n", i, strerror(errno));
			bad++;
			continue;
		}
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		if (c < 0) {
			printf("round %d: fork: %s\n", i, strerror(errno));
			return 1;
		}
		int r = close(p[1]);
		if (r != 0 || fcntl(p[1], F_GETFD) != -1) {
			if (bad < 5)
				printf("round %d: close gave %d (%s), fd %s\n", i, r, r ? strerror(errno) : "",
				       fcntl(p[1], F_GETFD) != -1 ? "still open" : "closed");
			bad++;
		}
		close(p[0]);
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	printf("%d rounds, %d calls failed or lost\n", rounds, bad);
	return bad != 0;
}
