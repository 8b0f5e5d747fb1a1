/* The channel between zvisor-hosted processes (kernel/peer/peer.c): how one
 * process's kernel reaches another's by host pid, for the guest's ptrace
 * (kernel/ptrace/), `zvisor trace -p` and the checkpoint of a process
 * tree (kernel/cr/).
 *
 * The asker listens on an abstract Unix seqpacket socket named after its
 * host pid, a slot and the knocked process's host pid, and knocks: a
 * queued SIGSYS (the kernel's signal, which no guest can block or catch)
 * whose value carries a tag, the slot and its pid. A knock whose siginfo
 * the host lost (a full queue of pending signals) is found by its name in
 * /proc/net/unix. The knocked process connects back at a safe point (at once
 * when the SIGSYS interrupted guest code, else on its way back to the
 * guest), each side checks the other with SO_PEERCRED (the pid it expects,
 * the same user or root), and the asker's first message names the service
 * the knocked side runs on the connection (ZV_PEER_SERVICE, below). File
 * descriptors travel with SCM_RIGHTS: the memfd areas that ptrace's stops
 * and resumes then go through (futexes on shared memory, no socket). */
#ifndef ZV_PEER_PEER_H
#define ZV_PEER_PEER_H
#include <stdint.h>
#include <stddef.h>
#include "arch/context.h"

struct zv_thread;

/* The knock: value = PEER_MAGIC << 40 | slot << 32 | asker's host pid. */
#define ZV_PEER_MAGIC 0x7a7670UL /* "zvp" */
#define ZV_PEER_SLOTS 64         /* rendezvous one process may have open at once */

/* The first message of a session: which service, then its own bytes. */
struct zv_peer_hdr {
	uint32_t magic;   /* ZV_PEER_HDR_MAGIC */
	uint16_t version; /* ZV_PEER_VERSION: both sides are the same image anyway */
	uint16_t service; /* enum zv_peer_service */
};
#define ZV_PEER_HDR_MAGIC 0x7a767072U
#define ZV_PEER_VERSION 1

enum zv_peer_service {
	ZV_PEER_PTRACE_ATTACH = 1, /* tracer -> tracee: ATTACH or SEIZE (ptrace/attach.c) */
	ZV_PEER_PTRACE_JOIN = 2,   /* tracee -> tracer: TRACEME, an auto-attached child, an exec */
	ZV_PEER_TRACE_REMOTE = 3,  /* `zvisor trace -p` -> a process: trace from now on */
	ZV_PEER_CHECKPOINT = 4,    /* `zvisor checkpoint` -> each process of a tree: freeze, dump, resume (cr/serve.c) */
	ZV_PEER_PROCFILE = 5,      /* a reader of /proc/PID/maps -> PID: its own view of it (sys/procview_peer.c) */
	ZV_PEER_NSERVICES
};

/* A service: serves the session on fd whose first message (hdr included)
 * is msg[0..n) with nfds fds; owns fds and fd. */
typedef void zv_peer_serve_fn(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds);
/* A feature offers a service with ZV_PEER_SERVICE(name, id, fn) in its own
 * file (id: enum zv_peer_service): the linker lists them (kernel/zvisor.ld)
 * and the channel runs the one a session's first message names. */
struct zv_peer_service_entry {
	int id;
	zv_peer_serve_fn *serve;
};
#define ZV_PEER_SERVICE(name, id, fn) \
	__attribute__((used, section(".zv_peer_services." #name))) \
	static const struct zv_peer_service_entry *const zv_peer_service_##name = \
		&(const struct zv_peer_service_entry){ id, fn }
extern const struct zv_peer_service_entry *const zv_peer_services_start[], *const zv_peer_services_end[];

/* Whether host process hpid runs this zvisor image (the knock is a SIGSYS,
 * which kills a process that is not zvisor's): 1, 0, or -errno (ESRCH, EACCES). */
int zv_peer_hosted(int hpid);

/* A rendezvous under way: the listener and its slot. */
struct zv_peer_wait {
	int listener;
	int slot;
	int hpid; /* the knocked process */
};
/* Knocks process hpid after opening the listener; 0 or -errno. The knock
 * goes to the process, not a thread: the host drops a SIGSYS queued to a
 * thread while one is pending there, as a call's trap is on sud and
 * seccomp, and any thread serves it. */
long zv_peer_knock(int hpid, struct zv_peer_wait *w);
/* Waits up to ms for the knocked process to connect (ms 0: only looks);
 * the connected fd (checked), -EAGAIN if not yet, or -errno. Closes the
 * listener unless -EAGAIN. */
long zv_peer_accept(struct zv_peer_wait *w, int ms);
void zv_peer_cancel(struct zv_peer_wait *w);
/* As zv_peer_accept, knocking again while unanswered: a knock that came
 * during a host execve or to a vfork child is lost. Closes the listener. */
long zv_peer_await(struct zv_peer_wait *w, int ms);
/* Both at once: a connected fd or -errno (-ETIMEDOUT). */
long zv_peer_open(int hpid, int ms);

/* The host pid at the other end of a session. */
int zv_peer_pid(int fd);

/* Messages on a session: 0 or -errno; recv returns the length. */
long zv_peer_send(int fd, const void *buf, size_t n, const int *fds, int nfds);
long zv_peer_recv(int fd, void *buf, size_t n, int *fds, int maxfds, int *nfds);
/* A request (hdr filled in here) and its answer, with fds either way. */
long zv_peer_request(int fd, int service, void *req, size_t n, const int *fds, int nfds, void *ans, size_t an,
		     int *afds, int maxafds, int *nafds);

/* A queued SIGSYS: 1 if it was a knock (served now, or queued for the way
 * back to the guest). */
int zv_peer_sigsys(struct zv_thread *t, const void *siginfo, struct zv_ucontext *uc);
/* Serves the knocks queued so far (a thread that waits in the kernel for
 * long, such as a ptrace stop, calls this when its wait is interrupted). */
void zv_peer_serve_pending(struct zv_thread *t);
int zv_peer_pending(void);
#endif
