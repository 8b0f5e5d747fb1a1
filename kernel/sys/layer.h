/* Layers: features that wrap guest calls between the entry (sys/entry.c)
 * and the call's handler or the host, in the order sys/layers.c lists
 * them. Each one sees the calls it asks for, does its work, and passes the
 * call on with zv_next; events (fork, exec, exit, signals) reach them
 * through hooks. Which layers see a call is folded, per number, into the
 * fast path's kind (zv_call_kind), so a call no layer wants stays a direct
 * host call. */
#ifndef ZV_SYS_LAYER_H
#define ZV_SYS_LAYER_H
#include <stdint.h>
#include "sys/sysent.h"
#include "arch/context.h"

struct zv_call {
	struct zv_thread *t;
	/* The guest's registers at the call: the host's signal frame (SIGSYS,
	 * or a bounce) for rows marked `frame`, which may change the mask, rip
	 * and fpstate; otherwise possibly the fast entry's copy. */
	struct zv_ucontext *uc;
	long nr;
	long *a;                /* its six arguments (a layer may pass others on) */
	unsigned pending;       /* the layers still to see it (bits of the list's order) */
	unsigned after;         /* the layers after the one running it (zv_next_as) */
};

struct zv_layer {
	const char *name;
	int (*sees)(long nr);   /* with the options in force; refolded by zv_layers_fold */
	/* Whether sees may say yes to any number now (a fold asks sees only
	 * of the layers that are on). NULL: always on. */
	int (*active)(void);
	zv_hook *call;
	/* The fast path's direct host call does this layer's work itself
	 * (hidden-fd checks, -c's cycle count), so host calls it sees may stay
	 * direct. NULL: never. */
	int (*inline_host)(void);
	/* Events, each optional. */
	void (*fork_child)(struct zv_thread *t);                 /* in a new process */
	void (*exec)(struct zv_thread *t, long nr, const long *a); /* before the host execve */
	void (*exec_failed)(struct zv_thread *t, long nr);
	void (*exit)(struct zv_thread *t, int code, int sig);    /* a thread or process ends (sig: killed) */
	void (*signal)(struct zv_thread *t, int sig, const void *siginfo); /* delivered to a guest handler */
	/* Before a signal is acted on (a handler, its default action, or
	 * ignored): returns the signal to act on instead (0: none), and may
	 * change *si (the guest's ptrace: a signal-delivery stop). */
	int (*deliver)(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc);
	/* Work a feature asked for with zv_kwork_request, on the way back to
	 * the guest with the guest's registers in uc. */
	void (*kwork)(struct zv_thread *t, struct zv_ucontext *uc);
	/* A queued signal (si_code SI_QUEUE) as the host hands it over: a
	 * layer may make it what it stands for (another kernel's SIGCHLD). */
	void (*arrive)(struct zv_thread *t, int sig, zv_siginfo *si);
	/* A queued SIGSYS (si_code SI_QUEUE) that may carry a kernel's tag:
	 * 1 if it was this layer's. */
	int (*sigsys)(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc);
	/* clone, fork, vfork: before (child: the new task's block when it
	 * shares this memory, else NULL) and after, in the parent (child: its
	 * pid, or -errno). */
	void (*clone_before)(struct zv_thread *t, struct zv_thread *child, uint64_t flags);
	void (*clone_after)(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags);
	/* A CLONE_VM child's first moment, with its entry frame; and a
	 * vfork parent's, once its child let go of the memory. */
	void (*task_start)(struct zv_thread *t, struct zv_ucontext *uc);
	void (*vfork_done)(struct zv_thread *t, struct zv_ucontext *uc, long child);
	/* A new image's first thread, before the guest's first instruction,
	 * whose registers uc holds (rip: the entry point, rsp: its stack). */
	void (*exec_start)(struct zv_thread *t, struct zv_ucontext *uc);
};

/* The layers, in order (sys/layers.c). */
extern const struct zv_layer zv_ptrace_layer, zv_peer_layer, zv_trace_layer, zv_inject_layer, zv_sandbox_layer, zv_fdguard_layer,
	zv_procview_layer, zv_vtime_layer, zv_count_layer, zv_cr_pids_layer,
	zv_cr_waits_layer, zv_cr_lazy_layer;

/* Passes the call to the next layer that sees it, or to its handler or
 * the host. */
long zv_next(struct zv_call *c);
/* The same with other arguments (a layer that converts them). */
static inline long zv_next_with(struct zv_call *c, long *a)
{
	long *orig = c->a;
	c->a = a;
	long r = zv_next(c);
	c->a = orig;
	return r;
}
/* The same call with another number or other arguments (a tracer changed
 * them): the layers after this one that see the new number, then its
 * handler or the host. */
long zv_next_as(struct zv_call *c, long nr, long *a);
/* Runs guest call nr through every layer that sees it. */
long zv_layers_call(struct zv_thread *t, struct zv_ucontext *uc, long nr, long *a);
/* Recomputes which layers see each call and the fast path's kinds: at
 * start-up and whenever a layer's state changes. */
void zv_layers_fold(void);

void zv_event_fork_child(struct zv_thread *t);
void zv_event_exec(struct zv_thread *t, long nr, const long *a);
void zv_event_exec_failed(struct zv_thread *t, long nr);
void zv_event_exit(struct zv_thread *t, int code, int sig);
void zv_event_signal(struct zv_thread *t, int sig, const void *siginfo);
int zv_event_deliver(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc);
void zv_event_kwork(struct zv_thread *t, struct zv_ucontext *uc);
int zv_event_sigsys(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc);
void zv_event_arrive(struct zv_thread *t, int sig, zv_siginfo *si);
void zv_event_clone_before(struct zv_thread *t, struct zv_thread *child, uint64_t flags);
void zv_event_clone_after(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags);
void zv_event_task_start(struct zv_thread *t, struct zv_ucontext *uc);
void zv_event_vfork_done(struct zv_thread *t, struct zv_ucontext *uc, long child);
void zv_event_exec_start(struct zv_thread *t, struct zv_ucontext *uc);
#endif
