/* Unit tests of the trace regex (kernel/trace/regex.c, -e trace=/REGEX):
 * matches as regexec() of an extended regular expression would, anywhere in
 * the name; what zv_regex_check refuses. The expected values were taken
 * from POSIX ERE semantics (Python's re.search agrees on all of these). */
#include "trace/regex.c"
#include "unit.h"

static const struct { const char *re, *s; int want; } cases[] = {
	{ "open", "openat", 1 },
	{ "open", "fopen", 1 },
	{ "^open", "openat", 1 },
	{ "^open", "fopen", 0 },
	{ "at$", "openat", 1 },
	{ "at$", "stat64", 0 },
	{ "^read$", "read", 1 },
	{ "^read$", "readv", 0 },
	{ "^$", "", 1 },
	{ "^$", "x", 0 },
	{ "$", "x", 1 },
	{ "r.ad", "read", 1 },
	{ "r.ad", "rad", 0 },
	{ "^.$", "x", 1 },
	{ "^.$", "", 0 },
	{ "[sl]?stat", "lstat", 1 },
	{ "^[sl]?stat$", "fstat", 0 },
	{ "^[a-c]+$", "abcab", 1 },
	{ "^[a-c]+$", "abd", 0 },
	{ "^[^a-c]+$", "xyz", 1 },
	{ "^[^a-c]+$", "xay", 0 },
	{ "[]]", "a]b", 1 },
	{ "[]]", "ab", 0 },
	{ "^[]a]+$", "]a]", 1 },
	{ "[^]]", "]]", 0 },
	{ "[a-]", "-", 1 },
	{ "^[a-]$", "b", 0 },
	{ "^(open|close)$", "close", 1 },
	{ "^(open|close)$", "closeat", 0 },
	{ "^open|close$", "xclose", 1 },
	{ "^open|close$", "xopen", 0 },
	{ "read|write", "pwrite64", 1 },
	{ "a|b|c", "zzc", 1 },
	{ "a|b|c", "zzz", 0 },
	{ "^ab*c$", "ac", 1 },
	{ "^ab*c$", "abbbc", 1 },
	{ "^ab+c$", "ac", 0 },
	{ "^ab+c$", "abc", 1 },
	{ "^ab?c$", "abbc", 0 },
	{ "^ab?c$", "ac", 1 },
	{ "^(ab)*$", "ababab", 1 },
	{ "^(ab)*$", "aba", 0 },
	{ "^(ab)+c$", "c", 0 },
	{ "^(ab)+c$", "ababc", 1 },
	{ "^(a|b)*c$", "abbac", 1 },
	{ "^(a*)*$", "aaa", 1 },
	{ "^(a*)+b$", "b", 1 },
	{ "^(a|)+$", "aa", 1 },
	{ "^(ab|a)(bc|c)$", "abc", 1 },
	{ "^((a|b)c)*d$", "acbcd", 1 },
	{ "^((a|b)c)*d$", "acbd", 0 },
	{ "^x(y(z)?)?$", "xy", 1 },
	{ "^x(y(z)?)?$", "xz", 0 },
	{ "^a\\.b$", "a.b", 1 },
	{ "^a\\.b$", "axb", 0 },
	{ "\\(", "f(x", 1 },
	{ "^\\*$", "*", 1 },
	{ "^a.*b$", "axxxb", 1 },
	{ "^a.*b$", "axxxbc", 0 },
	{ "e.*e", "epoll_create", 1 },
	{ "^(.*)_(.*)$", "rt_sigaction", 1 },
	{ "^.*$", "", 1 },
	{ "x*", "", 1 },
	{ "^(a+)+$", "aaaaaaaaaaaaaaaab", 0 },
	{ "^(a|aa)*$", "aaaaaaaaaaaaaaaaaaaa", 1 },
};

/* zv_regex_check: 0 for a pattern it supports, -1 for one it refuses. */
static const struct { const char *re; int want; } checks[] = {
	{ "open", 0 }, { "^(open|close)at$", 0 }, { "a*b+c?", 0 }, { "[]]", 0 }, { "[^]a]", 0 }, { "\\(", 0 },
	{ "(a(b)c)", 0 }, { "a|b", 0 },
	{ "", -1 },          /* empty */
	{ "(", -1 }, { "(a", -1 }, { "a)", -1 }, { ")(", -1 },  /* unbalanced */
	{ "[abc", -1 }, { "([a)", -1 },                       /* unterminated set */
	{ "a\\", -1 },                                        /* trailing backslash */
	{ "*a", -1 }, { "(*a)", -1 }, { "a|+b", -1 }, { "?", -1 }, /* nothing to repeat */
	{ "a{2}", -1 }, { "a{1,3}", -1 },                     /* intervals */
	{ "(a)\\1", -1 },                                     /* back-references */
};

void unit_main(void)
{
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK(zv_regex_check(cases[i].re) == 0, "check refuses /%s/", cases[i].re);
		CHECK(zv_regex_match(cases[i].re, cases[i].s) == cases[i].want, "/%s/ on '%s': want %d",
		      cases[i].re, cases[i].s, cases[i].want);
	}
	for (unsigned i = 0; i < sizeof checks / sizeof checks[0]; i++)
		CHECK(zv_regex_check(checks[i].re) == checks[i].want, "check /%s/: want %d", checks[i].re,
		      checks[i].want);
}
