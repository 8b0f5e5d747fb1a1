#ifndef ZV_SYS_FDFLAGS_H
#define ZV_SYS_FDFLAGS_H
/* sys/fdflags.c: the guest's close-on-exec fds, followed call by call. */
struct zv_thread;
void zv_fdflags_note(struct zv_thread *t, long nr, const long *a, long r);
/* Every guest fd is kept across exec now (a new image): the bitmap is empty and exact. */
void zv_fdflags_exact(void);
/* The bitmap can no longer be trusted (until the next exec's listing). */
void zv_fdflags_lose(void);
/* Whether an exec may close the bitmap's fds without listing /proc/self/fd. */
int zv_fdflags_usable(void);
#endif
