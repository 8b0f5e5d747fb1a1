/* The seccomp platform, for hosts without Syscall User Dispatch: a filter
 * allows a syscall only when it comes from the kernel's text and traps
 * everything else (as no-MMU UML does), as SIGSYS to the catch-all
 * (plat_catchall.c). It survives execve, which is why zvisor is linked at a
 * fixed address: the next image is zvisor again with the same text range. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "intercept/platform.h"
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/filter.h>

#define ZV_SECCOMP_DATA 0x2a5 /* marks traps from this filter (plat_catchall.c) */

static long install(void)
{
	if (zv_proc.seccomp_installed)
		return 0; /* inherited across execve */
	uint32_t hi = (uint32_t)(zv_proc.text_start >> 32);
	uint32_t lo = (uint32_t)zv_proc.text_start, lo_end = (uint32_t)zv_proc.text_end;
	if ((zv_proc.text_end - 1) >> 32 != hi)
		return -EINVAL; /* text must not straddle a 4 GiB boundary */
	struct sock_filter prog[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, hi, 0, 4),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo, 0, 2),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lo_end, 1, 0),
		/* 5 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 6 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | ZV_SECCOMP_DATA),
	};
	struct sock_fprog fprog = { .len = sizeof prog / sizeof prog[0], .filter = prog };
	long r = zv_sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
	if (r == -EACCES) {
		/* Without CAP_SYS_ADMIN a filter needs no_new_privs. */
		zv_sys5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		r = zv_sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
	}
	if (r == 0)
		zv_proc.seccomp_installed = 1;
	return r;
}

static long arm_thread(struct zv_thread *t)
{
	(void)t;
	return 0; /* the filter is inherited by every thread */
}

ZV_PLATFORM(seccomp, 1) = {
	.name = "seccomp",
	ZV_PLATFORM_COMMON,
	.install = install,
	.arm_thread = arm_thread,
	.host_vdso = 0, /* the filter cannot let the host vDSO's fallback through */
};
