/* What the saved processes hold (cr/census.c), for telling an fd that
 * leads into them from one that leads outside: the pipes and their ends,
 * the sockets by inode, the TCP connections by their two addresses, and
 * the outside files the restore provides (the root's fds 0-2, and each
 * --inherit-fd N). One process builds it from its own fds; `zvisor
 * checkpoint` of a tree builds it from /proc and writes it where each
 * process of the tree reads it. */
#ifndef ZV_CR_CENSUS_H
#define ZV_CR_CENSUS_H
#include <stdint.h>
#include <stddef.h>
#include "cr/resutil.h"

/* An address of a TCP connection's end, as the host's tables show it. */
struct zv_cr_endpoint {
	uint16_t family;      /* AF_INET, AF_INET6 */
	uint16_t port;        /* network order */
	uint8_t addr[16];     /* AF_INET: the first 4 */
};
/* A pipe's or a pty's ends among the processes. A pipe (key: its inode):
 * 1 a reading end, 2 a writing end. A pty (key: its number): 1 its master,
 * 2 its terminal. */
struct zv_cr_census_ends {
	uint64_t key;
	uint32_t ends;
	uint32_t pad;
};
struct zv_cr_census_tcp {
	struct zv_cr_endpoint local, remote;
	uint32_t orphan;      /* a socket no process holds any more (closed, its FIN sent) */
	uint32_t pad;         /* the buffer's entries are 8-byte aligned */
};
struct zv_cr_census_out {
	int32_t key, pad;     /* 0-2: the restorer's stdio; N: zvisor restore --inherit-fd N */
	uint64_t dev, ino;
};
struct zv_cr_census {
	struct zv_cr_buf pipes, socks, tcp, out, ptys; /* the arrays above, and socket inodes (uint64_t) */
	struct zv_cr_buf procs; /* the processes' host pids (uint64_t; zombies too): what a pidfd may name */
	int self;             /* of one process, by itself: its own fds 0-2 are the outside's */
	int tcp_held;         /* a process holds a TCP socket (not in the file) */
};

void zv_cr_census_pipe(struct zv_cr_census *c, uint64_t ino, uint32_t ends);
void zv_cr_census_sock(struct zv_cr_census *c, uint64_t ino);
void zv_cr_census_conn(struct zv_cr_census *c, const struct zv_cr_endpoint *local, const struct zv_cr_endpoint *remote,
		       int orphan);
void zv_cr_census_pty(struct zv_cr_census *c, uint32_t index, uint32_t ends);
void zv_cr_census_outside(struct zv_cr_census *c, int key, uint64_t dev, uint64_t ino);
void zv_cr_census_proc(struct zv_cr_census *c, int hpid);
int zv_cr_census_has_proc(const struct zv_cr_census *c, int hpid);
/* The processes' ends of pipe ino (0: none). */
uint32_t zv_cr_census_pipe_ends(const struct zv_cr_census *c, uint64_t ino);
uint32_t zv_cr_census_pty_ends(const struct zv_cr_census *c, uint32_t index);
int zv_cr_census_has_sock(const struct zv_cr_census *c, uint64_t ino);
/* Whether a connection of the processes goes from remote to local. */
int zv_cr_census_has_peer(const struct zv_cr_census *c, const struct zv_cr_endpoint *local,
			  const struct zv_cr_endpoint *remote);
/* A process alone (its own census): the host's sockets closed by their
 * owners, for zv_cr_census_peer_closed. */
void zv_cr_census_closed_peers(struct zv_cr_census *c);
/* Whether the other end of the connection local-remote is a socket its
 * owner closed (no process holds it: it waits for its FIN's answer). */
int zv_cr_census_peer_closed(const struct zv_cr_census *c, const struct zv_cr_endpoint *local,
			     const struct zv_cr_endpoint *remote);
/* The key of the outside file (dev, ino), or -1. */
int zv_cr_census_out_key(const struct zv_cr_census *c, uint64_t dev, uint64_t ino);
/* A socket address (sockaddr_in or sockaddr_in6) as an endpoint: 0, or -1 for another family. */
int zv_cr_endpoint_of(const void *sa, uint32_t len, struct zv_cr_endpoint *e);

/* A pseudo-terminal's number from its terminal's rdev (/dev/pts/N), or -1;
 * whether rdev is /dev/ptmx's (a master). */
long zv_cr_pts_index(unsigned long rdev);
static inline int zv_cr_is_ptmx(unsigned long rdev) { return rdev == 0x502; }

/* The census of host processes pids[n] (their fds and TCP tables, from
 * /proc) into c: 0 or -errno. */
long zv_cr_census_of(struct zv_cr_census *c, const int *pids, int n);
/* Written to and read from a file (the tree's, cr/tree.c): 0 or -errno. */
long zv_cr_census_write(const struct zv_cr_census *c, int dirfd, const char *name);
long zv_cr_census_read(struct zv_cr_census *c, int dirfd, const char *name);
void zv_cr_census_free(struct zv_cr_census *c);
#endif
