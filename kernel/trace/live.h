/* The process's traced threads and their calls in progress (live.c). */
#ifndef ZV_TRACE_LIVE_H
#define ZV_TRACE_LIVE_H
struct zv_thread;
void zv_live_enter(struct zv_thread *t, long nr, const long *a); /* before a call */
void zv_live_leave(struct zv_thread *t);                         /* after it */
void zv_live_release(struct zv_thread *t);                       /* the thread ends or execs */
void zv_live_forget(struct zv_thread *self);                     /* a fork child: the parent's threads */
long zv_live_call(struct zv_thread *t);                          /* its call in progress, or -1 */
/* each other live thread of self's process: fn(pid, tid, call or -1, args) */
void zv_live_others(struct zv_thread *self, void (*fn)(int pid, int tid, long nr, const long *a));
#endif
