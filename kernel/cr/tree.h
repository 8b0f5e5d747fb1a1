/* The checkpoint of a process tree (docs/CHECKPOINT.md, "Process trees").
 *
 * `zvisor checkpoint PID DIR` (cr/coord.c) reaches each process of the
 * tree over the peer channel (peer/peer.h, service ZV_PEER_CHECKPOINT,
 * cr/serve.c), top-down: each freezes (every thread parked) and answers
 * with its ids as its program sees them and its children's, whom the
 * coordinator asks next. Once all are frozen it asks each to dump itself
 * (a tree: into DIR's p<PID>), then to resume or to end. One process with
 * no children writes DIR itself, as an image of one process.
 *
 * A tree image is DIR/index.json with one section, "tree" (this file's
 * structs), and DIR/pVPID, the image of each live process. */
#ifndef ZV_CR_TREE_H
#define ZV_CR_TREE_H
#include <stdint.h>
#include "cr/cr.h"

enum { ZV_CR_OP_FREEZE = 1, ZV_CR_OP_DUMP, ZV_CR_OP_RESUME, ZV_CR_OP_KILL };

/* The first message: freeze (with the peer header). */
struct zv_cr_ask {
	uint32_t magic;                /* struct zv_peer_hdr's three fields */
	uint16_t version, service;
	uint32_t op, pad;
};
/* The answer to FREEZE. */
#define ZV_CR_MAX_CHILDREN 128
struct zv_cr_frozen {
	int32_t err;                   /* 0, or -1 with why */
	int32_t hpid;
	int32_t vpid, vppid, vpgid, vsid; /* as the program sees them */
	int32_t nchildren;
	int32_t pad;
	struct { int32_t hpid, vpid; } children[ZV_CR_MAX_CHILDREN];
	char why[256];
};
/* Then DUMP (with the request: DIR, options) or RESUME, KILL. */
struct zv_cr_command {
	uint32_t op;
	int32_t tree;                  /* 1: one of a tree; the census is in dirname(DIR)/census.bin */
	struct zv_cr_request req;
};
struct zv_cr_done {
	int32_t err, pad;
	char why[256];
};

/* Section "tree". */
#define ZV_CR_TREE_MAGIC 0x5a565452u /* "ZVTR" */
struct zv_cr_tree_head {
	uint32_t magic, version;       /* 1 */
	uint32_t nprocs, nshares;
};
struct zv_cr_tree_proc {
	int32_t vpid, vppid, vpgid, vsid; /* as the programs saw them; the root's vppid and, when its
					   * session or group is not the tree's, vsid and vpgid are outside */
	int32_t zombie;                /* 1: ended, not yet waited for: status */
	int32_t status;                /* a zombie's wait status */
	int32_t hpid, hppid;           /* the host's at the checkpoint */
};
/* Fds of different processes sharing one open file description (kcmp):
 * the same group number. */
struct zv_cr_tree_share {
	int32_t vpid, fd, group, pad;
};
#endif
