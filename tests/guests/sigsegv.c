/* Fatal signals (DESIGN 5.6, 5.8): the guest must die from the same signal as
 * natively, and a SIGSEGV handler must see the real fault. Modes (argv[1]):
 *   raise     raise(SIGSEGV)
 *   null      write to address 0
 *   nullcall  call a NULL function pointer (page 0 must stay unmapped for it)
 *   abort     abort(): SIGABRT
 *   handler   a SIGSEGV handler siglongjmps out of a NULL write
 *   ignored   SIGSEGV ignored, then a NULL write: still fatal */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile void *fault_addr;
static volatile int fault_code;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	fault_addr = si->si_addr;
	fault_code = si->si_code;
	siglongjmp(env, 1);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "handler";
	volatile int *volatile nullp = NULL;
	void (*volatile nullfn)(void) = NULL;
	printf("mode %s\n", mode);
	fflush(stdout);
	if (!strcmp(mode, "raise")) {
		raise(SIGSEGV);
	} else if (!strcmp(mode, "null")) {
		*nullp = 1;
	} else if (!strcmp(mode, "nullcall")) {
		nullfn();
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "handler")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
		for (int i = 0; i < 3; i++) {
			if (sigsetjmp(env, 1) == 0) {
				*nullp = i;
				printf("no fault?\n");
				return 1;
			}
			printf("recovered from NULL write %d: si_addr %p, SEGV_MAPERR %d\n", i,
			       (void *)fault_addr, fault_code == SEGV_MAPERR);
		}
		if (sigsetjmp(env, 1) == 0)
			nullfn();
		printf("recovered from NULL call: si_addr %p\n", (void *)fault_addr);
		return 0;
	} else if (!strcmp(mode, "ignored")) {
		signal(SIGSEGV, SIG_IGN);
		*nullp = 1;
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	printf("still alive?\n");
	return 1;
}
