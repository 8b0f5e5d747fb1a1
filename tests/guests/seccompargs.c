/* seccomp filter arguments refused in the host's order (LTP prctl02): the
 * sock_fprog is read (EFAULT) and its length checked (EINVAL) before the
 * privilege (EACCES without no_new_privs or CAP_SYS_ADMIN), and its filter
 * is read after it. The guest drops its effective capabilities first, so
 * it runs the same as root or as an ordinary user. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "errname.h"

/* A call's result: "success", or its errno's name. */
static const char *result(long r)
{
	return r >= 0 ? "success" : errname(errno);
}

int main(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capget, &h, d) == 0) {
		d[0].effective = d[1].effective = 0;
		syscall(SYS_capset, &h, d);
	}
	void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog empty = { 0, &allow }, ok = { 1, &allow }, nofilter = { 1, bad };

	printf("prctl, unreadable fprog:       %s\n", result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, bad)));
	printf("seccomp, unreadable fprog:     %s\n",
	       result(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, bad)));
	printf("seccomp, no fprog:             %s\n",
	       result(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, NULL)));
	printf("empty filter:                  %s\n", result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &empty)));
	printf("unprivileged:                  %s\n", result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &ok)));
	printf("unprivileged, bad filter:      %s\n",
	       result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &nofilter)));
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	printf("no_new_privs, bad filter:      %s\n",
	       result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &nofilter)));
	printf("no_new_privs:                  %s\n", result(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &ok)));
	return 0;
}
