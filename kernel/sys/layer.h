/* Layers: features that wrap guest calls between the entry (sys/entry.c)
 * and the call's handler or the host. Each one sees the calls it asks for,
 * does its work, and passes the call on with zv_next; events (fork, exec,
 * exit, signals) reach them through hooks. Which layers see a call is
 * folded, per number, into the fast path's kind (zv_call_kind), so a call
 * no layer wants stays a direct host call.
 *
 * A feature attaches without the core naming it:
 *   ZV_LAYER(name, order) = { .name = "name", .sees = ..., .call = ... };
 * in its own file defines zv_<name>_layer and places it in the list, which
 * the linker sorts by order (three digits, kernel/zvisor.ld) and the core
 * walks (sys/layers.c). The orders in use, outermost first:
 *   050 ptrace (its stops see the call as the guest made it)
 *   060 fdflags (the close-on-exec fds, noted from the call that is made)
 *   100 trace (it times the rest)   200 inject     300 sandbox
 *   400 fdguard     450 fsview       500 procview   550 fakeid
 *   600 cr_pids     610 fakeid_kill (after cr_pids: the host's ids)
 *   650 cr (events only)            700 cr_waits
 *   750 cr_lazy     800 vtime        900 count (events only)
 *   950 peer (events only: knocks served on the way out)
 *   960 killexit (events only: --kill-on-exit at the first process's end)
 *   990 ptrace_call (the ptrace call itself, innermost)
 * A layer without sees (and call) is a feature's set of hooks: the fold
 * leaves it out of every call's route. A feature's exec-state field
 * attaches with ZV_EXEC_FIELD (sys/execstate.h), a platform with
 * ZV_PLATFORM (sys/platform.h). */
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
	/* A new task c of t's (thread, vfork or CLONE_VM child), before it runs. */
	void (*new_task)(struct zv_thread *t, struct zv_thread *c);
	void (*exec)(struct zv_thread *t, long nr, const long *a); /* before the host execve */
	void (*exec_failed)(struct zv_thread *t, long nr);
	/* An exec made in this process (kernel/inexec.c), past its point of no
	 * return, before the old image is unmapped: what belonged to that
	 * image goes, as it would with the host's execve. */
	void (*exec_here)(struct zv_thread *t);
	void (*exit)(struct zv_thread *t, int code, int sig);    /* a thread or process ends (sig: killed) */
	/* The process ends (exit_group, a fatal signal): reports go to fd,
	 * zvisor's own stderr; leader: the first guest process, which prints them. */
	void (*report)(int fd, int leader);
	void (*signal)(struct zv_thread *t, int sig, const void *siginfo); /* delivered to a guest handler */
	void (*tsc_off)(void);                                   /* the guest disables the TSC */
	/* The guest opened path (as the kernel translated it) as fd. */
	void (*opened)(struct zv_thread *t, const char *path, long fd);
	/* A kernel entry with deferred signals returns to the guest, every
	 * register in its frame (a checkpoint's threads park here). */
	void (*to_guest)(struct zv_thread *t, struct zv_ucontext *uc);
	/* Questions the core asks every layer that answers them. */
	/* The call returned EINTR only because of this feature (a
	 * checkpoint's freeze): it is made again, as after a stop. */
	int (*restarts)(struct zv_thread *t);
	/* The id the guest knows for host pid or tid x (a restored process's). */
	long (*guest_id)(long x);
	/* The same for a host process group or session id x. */
	long (*guest_group)(long x);
	/* Host signals the feature takes for itself (--checkpoint-on's): the
	 * kernel's whatever the guest asks, hidden from its masks. Folded. */
	uint64_t (*signals)(void);
	/* One of those, sent by a process, arrived; uc: the interrupted context. */
	void (*own_signal)(struct zv_thread *t, int sig, struct zv_ucontext *uc);
	/* A SIGSYS a process queued (SI_QUEUE): 1 if it was this feature's. */
	int (*sigsys)(struct zv_thread *t, const void *siginfo, struct zv_ucontext *uc);
	/* A new image's first thread: path, the ELF file it runs (a script's
	 * interpreter), is mapped; its stack and auxv are not built yet. */
	void (*image)(struct zv_thread *t, const char *path);
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
	/* The guest's seccomp filter said SECCOMP_RET_TRACE (data: its
	 * SECCOMP_RET_DATA) for call nr: a tracer's stop. Returns the call to
	 * make then (-1: none, its result in rax), or ZV_SECCOMP_UNTRACED. */
	long (*seccomp_trace)(struct zv_thread *t, struct zv_ucontext *uc, long nr, uint32_t data);
	/* This process's own /proc/self/<name> as the guest sees it, for
	 * its tracer that asks: its length in out, or
	 * -errno (-ENOENT: not this layer's file). */
	long (*own_text)(const char *name, char *out, size_t cap);
	/* The program of another hosted process (host pid hpid) as it knows
	 * it, for its /proc/PID/exe: the path's length in out, or -errno. */
	long (*exe_of)(int hpid, char *out, size_t cap);
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

#define ZV_LAYER(name, order) \
	extern const struct zv_layer zv_##name##_layer; \
	__attribute__((used, section(".zv_layers." #order "." #name))) \
	static const struct zv_layer *const zv_layer_entry_##name = &zv_##name##_layer; \
	const struct zv_layer zv_##name##_layer
/* The list, in order (kernel/zvisor.ld). */
extern const struct zv_layer *const zv_layers_start[], *const zv_layers_end[];

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
/* Whether the routes route nr through layer l, once a fold under way has
 * ended. */
int zv_layer_routed(const struct zv_layer *l, long nr);

void zv_event_fork_child(struct zv_thread *t);
void zv_event_exec(struct zv_thread *t, long nr, const long *a);
void zv_event_exec_failed(struct zv_thread *t, long nr);
void zv_event_exec_here(struct zv_thread *t);
void zv_event_exit(struct zv_thread *t, int code, int sig);
void zv_event_signal(struct zv_thread *t, int sig, const void *siginfo);
void zv_event_new_task(struct zv_thread *t, struct zv_thread *c);
void zv_event_report(int fd, int leader);
void zv_event_tsc_off(void);
void zv_event_opened(struct zv_thread *t, const char *path, long fd);
void zv_event_to_guest(struct zv_thread *t, struct zv_ucontext *uc);
void zv_event_own_signal(struct zv_thread *t, int sig, struct zv_ucontext *uc);
void zv_event_image(struct zv_thread *t, const char *path);
int zv_event_sigsys(struct zv_thread *t, const void *siginfo, struct zv_ucontext *uc);
int zv_call_restarts(struct zv_thread *t);
long zv_guest_id(long x);
long zv_guest_group(long x);
/* Whether a layer that answers guest_id is on (a restored process, or one
 * it made): the host's ids in what the program reads are then shown so. */
int zv_guest_ids_on(void);
int zv_event_deliver(struct zv_thread *t, int sig, zv_siginfo *si, struct zv_ucontext *uc);
#define ZV_SECCOMP_UNTRACED (-2L)
long zv_event_seccomp_trace(struct zv_thread *t, struct zv_ucontext *uc, long nr, uint32_t data);
long zv_event_own_text(const char *name, char *out, size_t cap);
long zv_event_exe_of(int hpid, char *out, size_t cap);
void zv_event_kwork(struct zv_thread *t, struct zv_ucontext *uc);
void zv_event_arrive(struct zv_thread *t, int sig, zv_siginfo *si);
void zv_event_clone_before(struct zv_thread *t, struct zv_thread *child, uint64_t flags);
void zv_event_clone_after(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags);
void zv_event_task_start(struct zv_thread *t, struct zv_ucontext *uc);
void zv_event_vfork_done(struct zv_thread *t, struct zv_ucontext *uc, long child);
void zv_event_exec_start(struct zv_thread *t, struct zv_ucontext *uc);
#endif
