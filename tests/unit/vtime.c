/* Unit tests of virtual time (kernel/sys/vtime.c): the rate and offset
 * arithmetic (rounding, negative values, clamping), --time= parsing
 * (durations, dates with zones, @seconds, rate, clocks, the errors) through
 * zv_time_setup, the clock mapping both ways, and the state kept across
 * execve (zv_time_encode / zv_time_decode). The host's clocks are stubbed
 * to fixed values, so every expected number is exact. */
#include "sys/vtime.c"
#include "sys/execstate.h"
#include "unit.h"
#include "stubs.h"

#define REAL0 1700000000123456789LL /* the host's clocks at setup */
#define MONO0 1000000000000LL
#define BOOT0 2000000000000LL
#define S(x) ((int64_t)(x) * NSEC)

struct zv_proc zv_proc;
const struct zv_sysent zv_sysent[512];
const struct zv_sysent zv_sysent_none;
long zv_next(struct zv_call *c) { UNIT_UNREACHED("zv_next"); }
long zv_host_call(struct zv_thread *t, long nr, long a, long b, long c, long d, long e, long f) { UNIT_UNREACHED("zv_host_call"); }

long zv_host_vdso_call(int which, long clk, long tsp)
{
	struct kts *t = (struct kts *)tsp;
	int64_t ns = clk == CLOCK_MONOTONIC ? MONO0 : clk == CLOCK_BOOTTIME ? BOOT0
		   : clk == CLOCK_TAI ? REAL0 + S(37) : REAL0;
	ns_ts(ns, t);
	return 0;
}

static int setup(const char *spec)
{
	char why[200];
	zv_proc.vt = (struct zv_vtime){ 0 };
	return zv_time_setup(spec, why, sizeof why);
}

/* zv_time_setup(spec) succeeds and sets the calendar's virt0. */
static void start_at(const char *spec, int64_t want)
{
	CHECK(setup(spec) == 0, "--time=%s refused", spec);
	CHECK(zv_proc.vt.clk[ZV_CLK_RT].virt0 == want, "--time=%s: virt0 %ld, want %ld", spec,
	      (long)zv_proc.vt.clk[ZV_CLK_RT].virt0, (long)want);
}

static void refused(const char *spec)
{
	CHECK(setup(spec) < 0, "--time=%s accepted", spec);
}

static void test_arith(void)
{
	CHECK_EQ(muldiv(3, 1, 2, 0), 1);
	CHECK_EQ(muldiv(3, 1, 2, 1), 2);
	CHECK_EQ(muldiv(4, 1, 2, 1), 2);            /* exact: no rounding up */
	CHECK_EQ(muldiv(-3, 1, 2, 0), -1);          /* toward zero */
	CHECK_EQ(muldiv(-3, 1, 2, 1), -2);          /* away from zero */
	CHECK_EQ(muldiv(3, -1, 2, 0), -1);
	CHECK_EQ(muldiv(MAX_NS, 3, 2, 0), MAX_NS);  /* clamped */
	CHECK_EQ(muldiv(-MAX_NS, 3, 2, 0), -MAX_NS);
	CHECK_EQ(muldiv(MAX_NS, MAX_NS, MAX_NS, 0), MAX_NS); /* a 126-bit product */
	CHECK_EQ(clamp((__int128)MAX_NS * 4), MAX_NS);
	CHECK_EQ(clamp(-(__int128)MAX_NS * 4), -MAX_NS);

	struct kts t;
	ns_ts(-1, &t);
	CHECK(t.sec == -1 && t.nsec == NSEC - 1, "ns_ts(-1): %ld.%ld", (long)t.sec, t.nsec);
	ns_ts(S(5) + 7, &t);
	CHECK(t.sec == 5 && t.nsec == 7, "ns_ts: %ld.%ld", (long)t.sec, t.nsec);
	CHECK_EQ(ts_ns(&t), S(5) + 7);
	t.sec = 0x7fffffffffffffffLL;
	CHECK_EQ(ts_ns(&t), MAX_NS);
	t.sec = -0x7fffffffffffffffLL;
	CHECK_EQ(ts_ns(&t), -MAX_NS);
}

static void test_rates(void)
{
	CHECK(setup("rate=0.5") == 0, "rate=0.5");
	CHECK(zv_proc.vt.num * 2 == zv_proc.vt.den, "0.5 is %ld/%ld", (long)zv_proc.vt.num, (long)zv_proc.vt.den);
	CHECK_EQ(to_virt(S(1)), S(1) / 2);
	CHECK_EQ(to_real(S(1)), S(2));
	CHECK_EQ(to_virt(3), 1);                    /* virtual durations round down */
	CHECK_EQ(to_real(3), 6);
	CHECK_EQ(to_virt(-S(4)), -S(2));
	/* virtual(real) = virt0 + (real - real0) * rate, and back */
	CHECK_EQ(virt_of(ZV_CLK_RT, REAL0 + S(10)), REAL0 + S(5));
	CHECK_EQ(virt_of(ZV_CLK_RT, REAL0 - S(10)), REAL0 - S(5));
	CHECK_EQ(real_of(ZV_CLK_RT, REAL0 + S(5)), REAL0 + S(10));
	CHECK_EQ(virt_of(ZV_CLK_MONO, MONO0 + 2), MONO0 + 1);

	CHECK(setup("rate=2") == 0, "rate=2");
	CHECK_EQ(to_virt(S(1)), S(2));
	CHECK_EQ(to_real(3), 2);                    /* real durations round up: a sleep never ends early */
	CHECK_EQ(virt_of(ZV_CLK_BOOT, BOOT0 + S(3)), BOOT0 + S(6));

	CHECK(setup("rate=1.000001") == 0, "rate=1.000001");
	CHECK_EQ(to_virt(S(1000)), S(1000) + 1000000);
	CHECK(setup("rate=999999999") == 0, "a large rate");
	CHECK_EQ(to_virt(S(1) * 1000000), MAX_NS);  /* clamped, not wrapped */
	CHECK_EQ(virt_of(ZV_CLK_RT, REAL0 + S(1) * 1000000), MAX_NS);
	CHECK(setup("rate=0.000001") == 0, "a small rate");
	CHECK_EQ(to_real(MAX_NS / 2), MAX_NS);

	CHECK(setup("offset=-1h,rate=2") == 0, "offset with rate");
	CHECK_EQ(virt_of(ZV_CLK_RT, REAL0 + S(1)), REAL0 - S(3600) + S(2));
	CHECK_EQ(real_of(ZV_CLK_RT, REAL0 - S(3600) + S(2)), REAL0 + S(1));
	CHECK_EQ(virt_of(ZV_CLK_MONO, MONO0 + S(1)), MONO0 + S(2)); /* rate for all, offset for the calendar */

	refused("rate=0");
	refused("rate=0.0");
	refused("rate=-1");
	refused("rate=");
	refused("rate=1e3");
	refused("rate=.");
	refused("rate=2x");
}

static void test_offsets(void)
{
	start_at("offset=+1d", REAL0 + S(86400));
	start_at("offset=-90s", REAL0 - S(90));
	start_at("offset=1.5h", REAL0 + S(5400));
	start_at("offset=+3d4h", REAL0 + S(3 * 86400 + 4 * 3600));
	start_at("offset=1w", REAL0 + S(7 * 86400));
	start_at("offset=2m30s", REAL0 + S(150));
	start_at("offset=250ms", REAL0 + 250000000);
	start_at("offset=-7us", REAL0 - 7000);
	start_at("offset=9ns", REAL0 + 9);
	start_at("offset=90", REAL0 + S(90));       /* a bare number is seconds */
	start_at("offset=-0.5", REAL0 - S(1) / 2);
	start_at("offset=.25s", REAL0 + S(1) / 4);
	start_at("offset=1.0000000009s", REAL0 + S(1)); /* beyond ns: dropped */
	start_at("offset=0", REAL0);
	CHECK_EQ(zv_proc.vt.clk[ZV_CLK_MONO].virt0, MONO0); /* the calendar only, by default */
	CHECK(!zv_proc.vt.clk[ZV_CLK_RT].frozen, "offset freezes");
	CHECK(zv_proc.vt.on, "vt.on");
	refused("offset=3d4");                      /* a unit after all but the last */
	refused("offset=");
	refused("offset=1x");
	refused("offset=--1s");
	refused("offset=+");
	refused("offset=h");
	refused("offset=106751d");                  /* past the clamp range */
	refused("offset=1000000000000s");

	CHECK(setup("offset=+1h,clocks=all") == 0, "clocks=all");
	CHECK_EQ(zv_proc.vt.clk[ZV_CLK_MONO].virt0, MONO0 + S(3600));
	CHECK_EQ(zv_proc.vt.clk[ZV_CLK_BOOT].virt0, BOOT0 + S(3600));
	CHECK(setup("offset=+1h,clocks=monotonic+boottime") == 0, "clocks=monotonic+boottime");
	CHECK_EQ(zv_proc.vt.clk[ZV_CLK_RT].virt0, REAL0);
	CHECK_EQ(zv_proc.vt.clk[ZV_CLK_MONO].virt0, MONO0 + S(3600));
	refused("offset=-2000s,clocks=monotonic"); /* a negative monotonic clock */
	refused("clocks=wallclock");
	refused("clocks=");
}

static void test_dates(void)
{
	start_at("start=2030-01-01T00:00:00Z", S(1893456000));
	start_at("start=2030-01-01", S(1893456000));
	start_at("start=2030-01-01 00:00", S(1893456000));
	start_at("start=2030-01-01T01:00:00+01:00", S(1893456000));
	start_at("start=2029-12-31T18:30:00-0530", S(1893456000));
	start_at("start=2030-01-01T00:00:00+05", S(1893456000) - S(5 * 3600));
	start_at("start=2030-01-01T00:00:00.25Z", S(1893456000) + S(1) / 4);
	start_at("start=2024-02-29", S(1709164800));   /* a leap day */
	start_at("start=2000-02-29", S(951782400));    /* 2000 is a leap year */
	start_at("start=1970-01-01T00:00:00Z", 0);
	start_at("start=1969-12-31T23:59:59Z", -S(1));
	start_at("start=@1900000000", S(1900000000));
	start_at("start=@1900000000.5", S(1900000000) + S(1) / 2);
	start_at("start=@-1", -S(1));
	start_at("start=@0", 0);
	CHECK(!zv_proc.vt.clk[ZV_CLK_RT].frozen, "start freezes");
	start_at("freeze=2030-01-01", S(1893456000));
	CHECK(zv_proc.vt.clk[ZV_CLK_RT].frozen, "freeze does not freeze");
	CHECK_EQ(virt_of(ZV_CLK_RT, REAL0 + S(100)), S(1893456000));
	refused("start=2023-02-29");                /* not a leap year */
	refused("start=1900-02-29");
	refused("start=2030-13-01");
	refused("start=2030-00-10");
	refused("start=2030-04-31");
	refused("start=2030-01-00");
	refused("start=2030-01-01T24:00");
	refused("start=2030-01-01T23:60");
	refused("start=2030-01-01T23:59:60");
	refused("start=2030-01-01T12");
	refused("start=2030-1-1");
	refused("start=30-01-01");
	refused("start=2030-01-01X");
	refused("start=2030-01-01T00:00+24:00");
	refused("start=2030-01-01T00:00+01:60");
	refused("start=@");
	refused("start=@12x");
	refused("start=");
	refused("start=tomorrow");
}

static void test_spec(void)
{
	refused("");
	refused("offset=1s,start=@0");              /* one of offset, start, freeze */
	refused("start=@0,freeze=@0");
	refused("bogus=1");
	refused("offset");
	refused("rate");
	CHECK(setup("rate=2,offset=1s") == 0, "rate then offset");
	/* the state passed across execve */
	CHECK(setup("freeze=@5,rate=0.5,clocks=all") == 0, "freeze,rate,clocks");
	struct zv_vtime before = zv_proc.vt;
	char buf[512];
	CHECK(zv_time_encode(buf, sizeof buf, NULL) > 0, "encode: %s", buf);
	zv_proc.vt = (struct zv_vtime){ 0 };
	const char *end = zv_time_decode(buf, NULL);
	CHECK(*end == 0, "restore stopped at '%s'", end);
	CHECK(zv_proc.vt.on && zv_proc.vt.num == before.num && zv_proc.vt.den == before.den, "rate lost");
	for (int f = 0; f < ZV_NCLK; f++)
		CHECK(zv_proc.vt.clk[f].real0 == before.clk[f].real0 && zv_proc.vt.clk[f].virt0 == before.clk[f].virt0 &&
		      zv_proc.vt.clk[f].frozen == before.clk[f].frozen, "clock %d lost", f);
	CHECK(setup("offset=-1d") == 0, "offset=-1d");
	zv_time_encode(buf, sizeof buf, NULL);
	zv_proc.vt = (struct zv_vtime){ 0 };
	zv_time_decode(buf, NULL);
	CHECK_EQ(zv_proc.vt.clk[ZV_CLK_RT].virt0, REAL0 - S(86400)); /* negative numbers survive */
}

void unit_main(void)
{
	test_arith();
	test_rates();
	test_offsets();
	test_dates();
	test_spec();
}
