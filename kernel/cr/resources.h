/* The process's resources in a checkpoint, other than memory and threads
 * (cr/fds.c, cr/timers.c): saved by the checkpointing thread while every
 * other guest thread is frozen, re-created by `zvisor restore` after the
 * memory is back and before any guest thread runs. Each returns 0, or -1
 * with the image's why set (one line: what is refused and why). */
#ifndef ZV_CR_RESOURCES_H
#define ZV_CR_RESOURCES_H
#include "cr/image.h"

/* Every fd of the process (the guest's and the kernel's hidden ones), with
 * flags and offsets; pipes' buffered bytes are copied and sockets' queues
 * peeked, not taken. Every fd but o->dirfd is saved: the core holds no
 * other of its own meanwhile. What leads outside the saved processes is
 * told by the census (cr/census.h). */
struct zv_cr_census;
struct zv_cr_fdopts {
	const struct zv_cr_census *census; /* the tree's; NULL: this process alone */
	const int *inherit;                /* a process alone: its fds that --inherit-fd names */
	int ninherit;
	int tcp_close;                     /* --tcp-close */
	int session;                       /* the peer session of `zvisor checkpoint` (not saved), or -1 */
};
long zv_cr_save_fds(struct zv_cr_out *o, const struct zv_cr_fdopts *opts);
/* Re-creates them at their numbers; inherit[ninherit]: the restorer's fds
 * that --inherit-fd gives for what led outside; made[nmade]: a tree's
 * process's descriptions its restorer made (cr/treerestore.c), or NULL. in->dirfd is moved to a number the
 * image does not use (in->dirfd is updated); every other fd the image does
 * not have is closed. Best after zv_cr_restore_timers (the cwd). */
struct zv_cr_made;
long zv_cr_restore_fds(struct zv_cr_in *in, const int *inherit, int ninherit, const struct zv_cr_made *made,
		       unsigned nmade);
/* After zv_cr_restore_fds: the fd that holds again the memfd whose inode
 * was ino at the checkpoint (a shared mapping of it is mapped from there),
 * or -1 if no fd of the process had it open. */
long zv_cr_memfd_fd(struct zv_cr_in *in, uint64_t ino);
/* POSIX timers (same ids), itimers, rlimits, umask and cwd. */
long zv_cr_save_timers(struct zv_cr_out *o);
long zv_cr_restore_timers(struct zv_cr_in *in);
/* The POSIX timers aimed at a thread (SIGEV_THREAD_ID: glibc's SIGEV_THREAD
 * helper, Go's profiler), which zv_cr_restore_timers leaves out: called
 * once the threads are made again, before any of them runs. */
long zv_cr_restore_thread_timers(struct zv_cr_in *in);
/* The host tid, after the restore, of the thread whose host tid was old at
 * the checkpoint (cr/restore.c). */
int zv_cr_thread_tid(int old);
#endif
