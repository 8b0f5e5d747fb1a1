/* A Unix socket as NETLINK_SOCK_DIAG describes it (cr/sockdiag.c). */
#ifndef ZV_CR_SOCKDIAG_H
#define ZV_CR_SOCKDIAG_H
#include <stdint.h>

struct zv_cr_unix_diag {
	int type, state;       /* SOCK_*; 1 connected, 7 unconnected, 10 listening */
	uint64_t peer_ino;     /* 0: none (not connected, or its peer was closed) */
	uint32_t shutdown;     /* 1: no more receives, 2: no more sends */
	uint32_t pending;      /* a listener's connections not yet accepted */
};
/* 0, or -errno (no such socket, no sock_diag). */
long zv_cr_unix_diag(uint64_t ino, struct zv_cr_unix_diag *d);
#endif
