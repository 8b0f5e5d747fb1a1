/* The --time=SPEC language and the encoding of virtual time carried across
 * execve (sys/vtime.c applies them).
 *
 * SPEC is items separated by commas: offset=DURATION, start=TIME or
 * freeze=TIME (one of them), rate=DECIMAL, clocks=realtime+monotonic+...
 * A DURATION is [+-]N[.F]UNIT... (w d h m s ms us ns; a bare number is
 * seconds); a TIME is @SECONDS[.F] or an ISO 8601 date and time, UTC unless
 * it says otherwise. No floating point: fractions become integers of ns. */
#include "lib/arith.h"
#include "zvisor.h"
#include "sys/vtime.h"
#include "sys/execstate.h"
#include "lib/string.h"
#include "lib/fmt.h"

#define NSEC 1000000000LL
#define MAX_NS 0x7fffffffffffffffLL

/* f * u / scale for non-negative values, clamped. */
static int64_t muldiv(int64_t a, int64_t b, int64_t c, int up)
{
	uint64_t q = zv_umuldiv((uint64_t)a, (uint64_t)b, (uint64_t)c, up);
	return q > (uint64_t)MAX_NS ? MAX_NS : (int64_t)q;
}

static int digits(const char **s, int64_t *v, int max)
{
	const char *p = *s;
	int64_t x = 0;
	int n = 0;
	while (*p >= '0' && *p <= '9' && n < max) {
		x = x * 10 + (*p++ - '0');
		n++;
	}
	*s = p;
	*v = x;
	return n;
}

/* A fraction ".ddd" as nanoseconds of a unit of u ns (up to 9 digits). */
static int64_t fraction(const char **s, int64_t u)
{
	if (**s != '.')
		return 0;
	(*s)++;
	int64_t f, scale = 1;
	int n = digits(s, &f, 9);
	for (int i = 0; i < n; i++)
		scale *= 10;
	while (**s >= '0' && **s <= '9')
		(*s)++; /* beyond nanoseconds */
	return muldiv(f, u, scale, 0);
}

/* [+-]N[.F]UNIT...: w d h m s ms us ns; a bare number is seconds. */
static int parse_duration(const char *s, int64_t *out)
{
	static const struct { const char *u; int64_t ns; } units[] = {
		{ "ms", 1000000 }, { "us", 1000 }, { "ns", 1 }, { "w", 7 * 86400 * NSEC },
		{ "d", 86400 * NSEC }, { "h", 3600 * NSEC }, { "m", 60 * NSEC }, { "s", NSEC },
	};
	int neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	__int128 total = 0;
	int parts = 0;
	while (*s) {
		int64_t n;
		if (!digits(&s, &n, 12) && *s != '.')
			return -1;
		const char *frac = s;
		if (*s == '.') {
			s++;
			while (*s >= '0' && *s <= '9')
				s++;
		}
		size_t k = 0;
		while (k < sizeof units / sizeof units[0] && !zv_startswith(s, units[k].u))
			k++;
		int64_t unit = NSEC;
		if (k < sizeof units / sizeof units[0]) {
			unit = units[k].ns;
			s += zv_strlen(units[k].u);
		} else if (*s || parts) {
			return -1; /* only a lone number may omit its unit */
		}
		total += (__int128)n * unit + fraction(&frac, unit);
		if (total > (__int128)MAX_NS / 2)
			return -1;
		parts++;
	}
	if (!parts)
		return -1;
	*out = (int64_t)(neg ? -total : total);
	return 0;
}

static int leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days from 1970-01-01 to the first of January of year y. */
static int64_t days_to_year(int64_t y)
{
	int64_t d = 0;
	for (int64_t i = 1970; i < y; i++)
		d += 365 + leap(i);
	for (int64_t i = y; i < 1970; i++)
		d -= 365 + leap(i);
	return d;
}

/* @SECONDS[.F], or YYYY-MM-DD[(T| )HH:MM[:SS[.F]]][Z|(+|-)HH[:]MM], UTC
 * unless a zone offset is given. */
static int parse_instant(const char *s, int64_t *out)
{
	if (*s == '@') {
		s++;
		int neg = *s == '-';
		if (neg)
			s++;
		int64_t sec;
		if (!digits(&s, &sec, 11))
			return -1;
		int64_t ns = sec * NSEC + fraction(&s, NSEC);
		*out = neg ? -ns : ns;
		return *s ? -1 : 0;
	}
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
	if (digits(&s, &y, 4) != 4 || *s++ != '-' || digits(&s, &mo, 2) != 2 || *s++ != '-' ||
	    digits(&s, &d, 2) != 2)
		return -1;
	if (*s == 'T' || *s == ' ') {
		s++;
		if (digits(&s, &h, 2) != 2 || *s++ != ':' || digits(&s, &mi, 2) != 2)
			return -1;
		if (*s == ':') {
			s++;
			if (digits(&s, &sec, 2) != 2)
				return -1;
			frac = fraction(&s, NSEC);
		}
	}
	int64_t zone = 0;
	if (*s == 'Z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		int neg = *s++ == '-';
		int64_t zh, zm = 0;
		if (digits(&s, &zh, 2) != 2)
			return -1;
		if (*s == ':')
			s++;
		if (*s && digits(&s, &zm, 2) != 2)
			return -1;
		if (zh > 23 || zm > 59)
			return -1;
		zone = (zh * 3600 + zm * 60) * (neg ? -1 : 1);
	}
	if (*s || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 ||
	    d > mdays[mo - 1] + (mo == 2 && leap(y)))
		return -1;
	int64_t days = days_to_year(y) + d - 1;
	for (int i = 0; i < mo - 1; i++)
		days += mdays[i] + (i == 1 && leap(y));
	*out = ((days * 86400 + h * 3600 + mi * 60 + sec) - zone) * NSEC + frac;
	return 0;
}

/* A positive decimal number as num/den. */
static int parse_rate(const char *s, int64_t *num, int64_t *den)
{
	int64_t n, f = 0, d = 1;
	int ni = digits(&s, &n, 9);
	int nf = 0;
	if (*s == '.') {
		s++;
		nf = digits(&s, &f, 6);
	}
	if (*s || (!ni && !nf))
		return -1;
	for (int i = 0; i < nf; i++)
		d *= 10;
	n = n * d + f;
	if (n <= 0)
		return -1;
	*num = n;
	*den = d;
	return 0;
}

static int parse_clocks(const char *s, unsigned *mask, const char **bad)
{
	static const char *const names[] = { "realtime", "monotonic", "boottime" };
	*mask = 0;
	while (*s) {
		const char *e = zv_strchr(s, '+');
		size_t n = e ? (size_t)(e - s) : zv_strlen(s);
		int k = 0;
		if (n == 3 && zv_strncmp(s, "all", 3) == 0) {
			*mask |= 7;
		} else {
			while (k < ZV_NCLK && !(zv_strlen(names[k]) == n && zv_strncmp(s, names[k], n) == 0))
				k++;
			if (k == ZV_NCLK) {
				*bad = s;
				return -1;
			}
			*mask |= 1u << k;
		}
		s += n;
		if (*s == '+')
			s++;
	}
	return *mask ? 0 : -1;
}

int zv_time_parse(const char *spec, struct zv_time_spec *out, char *why, size_t n)
{
	enum { NONE, OFFSET, START, FREEZE } mode = NONE;
	int64_t value = 0, num = 1, den = 1;
	unsigned mask = 1u << ZV_CLK_RT;
	char item[256];
	const char *s = spec;
	if (!*s) {
		zv_snprintf(why, n, "--time: empty SPEC (offset=, start=, freeze=, rate=)");
		return -1;
	}
	while (*s) {
		const char *comma = zv_strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : zv_strlen(s);
		if (len >= sizeof item)
			len = sizeof item - 1;
		memcpy(item, s, len);
		item[len] = 0;
		s += comma ? (size_t)(comma - s) + 1 : zv_strlen(s);
		char *eq = zv_strchr(item, '=');
		const char *v = eq ? eq + 1 : "";
		if (eq)
			*eq = 0;
		int m = !zv_strcmp(item, "offset") ? OFFSET : !zv_strcmp(item, "start") ? START
			: !zv_strcmp(item, "freeze") ? FREEZE : NONE;
		if (m != NONE && eq) {
			if (mode != NONE) {
				zv_snprintf(why, n, "--time: give only one of offset=, start= and freeze=");
				return -1;
			}
			mode = m;
			if (m == OFFSET ? parse_duration(v, &value) < 0 : parse_instant(v, &value) < 0) {
				zv_snprintf(why, n, m == OFFSET ? "--time: bad duration '%s' (e.g. +3d4h, -90s, 1.5h)"
						   : "--time: bad time '%s' (e.g. 2030-01-01T00:00:00Z or @1900000000)", v);
				return -1;
			}
		} else if (!zv_strcmp(item, "rate") && eq) {
			if (parse_rate(v, &num, &den) < 0) {
				zv_snprintf(why, n, "--time: the rate must be a positive decimal number, not '%s'", v);
				return -1;
			}
		} else if (!zv_strcmp(item, "clocks") && eq) {
			const char *bad = v;
			if (parse_clocks(v, &mask, &bad) < 0) {
				zv_snprintf(why, n, "--time: unknown clock '%s' (realtime, monotonic, boottime, all; join with +)", bad);
				return -1;
			}
		} else {
			zv_snprintf(why, n, "--time: unknown item '%s' (offset=, start=, freeze=, rate=, clocks=)", item);
			return -1;
		}
	}
	*out = (struct zv_time_spec){ mode == OFFSET ? ZV_TIME_OFFSET : mode == START ? ZV_TIME_START
				      : mode == FREEZE ? ZV_TIME_FREEZE : ZV_TIME_NONE, value, num, den, mask };
	return 0;
}

/* T=num:den:real0:virt0:frozen per clock (sys/execstate.c's field) */
int zv_time_encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	const struct zv_vtime *vt = &zv_proc.vt;
	if (!vt->on)
		return -1;
	return zv_snprintf(buf, n, "%ld:%ld:%ld:%ld:%d:%ld:%ld:%d:%ld:%ld:%d", vt->num, vt->den,
			   vt->clk[0].real0, vt->clk[0].virt0, vt->clk[0].frozen, vt->clk[1].real0,
			   vt->clk[1].virt0, vt->clk[1].frozen, vt->clk[2].real0, vt->clk[2].virt0,
			   vt->clk[2].frozen);
}

/* One number of the encoding and the ':' after it. */
static int64_t signed_dec(const char **s)
{
	int64_t v = zv_parse_dec(*s, s);
	if (**s == ':')
		(*s)++;
	return v;
}

const char *zv_time_decode(const char *s, struct zv_exec_carry *x)
{
	struct zv_vtime *vt = &zv_proc.vt;
	vt->num = signed_dec(&s);
	vt->den = signed_dec(&s);
	for (int f = 0; f < ZV_NCLK; f++) {
		vt->clk[f].real0 = signed_dec(&s);
		vt->clk[f].virt0 = signed_dec(&s);
		vt->clk[f].frozen = (int)signed_dec(&s);
	}
	vt->on = vt->num > 0 && vt->den > 0;
	return s;
}
