/* A small extended-regular-expression matcher for -e trace=/REGEX, which
 * strace hands to regexec(): the pattern may match anywhere in the name.
 * Supported: literals, ., [set] with ranges and ^, \ escapes, ^ and $
 * anchors, the postfix * + ?, groups ( ) and | alternation. Intervals
 * {m,n} and back-references are refused, as are unbalanced brackets and
 * parentheses. Matching backtracks with explicit continuations. */
#include "lib/string.h"

int zv_regex_match(const char *re, const char *s);
int zv_regex_check(const char *re);

/* What remains to match after the current sequence: the sequence
 * [re, end), then next. A starred group continues with itself (star set,
 * from = where this iteration began, so an empty iteration ends it). */
struct cont {
	const char *re, *end;
	int star;
	const char *from;
	const struct cont *next;
};

/* One past the atom at re: a literal, \x, ., [set] or (group); NULL if it
 * is unterminated. */
static const char *atom_end(const char *re)
{
	if (*re == '\\')
		return re[1] ? re + 2 : NULL;
	if (*re == '[') {
		const char *p = re + 1;
		if (*p == '^')
			p++;
		if (*p == ']')
			p++;
		while (*p && *p != ']')
			p++;
		return *p ? p + 1 : NULL;
	}
	if (*re == '(') {
		int depth = 0;
		for (const char *p = re; *p; p++) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '[') {
				const char *e = atom_end(p);
				if (!e)
					return NULL;
				p = e - 1;
			}
			else if (*p == '(')
				depth++;
			else if (*p == ')' && --depth == 0)
				return p + 1;
		}
		return NULL;
	}
	return re + 1;
}

/* The end of the alternative starting at re: the next | at this level. */
static const char *alt_end(const char *re, const char *end)
{
	while (re < end && *re != '|')
		re = atom_end(re);
	return re;
}

static int in_set(const char *p, char c)
{
	int neg = *p == '^', hit = 0;
	if (neg)
		p++;
	if (*p == ']') {
		hit |= c == ']';
		p++;
	}
	for (; *p != ']'; p++) {
		if (p[1] == '-' && p[2] != ']') {
			hit |= c >= p[0] && c <= p[2];
			p += 2;
		} else {
			hit |= c == *p;
		}
	}
	return hit != neg;
}

static int one_char(const char *re, char c)
{
	if (!c)
		return 0;
	switch (*re) {
	case '.': return 1;
	case '[': return in_set(re + 1, c);
	case '\\': return re[1] == c;
	default: return *re == c;
	}
}

static int seq(const char *re, const char *end, const char *s, const struct cont *k);

/* The group [g, ge) (parentheses included) with postfix op, at s. */
static int group(const char *g, const char *ge, char op, int star_again, const char *from, const char *s,
		 const char *after, const char *end, const struct cont *k)
{
	const struct cont rest = { after, end, 0, NULL, k };
	if (op == '?' || op == '*' || star_again) {
		if (seq(after, end, s, k)) /* zero (more) times */
			return 1;
		if (star_again && s == from)
			return 0; /* an empty iteration: stop */
	}
	const struct cont again = { g, ge, 1, s, &rest };
	const struct cont *then = op == '*' || op == '+' || star_again ? &again : &rest;
	for (const char *a = g + 1;;) {
		const char *ae = alt_end(a, ge - 1);
		if (seq(a, ae, s, then))
			return 1;
		if (ae >= ge - 1)
			return 0;
		a = ae + 1;
	}
}

static int seq(const char *re, const char *end, const char *s, const struct cont *k)
{
	if (re >= end) {
		if (!k)
			return 1; /* regexec: the match may end anywhere */
		if (k->star) {
			const char *ge = k->end; /* just past ')': the operator */
			char op = *ge;
			const struct cont *outer = k->next;
			return group(k->re, ge, op, 1, k->from, s, outer->re, outer->end, outer->next);
		}
		return seq(k->re, k->end, s, k->next);
	}
	if (*re == '$' && re + 1 == end && !k)
		return !*s;
	if (*re == '$' && re + 1 == end)
		return !*s && seq(end, end, s, k);
	const char *ae = atom_end(re);
	char op = ae < end && (*ae == '*' || *ae == '+' || *ae == '?') ? *ae : 0;
	const char *next = op ? ae + 1 : ae;
	if (*re == '(')
		return group(re, ae, op, 0, s, s, next, end, k);
	if (!op)
		return one_char(re, *s) && seq(next, end, s + 1, k);
	const char *p = s;
	int n = 0, max = op == '?' ? 1 : 1 << 30;
	while (n < max && one_char(re, *p)) {
		p++;
		n++;
	}
	for (;; n--, p--) {
		if (n >= (op == '+') && seq(next, end, p, k))
			return 1;
		if (n <= 0)
			return 0;
	}
}

int zv_regex_match(const char *re, const char *s)
{
	const char *end = re + zv_strlen(re);
	for (const char *a = re;;) {
		const char *ae = alt_end(a, end);
		if (*a == '^') {
			if (seq(a + 1, ae, s, NULL))
				return 1;
		} else {
			for (const char *p = s;; p++) {
				if (seq(a, ae, p, NULL))
					return 1;
				if (!*p)
					break;
			}
		}
		if (ae >= end)
			return 0;
		a = ae + 1;
	}
}

int zv_regex_check(const char *re)
{
	if (!*re)
		return -1;
	int depth = 0;
	for (const char *p = re; *p;) {
		if (*p == '{' || (*p == '\\' && p[1] >= '1' && p[1] <= '9'))
			return -1;
		if (*p == '(') {
			depth++;
			p++;
			continue;
		}
		if (*p == ')') {
			if (--depth < 0)
				return -1;
			p++;
			continue;
		}
		if ((*p == '*' || *p == '+' || *p == '?') && (p == re || p[-1] == '(' || p[-1] == '|'))
			return -1; /* nothing to repeat */
		const char *e = atom_end(p);
		if (!e)
			return -1;
		p = e;
	}
	return depth ? -1 : 0;
}
