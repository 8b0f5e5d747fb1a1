/* switchsys.c: system calls in the cases of a switch that the compiler
 * makes a jump table (intercept/jumptab.c). The loader proves the table's
 * targets from the bound check and the table itself, so the calls get
 * windows: under the stubs platform none of them takes a SIGSYS. */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline __attribute__((always_inline)) long raw1(long nr, long a)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a) : "rcx", "r11", "memory");
	return r;
}

/* Each case a different call; 7 falls into 8, so a case label sits just
 * before a call's set-up. */
__attribute__((noinline)) long dispatch(unsigned k, long *acc)
{
	switch (k) {
	case 0: return raw1(SYS_getpid, 0);
	case 1: return raw1(SYS_getppid, 0);
	case 2: return raw1(SYS_gettid, 0);
	case 3: return raw1(SYS_getuid, 0);
	case 4: return raw1(SYS_getgid, 0);
	case 5: return raw1(SYS_geteuid, 0);
	case 6: return raw1(SYS_getegid, 0);
	case 7: *acc += 3; /* fall through */
	case 8: return raw1(SYS_umask, 022);
	case 9: return raw1(SYS_getpgid, 0);
	default: return -1;
	}
}

int main(void)
{
	long want[10] = { getpid(), getppid(), getpid(), getuid(), getgid(), geteuid(), getegid(), 022, 022, getpgid(0) };
	umask(022);
	long acc = 0;
	int bad = 0;
	for (int round = 0; round < 200; round++)
		for (unsigned k = 0; k < 11; k++) {
			long r = dispatch(k, &acc);
			if (k == 10 ? r != -1 : r != want[k]) {
				printf("FAIL case %u: %ld, want %ld\n", k, r, k < 10 ? want[k] : -1L);
				bad = 1;
			}
		}
	printf("cases ok: %s, fell through %ld times\n", bad ? "no" : "yes", acc / 3);
	return bad;
}
