/* The running program's write denial between hosted processes
 * (sys/txtbusy.c). */
#ifndef ZV_SYS_TXTBUSY_H
#define ZV_SYS_TXTBUSY_H
struct zv_thread;

/* A new image's program file, open as fd (readable), is marked running
 * for as long as this process runs it. */
void zv_txt_hold(int fd);
/* A restored process marks its program file again (cr/restore.c). */
void zv_txt_restored(void);
/* open, openat, openat2 or creat (nr, with its arguments a): the host's,
 * with ETXTBSY for a write or truncation of a running program. */
long zv_txt_open(struct zv_thread *t, long nr, const long *a);
/* truncate(a[0], a[1]) the same way. */
long zv_txt_truncate(struct zv_thread *t, const long *a);
/* Whether a lock F_GETLK reports (its type and start) is a running
 * program's mark, which the guest never sees. */
int zv_txt_is_mark(short type, long start);
/* The handlers: truncate, and fcntl's F_GETLK and F_OFD_GETLK without the marks. */
struct zv_call;
long zv_sys_truncate(struct zv_call *c);
long zv_sys_fcntl(struct zv_call *c);
#endif
