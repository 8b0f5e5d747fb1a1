/* traced_child(body, options): a fork child that asks to be traced and
 * stops (TRACEME, then SIGSTOP), then runs body and exits 0; its tracer has
 * waited for that stop and set TRACESYSGOOD and options. */
#ifndef GUEST_TRACED_H
#define GUEST_TRACED_H
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include "say.h"

static pid_t traced_child(void (*body)(void), long options) __attribute__((unused));
static pid_t traced_child(void (*body)(void), long options)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0);
		raise(SIGSTOP);
		body();
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st));
	CHECK(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | options) == 0);
	return pid;
}
#endif
