/* A thread's credentials as the guest sees them (struct zv_thread's cred):
 * the host's, cached by sys/id.c, or virtual ones that a feature keeps
 * (zv_proc.cred_virtual: --fake-root, --ids), which no host call changes
 * and which the getuid family answers from alone. */
#ifndef ZV_SYS_CRED_H
#define ZV_SYS_CRED_H
#include <stdint.h>

/* Supplementary groups a virtual identity can hold (the host's limit,
 * NGROUPS_MAX, is 65536: a longer list is refused with EINVAL). */
#define ZV_CRED_GROUPS 32

struct zv_cred {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	/* the rest is kept for virtual credentials only */
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	uint32_t securebits;
	uint32_t ngroups;
	uint32_t groups[ZV_CRED_GROUPS]; /* sorted, as the host keeps them */
};
#endif
