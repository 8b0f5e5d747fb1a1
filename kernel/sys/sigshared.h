/* What sys/signal.c (delivery) and sys/sigcalls.c (the guest's signal
 * calls) share. */
#ifndef ZV_SYS_SIGSHARED_H
#define ZV_SYS_SIGSHARED_H
#include "zvisor.h"

#define SIGKILL 9
#define SIGSTOP 19
#define SIGSYS 31
#define SIGSEGV 11
#define SIGBUS 7
#define SIGILL 4
#define SEGV_MAPERR 1
#define SEGV_PKUERR 4
#define SEGV_ACCERR 2
#define UNBLOCKABLE (ZV_SIGBIT(SIGKILL) | ZV_SIGBIT(SIGSTOP))
/* The signals the CPU raises: SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV. */
#define CPU_SIGNALS (ZV_SIGBIT(SIGILL) | ZV_SIGBIT(5) | ZV_SIGBIT(SIGBUS) | ZV_SIGBIT(8) | ZV_SIGBIT(SIGSEGV))

/* Signals whose default action is to be ignored, or to stop the process. */
static inline int default_ignores(int sig) { return sig == 17 || sig == 18 || sig == 23 || sig == 28; }
static inline int default_stops(int sig) { return sig == 19 || sig == 20 || sig == 21 || sig == 22; }

void defer(struct zv_thread *t, int sig, const zv_siginfo *si);
void set_guest_mask(struct zv_thread *t, struct zv_ucontext *uc, uint64_t m);
void set_host_action(struct zv_sighand *sh, int sig);
int on_guest_altstack(struct zv_thread *t, uint64_t sp);
int altstack_flags(struct zv_thread *t, uint64_t sp);
/* sys/sigdeath.c */
int zv_sig_dumps(int sig);
void zv_signal_default(struct zv_thread *t, const zv_siginfo *si, struct zv_ucontext *uc);
int zv_signal_death_due(struct zv_thread *t, struct zv_ucontext *uc);
#endif
