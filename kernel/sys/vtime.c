/* Virtual time (--time=SPEC).
 *
 * Three clock families: calendar (REALTIME, its COARSE and ALARM variants,
 * TAI, gettimeofday, time), MONOTONIC (with RAW and COARSE) and BOOTTIME
 * (with ALARM). Each family has a reference pair taken once when the first
 * guest starts, inherited by every thread, fork child and exec'd image:
 *
 *     virtual(real) = virt0 + (real - real0) * rate       (or virt0 if frozen)
 *
 * offset/start/freeze set virt0 of the families they name (the calendar by
 * default); rate (num/den, no floating point here) applies to all of them.
 * CPU-time clocks are never changed.
 *
 * Every reading goes through here: the clock_gettime, gettimeofday and time
 * system calls, and the vDSO's entries, which then are those system calls
 * (loader/vdso.c). Waiting follows the virtual clocks: an absolute deadline
 * on a changed family is converted to the host's clock, and with a rate
 * other than 1 relative timeouts, intervals and the remaining times reported
 * back are scaled (nanosleep, clock_nanosleep, select, pselect6, poll,
 * ppoll, epoll_wait, epoll_pwait(2), futex, rt_sigtimedwait, alarm,
 * setitimer/getitimer, timerfd_* and timer_*). File timestamps stay real. */
#include "lib/arith.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/vtime.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/time.h>
#include <linux/fcntl.h>
#include <linux/futex.h>
#include "sys/vtime_clock.h"

/* Parses SPEC (sys/vtime_spec.c) and takes the reference times. Returns 0,
 * or -1 with one line in why. */
int zv_time_setup(const char *spec, char *why, size_t n)
{
	struct zv_time_spec sp;
	if (zv_time_parse(spec, &sp, why, n) < 0)
		return -1;
	int mode = sp.mode;
	int64_t value = sp.value;
	unsigned mask = sp.mask;
	enum { NONE = ZV_TIME_NONE, OFFSET = ZV_TIME_OFFSET, START = ZV_TIME_START, FREEZE = ZV_TIME_FREEZE };
	int64_t num = sp.num, den = sp.den;
	struct zv_vtime *vt = &zv_proc.vt;
	vt->num = num;
	vt->den = den;
	for (int f = 0; f < ZV_NCLK; f++) {
		struct zv_vclock *c = &vt->clk[f];
		c->real0 = c->virt0 = host_now(base_clock[f]);
		c->frozen = 0;
		if (!(mask & (1u << f)))
			continue;
		if (mode == OFFSET)
			c->virt0 += value;
		else if (mode == START || mode == FREEZE)
			c->virt0 = value;
		c->frozen = mode == FREEZE;
		if (f != ZV_CLK_RT && c->virt0 < 0) {
			/* as time namespaces refuse such an offset */
			zv_snprintf(why, n, "--time: the %s clock would be negative", f == ZV_CLK_MONO ? "monotonic" : "boottime");
			return -1;
		}
	}
	vt->on = 1;
	return 0;
}

/* ---- the calls ------------------------------------------------------- */

/* The three reads run the host's vDSO when the kernel may (loader/vdso.c):
 * the same results and errors as the host's system calls, for a function
 * call. A bad pointer faults there and the guard makes it EFAULT. */
static long host_read(struct zv_call *c, int which)
{
	long r = zv_host_vdso_call(which, c->a[0], c->a[1]);
	return r == -ENOSYS ? zv_next(c) : r;
}

long zv_vt_clock_gettime(struct zv_call *c)
{
	long *a = c->a;
	long r = host_read(c, 0);
	struct kts *ts = (struct kts *)a[1];
	if (r == 0 && zv_proc.vt.on && family(a[0]) >= 0 && !plain(family(a[0])))
		ns_ts(virt_clock(a[0], ts_ns(ts)), ts); /* the host wrote it: writable */
	return r;
}

long zv_vt_gettimeofday(struct zv_call *c)
{
	long *a = c->a;
	long r = host_read(c, 1);
	struct ktv *tv = (struct ktv *)a[0];
	if (r == 0 && tv && zv_proc.vt.on && !plain(ZV_CLK_RT)) {
		struct kts ts;
		ns_ts(virt_of(ZV_CLK_RT, tv->sec * NSEC + tv->usec * 1000), &ts);
		tv->sec = ts.sec;
		tv->usec = ts.nsec / 1000;
	}
	return r;
}

long zv_vt_time(struct zv_call *c)
{
	long *a = c->a;
	long r = host_read(c, 2);
	if ((r < 0 && r > -4096) || !zv_proc.vt.on)
		return r;
	struct kts ts;
	ns_ts(virt_of(ZV_CLK_RT, host_now(CLOCK_REALTIME)), &ts);
	if (a[0])
		*(int64_t *)a[0] = ts.sec;
	return (long)ts.sec;
}

/* A relative timeout *in (guest memory) as the host's, in *out. Returns 0 if
 * it must be passed unchanged (invalid: the host says why). */
static int rel_timeout(const struct kts *in, struct kts *out)
{
	if (!ts_valid(in))
		return 0;
	ns_ts(to_real(ts_ns(in)), out);
	return 1;
}

/* Writes a remaining time the host reported (real) back as virtual. */
static void rel_back(const struct kts *real, struct kts *guest)
{
	ns_ts(to_virt(ts_ns(real)), guest);
}

long zv_vt_nanosleep(struct zv_call *c)
{
	long *a = c->a;
	struct kts req, rem = { 0, 0 };
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	if (!scaled() || !rel_timeout((struct kts *)a[0], &req))
		return zv_next(c);
	b[0] = (long)&req;
	b[1] = a[1] ? (long)&rem : 0;
	long r = zv_next_with(c, b);
	if (r == -EINTR && a[1])
		rel_back(&rem, (struct kts *)a[1]);
	return r;
}

long zv_vt_clock_nanosleep(struct zv_call *c)
{
	long *a = c->a;
	int f = family(a[0]);
	struct kts req, rem = { 0, 0 };
	const struct kts *in = (const struct kts *)a[2];
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	if (f < 0 || !in || !ts_valid(in))
		return zv_next(c);
	if (a[1] & TIMER_ABSTIME) {
		if (plain(f))
			return zv_next(c);
		int64_t when = real_clock(a[0], ts_ns(in));
		ns_ts(when < 0 ? 0 : when, &req);
	} else {
		if (!scaled())
			return zv_next(c);
		rel_timeout(in, &req);
		b[3] = a[3] ? (long)&rem : 0;
	}
	b[2] = (long)&req;
	long r = zv_next_with(c, b);
	if (r == -EINTR && !(a[1] & TIMER_ABSTIME) && a[3])
		rel_back(&rem, (struct kts *)a[3]);
	return r;
}

/* select's timeval, pselect6's and ppoll's timespec: relative, and the host
 * writes the time left back. */
static long select_v(struct zv_call *c, int usec)
{
	long *a = c->a;
	int idx = zv_arg_index(zv_row(c->nr)->timeout);
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	struct kts k, in;
	if (!scaled() || !a[idx])
		return zv_next(c);
	if (usec) {
		const struct ktv *tv = (const struct ktv *)a[idx];
		in.sec = tv->sec;
		in.nsec = tv->usec >= 0 && tv->usec < 1000000 ? tv->usec * 1000 : -1;
	} else {
		in = *(const struct kts *)a[idx];
	}
	if (!rel_timeout(&in, &k))
		return zv_next(c);
	struct ktv ktv = { k.sec, (k.nsec + 999) / 1000 };
	if (ktv.usec == 1000000) {
		ktv.sec++;
		ktv.usec = 0;
	}
	b[idx] = usec ? (long)&ktv : (long)&k;
	long r = zv_next_with(c, b);
	if (r == -EFAULT)
		return r;
	struct kts left = usec ? (struct kts){ ktv.sec, ktv.usec * 1000 } : k, v;
	rel_back(&left, &v);
	if (usec) {
		struct ktv *tv = (struct ktv *)a[idx];
		tv->sec = v.sec;
		tv->usec = v.nsec / 1000;
	} else {
		*(struct kts *)a[idx] = v;
	}
	return r;
}

/* poll's and epoll_wait's milliseconds: negative waits forever. */
long zv_vt_ms(struct zv_call *c)
{
	long *a = c->a;
	int idx = zv_arg_index(zv_row(c->nr)->timeout);
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	int ms = (int)a[idx];
	if (scaled() && ms > 0) {
		int64_t real = to_real((int64_t)ms * 1000000);
		int64_t rms = (real + 999999) / 1000000;
		b[idx] = rms > 0x7fffffff ? 0x7fffffff : rms;
	}
	return zv_next_with(c, b);
}

/* epoll_pwait2's and rt_sigtimedwait's timespec: relative, not written back. */
long zv_vt_timespec(struct zv_call *c)
{
	long *a = c->a;
	int idx = zv_arg_index(zv_row(c->nr)->timeout);
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	struct kts k;
	if (!scaled() || !a[idx] || !rel_timeout((const struct kts *)a[idx], &k))
		return zv_next(c);
	b[idx] = (long)&k;
	return zv_next_with(c, b);
}

long zv_vt_futex(struct zv_call *c)
{
	long *a = c->a;
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	int op = (int)a[1], cmd = op & FUTEX_CMD_MASK;
	const struct kts *in = (const struct kts *)a[3];
	struct kts k;
	if (!in)
		return zv_next(c);
	if (cmd == FUTEX_WAIT) {
		if (!scaled() || !rel_timeout(in, &k))
			return zv_next(c);
	} else if (cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 ||
		   cmd == FUTEX_WAIT_REQUEUE_PI) {
		/* Absolute; LOCK_PI always on REALTIME. */
		int f = cmd == FUTEX_LOCK_PI || (op & FUTEX_CLOCK_REALTIME) ? ZV_CLK_RT : ZV_CLK_MONO;
		if (plain(f) || !ts_valid(in))
			return zv_next(c);
		int64_t when = real_of(f, ts_ns(in));
		ns_ts(when < 0 ? 0 : when, &k);
	} else {
		return zv_next(c); /* a[3] is not a timeout */
	}
	b[3] = (long)&k;
	return zv_next_with(c, b);
}

/* ITIMER_REAL: its value and interval run on the (scaled) real clock. */
static void itv_scale(const struct kitv *in, struct kitv *out, int64_t (*f)(int64_t))
{
	const struct ktv *src[2] = { &in->interval, &in->value };
	struct ktv *dst[2] = { &out->interval, &out->value };
	for (int i = 0; i < 2; i++) {
		int64_t ns = f(src[i]->sec * NSEC + src[i]->usec * 1000);
		dst[i]->sec = ns / NSEC;
		dst[i]->usec = (ns % NSEC + 999) / 1000;
		if (dst[i]->usec == 1000000) {
			dst[i]->sec++;
			dst[i]->usec = 0;
		}
	}
}

long zv_vt_setitimer(struct zv_call *c)
{
	long *a = c->a;
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	struct kitv knew, kold;
	if (!scaled() || a[0] != 0 /* ITIMER_REAL */)
		return zv_next(c);
	if (a[1]) {
		const struct kitv *in = (const struct kitv *)a[1];
		if (in->value.usec < 0 || in->value.usec >= 1000000 || in->interval.usec < 0 ||
		    in->interval.usec >= 1000000)
			return zv_next(c);
		itv_scale(in, &knew, to_real);
		b[1] = (long)&knew;
	}
	b[2] = a[2] ? (long)&kold : 0;
	long r = zv_next_with(c, b);
	if (r == 0 && a[2])
		itv_scale(&kold, (struct kitv *)a[2], to_virt);
	return r;
}

long zv_vt_getitimer(struct zv_call *c)
{
	long *a = c->a;
	long r = zv_next(c);
	if (r == 0 && scaled() && a[0] == 0) {
		struct kitv k = *(struct kitv *)a[1];
		itv_scale(&k, (struct kitv *)a[1], to_virt);
	}
	return r;
}

/* alarm(s) is setitimer(ITIMER_REAL) in whole seconds; it returns the
 * seconds left, rounded as the host rounds them. */
long zv_vt_alarm(struct zv_call *c)
{
	long *a = c->a;
	struct zv_thread *t = c->t;
	if (!scaled())
		return zv_next(c);
	struct kitv knew = { { 0, 0 }, { (unsigned)a[0], 0 } }, real, kold;
	itv_scale(&knew, &real, to_real);
	zv_host_call(t, __NR_setitimer, 0, (long)&real, (long)&kold, 0, 0, 0);
	struct kitv old;
	itv_scale(&kold, &old, to_virt);
	long s = old.value.sec;
	if ((!s && old.value.usec) || old.value.usec >= 500000)
		s++;
	return s;
}

/* timerfd and POSIX timers: the clock decides how an absolute value is
 * converted; it is remembered at creation for timers, and read from
 * /proc/self/fdinfo for timerfds (only needed for absolute values). */
#define MAX_TIMERS 64
static struct { int id; int clk; } timers[MAX_TIMERS];
static volatile int timers_lock;

static int timerfd_clock(long fd)
{
	char path[48], buf[512];
	zv_snprintf(path, sizeof path, "/proc/self/fdinfo/%d", (int)fd);
	long f = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (f < 0)
		return CLOCK_REALTIME;
	long n = zv_read((int)f, buf, sizeof buf - 1);
	zv_close((int)f);
	buf[n > 0 ? n : 0] = 0;
	for (const char *p = buf; p && *p; p = zv_strchr(p, '\n'), p = p ? p + 1 : p)
		if (zv_startswith(p, "clockid:")) {
			p += 8;
			while (*p == ' ' || *p == '\t')
				p++;
			return (int)zv_parse_dec(p, &p);
		}
	return CLOCK_REALTIME;
}

static int timer_clock(long id)
{
	int clk = CLOCK_REALTIME;
	zv_lock(&timers_lock);
	for (int i = 0; i < MAX_TIMERS; i++)
		if (timers[i].id == (int)id + 1)
			clk = timers[i].clk;
	zv_unlock(&timers_lock);
	return clk;
}

long zv_vt_timer_create(struct zv_call *c)
{
	long *a = c->a;
	long r = zv_next(c);
	if (r == 0) {
		int id = *(int *)a[2];
		zv_lock(&timers_lock);
		int slot = id % MAX_TIMERS;
		timers[slot].id = id + 1;
		timers[slot].clk = (int)a[0];
		zv_unlock(&timers_lock);
	}
	return r;
}

static void its_scale(const struct kits *in, struct kits *out, int64_t (*f)(int64_t))
{
	ns_ts(f(ts_ns(&in->interval)), &out->interval);
	ns_ts(f(ts_ns(&in->value)), &out->value);
}

/* timerfd_settime(fd, flags, new, old), timer_settime(id, flags, new, old) */
long zv_vt_settime(struct zv_call *c)
{
	long *a = c->a;
	long nr = c->nr;
	long b[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	const struct kits *in = (const struct kits *)a[2];
	struct kits knew, kold;
	if (!in || !ts_valid(&in->value) || !ts_valid(&in->interval))
		return zv_next(c);
	int abs = (a[1] & 1) != 0; /* TFD_TIMER_ABSTIME == TIMER_ABSTIME == 1 */
	int clk = abs ? (zv_row(nr)->fds ? timerfd_clock(a[0]) : timer_clock(a[0])) : 0; /* a timerfd, or a timer id */
	if (abs && (in->value.sec || in->value.nsec) && family(clk) >= 0 && !plain(family(clk))) {
		int64_t when = real_clock(clk, ts_ns(&in->value));
		ns_ts(when <= 0 ? 1 : when, &knew.value);
	} else if (scaled() && !abs) {
		ns_ts(to_real(ts_ns(&in->value)), &knew.value);
	} else {
		knew.value = in->value;
	}
	knew.interval = in->interval;
	if (scaled())
		ns_ts(to_real(ts_ns(&in->interval)), &knew.interval);
	b[2] = (long)&knew;
	b[3] = a[3] ? (long)&kold : 0;
	long r = zv_next_with(c, b);
	if (r == 0 && a[3]) {
		if (scaled())
			its_scale(&kold, (struct kits *)a[3], to_virt);
		else
			*(struct kits *)a[3] = kold;
	}
	return r;
}

/* timerfd_gettime(fd, cur), timer_gettime(id, cur): times left, relative */
long zv_vt_gettime(struct zv_call *c)
{
	long *a = c->a;
	long r = zv_next(c);
	if (r == 0 && scaled()) {
		struct kits k = *(struct kits *)a[1];
		its_scale(&k, (struct kits *)a[1], to_virt);
	}
	return r;
}

long zv_vt_timeval_left(struct zv_call *c) { return select_v(c, 1); }
long zv_vt_timespec_left(struct zv_call *c) { return select_v(c, 0); }

/* The layer: the calls whose row has a time hook, while --time is on; the
 * clock reads also while the kernel may run the host's vDSO for them. */
static int vtime_on(void) { return zv_proc.vt.on || zv_proc.host_vdso.ok; }
static int vtime_sees(long nr)
{
	const struct zv_sysent *row = zv_row(nr);
	return row->time && (zv_proc.vt.on || (row->time_read && zv_proc.host_vdso.ok));
}

static long vtime_call(struct zv_call *c)
{
	if (!zv_proc.vt.on && !zv_proc.host_vdso.ok)
		return zv_next(c); /* the guest touched the host's vDSO since the fold */
	return zv_row(c->nr)->time(c);
}

ZV_LAYER(vtime, 800) = { .name = "vtime", .sees = vtime_sees, .active = vtime_on, .call = vtime_call };

/* What the guest reads on MONOTONIC and BOOTTIME now (a checkpoint saves
 * them: cr/dump.c). */
void zv_time_now(int64_t *mono, int64_t *boot)
{
	int64_t m = host_now(base_clock[ZV_CLK_MONO]), b = host_now(base_clock[ZV_CLK_BOOT]);
	*mono = zv_proc.vt.on ? virt_of(ZV_CLK_MONO, m) : m;
	*boot = zv_proc.vt.on ? virt_of(ZV_CLK_BOOT, b) : b;
}

/* A restored process on a host whose clocks are not the ones it saw
 * (another boot, cr/restore.c): MONOTONIC and BOOTTIME go on from mono and
 * boot, their values at the checkpoint, so they never go back; the
 * calendar stays the host's (or the guest's --time). */
void zv_time_continue(int64_t mono, int64_t boot)
{
	struct zv_vtime *vt = &zv_proc.vt;
	if (!vt->on) {
		vt->num = vt->den = 1;
		for (int f = 0; f < ZV_NCLK; f++) {
			vt->clk[f].real0 = vt->clk[f].virt0 = host_now(base_clock[f]);
			vt->clk[f].frozen = 0;
		}
		vt->on = 1;
	}
	vt->clk[ZV_CLK_MONO].real0 = host_now(base_clock[ZV_CLK_MONO]);
	vt->clk[ZV_CLK_MONO].virt0 = mono;
	vt->clk[ZV_CLK_BOOT].real0 = host_now(base_clock[ZV_CLK_BOOT]);
	vt->clk[ZV_CLK_BOOT].virt0 = boot;
}
