/* The guest's own seccomp (sys/seccomp.c): its filters, run by the kernel
 * on each call, and carried across execve in a memfd. */
#ifndef ZV_SYS_SECCOMP_H
#define ZV_SYS_SECCOMP_H

struct sock_filter;
struct zv_thread;
struct zv_ucontext;

/* Its state, a member of zv_proc. */
#define ZV_MAX_FILTERS 64
struct zv_seccomp {
	int mode; /* 0, SECCOMP_MODE_STRICT or SECCOMP_MODE_FILTER */
	int nfilters;
	unsigned total;
	unsigned len[ZV_MAX_FILTERS];
	struct sock_filter *filter[ZV_MAX_FILTERS];
};

#define ZV_SECCOMP_GO (-4096L - 2) /* seccomp lets the call run */
long zv_seccomp_check(struct zv_thread *t, struct zv_ucontext *uc, long *nr, long *a);
long zv_prctl_seccomp(long mode, long arg);
int zv_seccomp_save(void);      /* the filters into a memfd for execve, or -1 */
void zv_seccomp_restore(int fd); /* and back, in the exec'd image */
#endif
