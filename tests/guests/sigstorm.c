/* A signal storm inside system calls (DESIGN 5.2, 5.6, 5.11): a 50 us
 * ITIMER_REAL delivers SIGALRM (SA_RESTART) to a handler that makes system
 * calls of its own (getppid, write to /dev/null) and clobbers the vector
 * registers, while the main thread makes 200000 raw getppid, read(/dev/zero,
 * 1) and write(/dev/null, 1) through three inline-asm sites, each with
 * xmm0-15 (and the upper halves of ymm0-15 with AVX2) loaded with a known
 * pattern right before the syscall and compared right after. Signals that
 * arrive while the thread is in the kernel must be deferred and delivered on
 * the way out without losing any register or result. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define CALLS 200000

static int zero_fd, null_fd, has_avx2;
static long ppid;
static volatile sig_atomic_t signals, handler_bad;

#define IRP16 ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
#define XMM_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
		     "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

__attribute__((target("avx2"))) static void clobber_ymm(void)
{
	__asm__ volatile(IRP16 "vpcmpeqd %%ymm\\i, %%ymm\\i, %%ymm\\i\n .endr\n vzeroupper\n"
			 ::: "memory", XMM_CLOBBERS);
}

static void on_alarm(int sig)
{
	char c = 'x';
	if (syscall(SYS_getppid) != ppid || write(null_fd, &c, 1) != 1)
		handler_bad = 1;
	__asm__ volatile(IRP16 "pcmpeqd %%xmm\\i, %%xmm\\i\n .endr\n" ::: "memory", XMM_CLOBBERS);
	if (has_avx2)
		clobber_ymm();
	signals++;
}

/* One syscall site per function: the vector registers are loaded from in[]
 * right before the syscall and stored to out[] right after. */
#define XMM_LOAD IRP16 "movdqu \\i*16(%[in]), %%xmm\\i\n .endr\n"
#define XMM_STORE IRP16 "movdqu %%xmm\\i, \\i*16(%[out])\n .endr\n"
#define YMM_LOAD IRP16 "vmovdqu \\i*32(%[in]), %%ymm\\i\n .endr\n"
#define YMM_STORE IRP16 "vmovdqu %%ymm\\i, \\i*32(%[out])\n .endr\n vzeroupper\n"
#define SITE(name, LOAD, STORE, ...)                                                           \
	__VA_ARGS__ __attribute__((noinline)) static long name(long nr, long a0, long a1, long a2, \
							       const unsigned char *in,         \
							       unsigned char *out)              \
	{                                                                                          \
		long r;                                                                            \
		__asm__ volatile(LOAD "syscall # " #name "\n" STORE                                \
				 : "=a"(r)                                                         \
				 : "a"(nr), "D"(a0), "S"(a1), "d"(a2), [in] "r"(in), [out] "r"(out) \
				 : "rcx", "r11", "memory", XMM_CLOBBERS);                          \
		return r;                                                                          \
	}
SITE(getppid_xmm, XMM_LOAD, XMM_STORE)
SITE(read_xmm, XMM_LOAD, XMM_STORE)
SITE(write_xmm, XMM_LOAD, XMM_STORE)
SITE(getppid_ymm, YMM_LOAD, YMM_STORE, __attribute__((target("avx2"))))
SITE(read_ymm, YMM_LOAD, YMM_STORE, __attribute__((target("avx2"))))
SITE(write_ymm, YMM_LOAD, YMM_STORE, __attribute__((target("avx2"))))

typedef long site_fn(long, long, long, long, const unsigned char *, unsigned char *);

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* what was verified survives a crash */
	__builtin_cpu_init();
	has_avx2 = __builtin_cpu_supports("avx2");
	site_fn *sites[3] = { getppid_xmm, read_xmm, write_xmm };
	if (has_avx2) {
		sites[0] = getppid_ymm;
		sites[1] = read_ymm;
		sites[2] = write_ymm;
	}
	int width = has_avx2 ? 32 : 16;
	zero_fd = open("/dev/zero", O_RDONLY);
	null_fd = open("/dev/null", O_WRONLY);
	ppid = syscall(SYS_getppid);
	if (zero_fd < 0 || null_fd < 0) {
		perror("open");
		return 1;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);

	static unsigned char in[16 * 32], out[16 * 32];
	long ok[3] = { 0, 0, 0 }, bad_result = 0, bad_vector = 0;
	for (long n = 0; n < CALLS; n++) {
		int kind = n % 3;
		unsigned char buf = 0xff;
		for (int i = 0; i < 16 * 32; i++)
			in[i] = (unsigned char)(i * 13 + n * 7 + 1);
		long r;
		if (kind == 0)
			r = sites[0](110, 0, 0, 0, in, out);
		else if (kind == 1)
			r = sites[1](0, zero_fd, (long)&buf, 1, in, out);
		else
			r = sites[2](1, null_fd, (long)&buf, 1, in, out);
		if (kind == 0 ? r != ppid : r != 1 || (kind == 1 && buf != 0)) {
			if (bad_result++ == 0)
				printf("  FAIL: call %ld (%s) returned %ld\n", n,
				       kind == 0 ? "getppid" : kind == 1 ? "read" : "write", r);
		} else if (memcmp(in, out, 16 * width)) {
			if (bad_vector++ == 0)
				for (int i = 0; i < 16; i++)
					if (memcmp(in + i * width, out + i * width, width)) {
						printf("  FAIL: call %ld: %s%d changed\n", n,
						       has_avx2 ? "ymm" : "xmm", i);
						break;
					}
		} else {
			ok[kind]++;
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("%ld calls ok: %ld getppid, %ld read, %ld write\n", ok[0] + ok[1] + ok[2], ok[0],
	       ok[1], ok[2]);
	printf("wrong results %ld, vector registers changed %ld\n", bad_result, bad_vector);
	printf("signals arrived %s, handler's calls ok %d\n", signals > 0 ? "yes" : "no",
	       !handler_bad);
	return bad_result || bad_vector || handler_bad || signals == 0;
}
