/* Virtual time's hooks (sys/vtime.c), named by the rows of sys/sysent.c:
 * each converts one call's clocks and passes it on (zv_next). */
#ifndef ZV_SYS_VTIME_H
#define ZV_SYS_VTIME_H
#include <stdint.h>
#include <stddef.h>

/* Virtual time (sys/vtime.c): per clock family, virtual = virt0 + (real -
 * real0) * num / den, or virt0 while frozen. */
enum { ZV_CLK_RT, ZV_CLK_MONO, ZV_CLK_BOOT, ZV_NCLK };
struct zv_vclock {
	int64_t real0, virt0; /* ns */
	int frozen;
};
struct zv_vtime {
	int on;
	int64_t num, den; /* the rate */
	struct zv_vclock clk[ZV_NCLK];
};

/* --time=SPEC: 0, or -1 with the reason in why. */
int zv_time_setup(const char *spec, char *why, size_t n);
void zv_time_now(int64_t *mono, int64_t *boot);
void zv_time_continue(int64_t mono, int64_t boot);

struct zv_call;
long zv_vt_clock_gettime(struct zv_call *c);
long zv_vt_gettimeofday(struct zv_call *c);
long zv_vt_time(struct zv_call *c);
long zv_vt_nanosleep(struct zv_call *c);
long zv_vt_clock_nanosleep(struct zv_call *c);
long zv_vt_timeval_left(struct zv_call *c);  /* select: a timeval the host writes back */
long zv_vt_timespec_left(struct zv_call *c); /* pselect6, ppoll: a timespec written back */
long zv_vt_ms(struct zv_call *c);            /* poll, epoll_wait: milliseconds */
long zv_vt_timespec(struct zv_call *c);      /* epoll_pwait2, rt_sigtimedwait: not written back */
long zv_vt_futex(struct zv_call *c);
long zv_vt_alarm(struct zv_call *c);
long zv_vt_setitimer(struct zv_call *c);
long zv_vt_getitimer(struct zv_call *c);
long zv_vt_timer_create(struct zv_call *c);
long zv_vt_settime(struct zv_call *c);       /* timerfd_settime, timer_settime */
long zv_vt_gettime(struct zv_call *c);       /* timerfd_gettime, timer_gettime */

/* sys/vtime_spec.c: --time=SPEC parsed, before any clock is read. */
enum { ZV_TIME_NONE, ZV_TIME_OFFSET, ZV_TIME_START, ZV_TIME_FREEZE };
struct zv_time_spec {
	int mode;       /* ZV_TIME_*: what value means */
	int64_t value;  /* ns: an offset, or a time since the epoch */
	int64_t num, den; /* the rate */
	unsigned mask;  /* the families changed (1 << ZV_CLK_*) */
};
int zv_time_parse(const char *spec, struct zv_time_spec *out, char *why, size_t n);

/* sys/hostvdso.c: the host's vDSO for the kernel's own clock reads. */
long zv_host_vdso_call(int which, long a, long b); /* 0 clock_gettime, 1 gettimeofday, 2 time */
void zv_host_vdso_touched(uint64_t addr, uint64_t len);
#endif
