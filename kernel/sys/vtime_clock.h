/* Virtual time's clocks (sys/vtime.c): the arithmetic, and each clock
 * family's mapping between the host's time and the guest's. */
#ifndef ZV_SYS_VTIME_CLOCK_H
#define ZV_SYS_VTIME_CLOCK_H
#include "lib/arith.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include <linux/time.h>

#define NSEC 1000000000LL
#define MAX_NS 0x7fffffffffffffffLL

struct kts { int64_t sec; long nsec; };  /* struct __kernel_timespec */
struct ktv { int64_t sec; long usec; };  /* struct timeval */
struct kits { struct kts interval, value; };
struct kitv { struct ktv interval, value; };

/* ---- arithmetic ------------------------------------------------------ */

static inline int64_t clamp(__int128 v)
{
	return v > MAX_NS ? MAX_NS : v < -MAX_NS ? -MAX_NS : (int64_t)v;
}

/* a * b / c for c > 0, rounded toward zero (away from it if up), clamped. */
static inline int64_t muldiv(int64_t a, int64_t b, int64_t c, int up)
{
	int neg = (a < 0) != (b < 0);
	uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a, ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
	uint64_t q = zv_umuldiv(ua, ub, (uint64_t)c, up);
	if (q > (uint64_t)MAX_NS)
		q = MAX_NS;
	return neg ? -(int64_t)q : (int64_t)q;
}

/* A virtual duration as real time: rounded up, so that a sleep never ends
 * early on the virtual clock. */
static inline int64_t to_real(int64_t d)
{
	return muldiv(d, zv_proc.vt.den, zv_proc.vt.num, 1);
}

static inline int64_t to_virt(int64_t d)
{
	return muldiv(d, zv_proc.vt.num, zv_proc.vt.den, 0);
}

static inline int scaled(void) { return zv_proc.vt.num != zv_proc.vt.den; }

static inline int64_t ts_ns(const struct kts *t)
{
	if (t->sec > MAX_NS / NSEC - 1)
		return MAX_NS;
	if (t->sec < -(MAX_NS / NSEC - 1))
		return -MAX_NS;
	return t->sec * NSEC + t->nsec;
}

static inline void ns_ts(int64_t ns, struct kts *t)
{
	t->sec = ns / NSEC;
	t->nsec = ns % NSEC;
	if (t->nsec < 0) {
		t->nsec += NSEC;
		t->sec--;
	}
}

static inline int ts_valid(const struct kts *t) { return t->sec >= 0 && t->nsec >= 0 && t->nsec < NSEC; }

/* ---- families -------------------------------------------------------- */

static const int base_clock[ZV_NCLK] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME };

static inline int family(long clk)
{
	switch (clk) {
	case CLOCK_REALTIME: case CLOCK_REALTIME_COARSE: case CLOCK_REALTIME_ALARM: case CLOCK_TAI:
		return ZV_CLK_RT;
	case CLOCK_MONOTONIC: case CLOCK_MONOTONIC_RAW: case CLOCK_MONOTONIC_COARSE:
		return ZV_CLK_MONO;
	case CLOCK_BOOTTIME: case CLOCK_BOOTTIME_ALARM:
		return ZV_CLK_BOOT;
	}
	return -1; /* CPU-time clocks, and invalid ones for the host to refuse */
}

static inline int64_t host_now(long clk)
{
	struct kts t = { 0, 0 };
	if (zv_host_vdso_call(0, clk, (long)&t) == -ENOSYS)
		zv_sys2(__NR_clock_gettime, clk, &t);
	return ts_ns(&t);
}

/* Whether the family reads as the host's (no conversion needed). */
static inline int plain(int f)
{
	const struct zv_vclock *c = &zv_proc.vt.clk[f];
	return !scaled() && !c->frozen && c->virt0 == c->real0;
}

static inline int64_t virt_of(int f, int64_t real)
{
	const struct zv_vclock *c = &zv_proc.vt.clk[f];
	return c->frozen ? c->virt0 : clamp((__int128)c->virt0 + to_virt(real - c->real0));
}

/* The host's clock value at which family f reads virt. A frozen clock never
 * gets there: its deadlines are treated as durations from now. */
static inline int64_t real_of(int f, int64_t virt)
{
	const struct zv_vclock *c = &zv_proc.vt.clk[f];
	if (c->frozen)
		return clamp((__int128)host_now(base_clock[f]) + to_real(virt > c->virt0 ? virt - c->virt0 : 0));
	return clamp((__int128)c->real0 + to_real(virt - c->virt0));
}

/* TAI runs a whole number of seconds ahead of REALTIME, virtually too. */
static inline int64_t tai_offset(void)
{
	int64_t d = host_now(CLOCK_TAI) - host_now(CLOCK_REALTIME);
	return (d + NSEC / 2) / NSEC * NSEC;
}

/* conv (virt_of or real_of) on clock clk's family; TAI goes through its
 * offset from the realtime family. */
static inline int64_t on_clock(long clk, int64_t t, int64_t (*conv)(int, int64_t))
{
	int64_t off = clk == CLOCK_TAI ? tai_offset() : 0;
	return conv(family(clk), t - off) + off;
}

static inline int64_t virt_clock(long clk, int64_t real) { return on_clock(clk, real, virt_of); }
static inline int64_t real_clock(long clk, int64_t virt) { return on_clock(clk, virt, real_of); }
#endif
