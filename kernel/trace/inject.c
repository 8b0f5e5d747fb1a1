/* Fault injection with strace's syntax (-e inject=SET:...):
 *   error=ERRNO | retval=N   the call is not made and returns that
 *   when=N | N+ | N+S        the Nth call of the set only, the Nth and every
 *                            later one, or the Nth and every Sth after it
 *                            (default: every call)
 *   delay_enter=D, delay_exit=D   sleep before / after the call (D in
 *                            microseconds, or with a suffix s ms us ns)
 * Calls are counted per process. A line for an injected call ends in
 * "(INJECTED)", as strace's does. */
#include "zvisor.h"
#include "sys/layer.h"
#include "trace/trace.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"

#define MAX_RULES 16

struct rule {
	uint64_t set[512 / 64];
	int has_error, has_retval;
	long error, retval;
	unsigned long first, step; /* when: the first call (1-based) and the step, 0 = only once */
	int64_t delay_enter, delay_exit; /* ns */
	uint32_t seen[512];
};

static struct rule rules[MAX_RULES] ZV_COLD_BSS;
static int nrules;

static int fail(const char *what, const char *arg)
{
	zv_dprintf(2, "zvisor: inject: %s '%s'\n", what, arg);
	return -1;
}

static int parse_num(const char *s, const char *end, unsigned long *v)
{
	if (s == end)
		return -1;
	unsigned long x = 0;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9' || x > (1UL << 40))
			return -1;
		x = x * 10 + (unsigned long)(*s - '0');
	}
	*v = x;
	return 0;
}

static int parse_delay(const char *s, const char *end, int64_t *ns)
{
	static const struct { const char *u; int64_t mul; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
	};
	const char *d = s;
	while (d < end && *d >= '0' && *d <= '9')
		d++;
	unsigned long v;
	if (parse_num(s, d, &v) < 0)
		return -1;
	int64_t mul = 1000; /* microseconds */
	if (d < end) {
		size_t k = 0;
		while (k < 4 && !((size_t)(end - d) == zv_strlen(units[k].u) && !zv_strncmp(d, units[k].u, end - d)))
			k++;
		if (k == 4)
			return -1;
		mul = units[k].mul;
	}
	*ns = (int64_t)v * mul;
	return 0;
}

static int errno_of(const char *s, const char *end, long *e)
{
	unsigned long v;
	if (parse_num(s, end, &v) == 0) {
		if (v < 1 || v > 4095)
			return -1;
		*e = (long)v;
		return 0;
	}
	for (int i = 1; i < 4096; i++) {
		const char *n = zv_errno_name(i);
		if (n && zv_strlen(n) == (size_t)(end - s) && !zv_strncmp(n, s, end - s)) {
			*e = i;
			return 0;
		}
	}
	return -1;
}

/* SET: names, %class or /regex, as -e trace= (reusing its parser through
 * a temporary set). */
int zv_trace_parse_set(const char *v, uint64_t *set);

int zv_inject_parse(const char *spec)
{
	if (nrules == MAX_RULES)
		return fail("too many rules at", spec);
	struct rule *r = &rules[nrules];
	memset(r, 0, sizeof *r);
	r->first = 1;
	r->step = 1;
	const char *colon = zv_strchr(spec, ':');
	if (!colon)
		return fail("needs error=, retval= or a delay:", spec);
	char set[256];
	size_t n = (size_t)(colon - spec);
	if (n >= sizeof set)
		return fail("set too long:", spec);
	memcpy(set, spec, n);
	set[n] = 0;
	if (zv_trace_parse_set(set, r->set) < 0)
		return -1;
	for (const char *p = colon + 1; *p;) {
		const char *e = zv_strchr(p, ':');
		if (!e)
			e = p + zv_strlen(p);
		const char *eq = p;
		while (eq < e && *eq != '=')
			eq++;
		if (eq == e)
			return fail("bad item", p);
		size_t kl = (size_t)(eq - p);
		const char *v = eq + 1;
		if (kl == 5 && !zv_strncmp(p, "error", 5)) {
			if (errno_of(v, e, &r->error) < 0)
				return fail("unknown error", v);
			r->has_error = 1;
		} else if (kl == 6 && !zv_strncmp(p, "retval", 6)) {
			unsigned long x;
			if (parse_num(v, e, &x) < 0)
				return fail("bad retval", v);
			r->retval = (long)x;
			r->has_retval = 1;
		} else if (kl == 4 && !zv_strncmp(p, "when", 4)) {
			const char *plus = v;
			while (plus < e && *plus != '+')
				plus++;
			if (parse_num(v, plus, &r->first) < 0 || !r->first || r->first > 65535)
				return fail("bad when", v);
			r->step = 0;
			if (plus < e) {
				r->step = 1;
				if (plus + 1 < e && (parse_num(plus + 1, e, &r->step) < 0 || !r->step))
					return fail("bad when", v);
			}
		} else if (kl == 11 && !zv_strncmp(p, "delay_enter", 11)) {
			if (parse_delay(v, e, &r->delay_enter) < 0)
				return fail("bad delay", v);
		} else if (kl == 10 && !zv_strncmp(p, "delay_exit", 10)) {
			if (parse_delay(v, e, &r->delay_exit) < 0)
				return fail("bad delay", v);
		} else {
			return fail("unknown or unsupported item", p);
		}
		p = *e ? e + 1 : e;
	}
	if (r->has_error && r->has_retval)
		return fail("error= and retval= exclude each other in", spec);
	if (!r->has_error && !r->has_retval && !r->delay_enter && !r->delay_exit)
		return fail("needs error=, retval= or a delay:", spec);
	nrules++;
	zv_proc.trace.inject = 1;
	return 0;
}

static void sleep_ns(int64_t ns)
{
	struct { int64_t s; long ns; } ts = { ns / 1000000000, ns % 1000000000 };
	while (zv_sys2(__NR_nanosleep, &ts, &ts) == -EINTR)
		;
}

static long inject_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long nr = c->nr;
	t->trace.injected = 0;
	if (!zv_proc.trace.inject || (unsigned long)nr >= 512 || !t->trace.traced)
		return zv_next(c);
	struct rule *fire = NULL;
	for (int i = 0; i < nrules && !fire; i++) {
		struct rule *r = &rules[i];
		if (!(r->set[nr / 64] >> (nr % 64) & 1))
			continue;
		unsigned long k = __atomic_add_fetch(&r->seen[nr], 1, __ATOMIC_RELAXED);
		if (k == r->first || (k > r->first && r->step && (k - r->first) % r->step == 0))
			fire = r;
	}
	if (!fire)
		return zv_next(c);
	if (fire->delay_enter)
		sleep_ns(fire->delay_enter);
	long ret;
	if (fire->has_error || fire->has_retval) {
		ret = fire->has_error ? -fire->error : fire->retval;
		t->trace.injected = 1;
	} else {
		ret = zv_next(c);
	}
	if (fire->delay_exit)
		sleep_ns(fire->delay_exit);
	return ret;
}

/* A new image counts its calls afresh, as one the host exec'd. */
static void inject_exec_here(struct zv_thread *t)
{
	for (int i = 0; i < nrules; i++)
		memset(rules[i].seen, 0, sizeof rules[i].seen);
}

static int inject_on(void) { return zv_proc.trace.inject; }
static int inject_sees(long nr) { return inject_on(); }

ZV_LAYER(inject, 200) = { .name = "inject", .sees = inject_sees, .active = inject_on, .call = inject_call,
			  .exec_here = inject_exec_here };
