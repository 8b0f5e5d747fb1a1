/* The channel between `zvisor checkpoint` and the process it asks
 * (cr/command.c, cr/freeze.c): an abstract Unix seqpacket socket named after
 * the asker's pid, on which the process fetches the request and answers
 * "ok" or "error: WHY". */
#ifndef ZV_CR_CHANNEL_H
#define ZV_CR_CHANNEL_H
#include "lib/syscall.h"
#include "lib/fmt.h"

struct zv_cr_sockaddr {
	uint16_t family;
	char path[108];
};

/* A seqpacket socket whose receives time out after secs. */
static inline long zv_cr_channel_socket(long secs)
{
	long fd = zv_sys3(__NR_socket, 1 /* AF_UNIX */, 5 /* SOCK_SEQPACKET */ | 02000000 /* SOCK_CLOEXEC */, 0);
	struct { long s, us; } tv = { secs, 0 };
	if (fd >= 0)
		zv_sys5(__NR_setsockopt, fd, 1 /* SOL_SOCKET */, 20 /* SO_RCVTIMEO */, &tv, sizeof tv);
	return fd;
}

/* The address for the asker pid; returns its length. */
static inline int zv_cr_channel_addr(struct zv_cr_sockaddr *a, int pid)
{
	a->family = 1;
	a->path[0] = 0; /* abstract: no file, gone with the socket */
	int n = zv_snprintf(a->path + 1, sizeof a->path - 1, "zvisor-checkpoint-%d", pid);
	return 2 + 1 + n;
}
#endif
