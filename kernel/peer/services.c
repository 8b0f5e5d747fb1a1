/* The services the peer channel runs on a connection (peer/peer.h), by
 * the asker's first message: one row per service, as sys/layers.c lists
 * the layers. */
#include "zvisor.h"
#include "peer/peer.h"
#include "ptrace/ptrace.h"
#include "cr/cr.h"

zv_peer_serve_fn *const zv_peer_services[ZV_PEER_NSERVICES] = {
	[ZV_PEER_PTRACE_ATTACH] = zv_pt_serve_attach, /* ptrace/attach.c */
	[ZV_PEER_PTRACE_JOIN] = zv_pt_serve_join,     /* ptrace/attach.c */
	[ZV_PEER_CHECKPOINT] = zv_cr_serve,           /* cr/serve.c */
};
