/* An exec made in this process: what the host's execve would reset
 * (sys/exec_reset.c) and what the guest set that it resets
 * (sys/exec_note.c). */
#ifndef ZV_SYS_EXEC_RESET_H
#define ZV_SYS_EXEC_RESET_H
#include <stdint.h>

struct zv_thread;
struct zv_call;

/* /proc/self/fd opened for the close-on-exec pass (before the point of no
 * return: without it the exec goes to the host), ZV_EXEC_FD_BITMAP when
 * sys/fdflags.c knows the close-on-exec fds, or -errno. */
int zv_exec_fd_dir(void);
#define ZV_EXEC_FD_BITMAP 0x7fffffff /* zv_exec_fd_dir: no listing needed (sys/fdflags.c) */
/* The other threads exit (the exec'ing thread t leads the process); a
 * SIGSYS asks each (zv_exec_kill_sigsys, from the catch-all: 1 if it was
 * that request), which leaves on its way out of the kernel if it was in it
 * (zv_exec_thread_exit, from zv_signals_on_exit). */
void zv_exec_kill_others(struct zv_thread *t);
int zv_exec_kill_sigsys(struct zv_thread *t, const void *si, struct zv_ucontext *uc);
__attribute__((noreturn)) void zv_exec_thread_exit(struct zv_thread *t);
/* Everything at once, for the exec'ing thread t, the other threads gone;
 * closes fd_dir; keep's files (the new image's) stay open. */
struct zv_exec_files;
void zv_exec_reset(struct zv_thread *t, int fd_dir, const struct zv_exec_files *keep);

/* sys/exec_note.c: the rows' handler, and the notes other handlers take. */
long zv_sys_exec_note(struct zv_call *c);
void zv_exec_note_prctl(const long *a);
void zv_exec_note_creds(long nr, long flags);
void zv_exec_note_clone(uint64_t flags);
void zv_exec_note_fork_child(struct zv_thread *t, uint64_t flags);
void zv_exec_needs_host(unsigned why);
#endif
