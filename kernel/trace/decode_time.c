/* Decoders for clocks, timers, sleeps and resource reports (decode.h). */
#include "zvisor.h"
#include "trace/decode.h"

/* A time as strace prints it next to a number: 2026-11-23T06:16:13+0000,
 * with .nanoseconds when there are some
 * (UTC; days to a civil date by the usual era arithmetic, no libc). */
void zv_dec_iso_time(struct zv_tb *b, int64_t t, long nsec)
{
	int64_t days = t / 86400, secs = t % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
	tb_printf(b, "%ld-%02ld-%02ldT%02ld:%02ld:%02ld", y, m, d, secs / 3600, secs / 60 % 60, secs % 60);
	if (nsec > 0)
		tb_printf(b, ".%09ld", nsec);
	tb_puts(b, "+0000");
}

void zv_dec_time(struct zv_tb *b, const struct zv_tcall *c)
{
	int64_t t;
	if (c->a[0] && OK(c) && zv_peek(&t, (uint64_t)c->a[0], 8) == 0) {
		tb_printf(b, "[%ld /* ", t);
		zv_dec_iso_time(b, t, 0);
		tb_puts(b, " */]");
	} else {
		tb_ptr(b, (uint64_t)c->a[0]);
	}
}

void zv_dec_time_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%ld (", c->ret);
	zv_dec_iso_time(b, c->ret, 0);
	tb_putc(b, ')');
}

/* struct timeval, {tv_sec=1, tv_usec=0} */
static void timeval(struct zv_tb *b, uint64_t p)
{
	int64_t tv[2];
	if (!p || zv_peek(tv, p, sizeof tv) < 0)
		tb_ptr(b, p);
	else
		tb_printf(b, "{tv_sec=%ld, tv_usec=%ld}", tv[0], tv[1]);
}

void zv_dec_gettimeofday(struct zv_tb *b, const struct zv_tcall *c)
{
	int32_t tz[2];
	if (OK(c))
		timeval(b, (uint64_t)c->a[0]);
	else
		tb_ptr(b, (uint64_t)c->a[0]);
	SEP(b);
	if (c->a[1] && OK(c) && zv_peek(tz, (uint64_t)c->a[1], sizeof tz) == 0)
		tb_printf(b, "{tz_minuteswest=%d, tz_dsttime=%d}", tz[0], tz[1]);
	else
		tb_ptr(b, (uint64_t)c->a[1]);
}

/* struct itimerval (usec = 1) or struct itimerspec (usec = 0) */
static void interval(struct zv_tb *b, uint64_t p, int usec)
{
	int64_t v[4];
	if (!p || zv_peek(v, p, sizeof v) < 0) {
		tb_ptr(b, p);
		return;
	}
	const char *u = usec ? "usec" : "nsec";
	tb_printf(b, "{it_interval={tv_sec=%ld, tv_%s=%ld}, it_value={tv_sec=%ld, tv_%s=%ld}}", v[0], u, v[1], v[2], u,
		  v[3]);
}

/* the struct a call fills: shown when it succeeded */
static void filled_interval(struct zv_tb *b, const struct zv_tcall *c, int i, int usec)
{
	if (OK(c))
		interval(b, (uint64_t)c->a[i], usec);
	else
		tb_ptr(b, (uint64_t)c->a[i]);
}

void zv_dec_setitimer(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_enum(b, (uint64_t)c->a[0], &zv_n_itimers, "%d");
	SEP(b);
	interval(b, (uint64_t)c->a[1], 1);
	SEP(b);
	filled_interval(b, c, 2, 1);
}

void zv_dec_getitimer(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_enum(b, (uint64_t)c->a[0], &zv_n_itimers, "%d");
	SEP(b);
	filled_interval(b, c, 1, 1);
}

/* A sleep's argument i, the time left: written only when a signal cut the
 * sleep. */
static void time_left(struct zv_tb *b, const struct zv_tcall *c, int i)
{
	if (c->a[i] && c->ret == -4 /* EINTR */)
		tb_timespec(b, (uint64_t)c->a[i]);
	else
		tb_ptr(b, (uint64_t)c->a[i]);
}

void zv_dec_clock_nanosleep(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'c');
	SEP(b);
	tb_flags(b, (uint64_t)c->a[1], &zv_n_timer_flags, "0");
	SEP(b);
	tb_timespec(b, (uint64_t)c->a[2]);
	SEP(b);
	time_left(b, c, 3);
}

void zv_dec_nanosleep(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_timespec(b, (uint64_t)c->a[0]);
	SEP(b);
	time_left(b, c, 1);
}

void zv_dec_timerfd_settime(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	tb_flags(b, (uint64_t)c->a[1], &zv_n_timerfd_flags, "0");
	SEP(b);
	interval(b, (uint64_t)c->a[2], 0);
	SEP(b);
	filled_interval(b, c, 3, 0);
}

void zv_dec_timerfd_gettime(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	filled_interval(b, c, 1, 0);
}

void zv_dec_timer_create(struct zv_tb *b, const struct zv_tcall *c)
{
	struct { uint64_t value; int32_t signo, notify, tid; } ev;
	int32_t id;
	zv_dec_arg(b, c, 0, 'c');
	SEP(b);
	if (!c->a[1] || zv_peek(&ev, (uint64_t)c->a[1], sizeof ev) < 0) {
		tb_ptr(b, (uint64_t)c->a[1]);
	} else {
		tb_puts(b, "{");
		if (ev.notify != 1 /* SIGEV_NONE */) {
			tb_puts(b, "sigev_signo=");
			tb_signame(b, ev.signo);
			SEP(b);
		}
		tb_puts(b, "sigev_notify=");
		tb_enum(b, (uint64_t)(uint32_t)ev.notify, &zv_n_sigev_notify, "0x%lx /* SIGEV_??? */");
		if (ev.notify == 4)
			tb_printf(b, ", sigev_notify_thread_id=%d", ev.tid);
		tb_putc(b, '}');
	}
	SEP(b);
	if (OK(c) && zv_peek(&id, (uint64_t)c->a[2], 4) == 0)
		tb_printf(b, "[%d]", id);
	else
		tb_ptr(b, (uint64_t)c->a[2]);
}

void zv_dec_timer_settime(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%d, ", (int)c->a[0]);
	tb_flags(b, (uint64_t)c->a[1], &zv_n_timer_flags, "0");
	SEP(b);
	interval(b, (uint64_t)c->a[2], 0);
	SEP(b);
	filled_interval(b, c, 3, 0);
}

void zv_dec_timer_gettime(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%d, ", (int)c->a[0]);
	filled_interval(b, c, 1, 0);
}

void zv_dec_sysinfo(struct zv_tb *b, const struct zv_tcall *c)
{
	struct {
		int64_t uptime;
		uint64_t loads[3], totalram, freeram, sharedram, bufferram, totalswap, freeswap;
		uint16_t procs, pad;
		uint32_t pad2;
		uint64_t totalhigh, freehigh;
		uint32_t mem_unit;
	} s;
	if (!OK(c) || zv_peek(&s, (uint64_t)c->a[0], sizeof s) < 0) {
		tb_ptr(b, (uint64_t)c->a[0]);
		return;
	}
	tb_printf(b, "{uptime=%ld, loads=[%lu, %lu, %lu], totalram=%lu, freeram=%lu, sharedram=%lu, bufferram=%lu, "
		     "totalswap=%lu, freeswap=%lu, procs=%u, totalhigh=%lu, freehigh=%lu, mem_unit=%u}",
		  s.uptime, s.loads[0], s.loads[1], s.loads[2], s.totalram, s.freeram, s.sharedram, s.bufferram,
		  s.totalswap, s.freeswap, s.procs, s.totalhigh, s.freehigh, s.mem_unit);
}

void zv_dec_getrusage(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_enum(b, (uint64_t)(int64_t)(int)c->a[0], &zv_n_rusage_who, "%d");
	SEP(b);
	if (OK(c))
		zv_dec_rusage(b, (uint64_t)c->a[1]);
	else
		tb_ptr(b, (uint64_t)c->a[1]);
}

/* struct rusage, abbreviated as strace does */
void zv_dec_rusage(struct zv_tb *b, uint64_t p)
{
	tb_puts(b, "{ru_utime=");
	timeval(b, p);
	tb_puts(b, ", ru_stime=");
	timeval(b, p + 16);
	tb_puts(b, ", ...}");
}

void zv_dec_times(struct zv_tb *b, const struct zv_tcall *c)
{
	int64_t t[4];
	if (OK(c) && c->a[0] && zv_peek(t, (uint64_t)c->a[0], sizeof t) == 0)
		tb_printf(b, "{tms_utime=%ld, tms_stime=%ld, tms_cutime=%ld, tms_cstime=%ld}", t[0], t[1], t[2], t[3]);
	else
		tb_ptr(b, (uint64_t)c->a[0]);
}
