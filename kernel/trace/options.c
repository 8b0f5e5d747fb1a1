/* zvisor trace's options: strace's -e expressions, flags and -o, parsed
 * into zv_proc.trace, kept as text for the images the guest execs (the
 * exec state's Y= field) and read again there. */
#include "zvisor.h"
#include "trace/trace.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "sys/execstate.h"
#include <linux/fcntl.h>

static const struct { const char *name; int bits; } classes[] = {
	{ "file", ZV_TC_FILE }, { "process", ZV_TC_PROCESS }, { "network", ZV_TC_NETWORK },
	{ "net", ZV_TC_NETWORK }, { "signal", ZV_TC_SIGNAL }, { "ipc", ZV_TC_IPC },
	{ "desc", ZV_TC_DESC }, { "memory", ZV_TC_MEMORY }, { "creds", ZV_TC_CREDS },
	{ "clock", ZV_TC_CLOCK }, { "stat", ZV_TC_STAT }, { "lstat", ZV_TC_STAT },
	{ "fstat", ZV_TC_STAT }, { "statfs", ZV_TC_STAT }, { "fstatfs", ZV_TC_STAT },
	{ "%stat", ZV_TC_STAT }, { "pure", ZV_TC_PURE },
};

/* The vDSO functions -e trace may name (strace cannot show them). */
static const char *const vdso_names[] = { "clock_gettime", "gettimeofday", "time", "clock_getres", "getcpu" };

static int bad(const char *what, const char *arg)
{
	zv_dprintf(2, "zvisor: %s '%s'\n", what, arg);
	return -1;
}

static void set_bit(uint64_t *set, int nr, int on)
{
	if (on)
		set[nr / 64] |= 1UL << (nr % 64);
	else
		set[nr / 64] &= ~(1UL << (nr % 64));
}

static int nr_of(const char *name, size_t len)
{
	for (int nr = 0; nr < 512; nr++) {
		const char *n = zv_sysname(nr);
		if (n && zv_strlen(n) == len && zv_strncmp(n, name, len) == 0)
			return nr;
	}
	return -1;
}

int zv_regex_match(const char *re, const char *s); /* trace/regex.c */
int zv_regex_check(const char *re);

/* [!]ITEM[,ITEM...]: names, %class, /regex, all, none (for -e trace= and
 * the set of -e inject=). */
int zv_trace_parse_set(const char *v, uint64_t *out)
{
	struct zv_trace *tr = &zv_proc.trace;
	int neg = *v == '!';
	if (neg)
		v++;
	uint64_t set[512 / 64] = { 0 };
	while (*v) {
		const char *end = zv_strchr(v, ',');
		size_t len = end ? (size_t)(end - v) : zv_strlen(v);
		char item[256];
		if (len >= sizeof item)
			return bad("trace: item too long", v);
		memcpy(item, v, len);
		item[len] = 0;
		const char *it = item;
		int optional = *it == '?'; /* strace: ignore an unknown name */
		if (optional)
			it++;
		if (!zv_strcmp(it, "all")) {
			for (int nr = 0; nr < 512; nr++)
				set_bit(set, nr, 1);
		} else if (!zv_strcmp(it, "none")) {
			/* nothing */
		} else if (it[0] == '%') {
			size_t k = 0;
			while (k < sizeof classes / sizeof classes[0] && zv_strcmp(it + 1, classes[k].name))
				k++;
			if (k == sizeof classes / sizeof classes[0]) {
				if (!optional)
					return bad("unknown syscall class", it);
			} else {
				for (int nr = 0; nr < 512; nr++)
					if (zv_row(nr)->trace.classes & classes[k].bits)
						set_bit(set, nr, 1);
			}
		} else if (it[0] == '/') {
			if (zv_regex_check(it + 1) < 0)
				return bad("bad regular expression", it + 1);
			for (int nr = 0; nr < 512; nr++)
				if (zv_sysname(nr) && zv_regex_match(it + 1, zv_sysname(nr)))
					set_bit(set, nr, 1);
		} else {
			int nr = nr_of(it, zv_strlen(it));
			if (nr < 0 && !optional)
				return bad("unknown syscall", it);
			if (nr >= 0)
				set_bit(set, nr, 1);
			for (size_t k = 0; k < sizeof vdso_names / sizeof vdso_names[0]; k++)
				if (!zv_strcmp(it, vdso_names[k]) && !neg && out == tr->set)
					tr->vdso_shown = 1;
		}
		v += len;
		if (*v == ',')
			v++;
	}
	for (int i = 0; i < 512 / 64; i++)
		out[i] = neg ? ~set[i] : set[i];
	return 0;
}

static int parse_trace_set(const char *v)
{
	return zv_trace_parse_set(v, zv_proc.trace.set);
}

static int parse_expr(const char *e)
{
	const char *eq = zv_strchr(e, '=');
	char q[32] = "trace";
	const char *v = e;
	if (eq) {
		size_t n = (size_t)(eq - e);
		if (n >= sizeof q)
			return bad("unknown qualifier in", e);
		memcpy(q, e, n);
		q[n] = 0;
		v = eq + 1;
	}
	if (!zv_strcmp(q, "trace") || !zv_strcmp(q, "t"))
		return parse_trace_set(v);
	if (!zv_strcmp(q, "status")) {
		if (!zv_strcmp(v, "failed")) {
			zv_proc.trace.failed_only = 1;
			return 0;
		}
		if (!zv_strcmp(v, "all"))
			return 0;
		return bad("status: only 'failed' and 'all' are supported, not", v);
	}
	if (!zv_strcmp(q, "raw") || !zv_strcmp(q, "x")) {
		zv_proc.trace.raw = !zv_strcmp(v, "all");
		return 0;
	}
	if (!zv_strcmp(q, "abbrev") || !zv_strcmp(q, "verbose") || !zv_strcmp(q, "signal") ||
	    !zv_strcmp(q, "signals") || !zv_strcmp(q, "s"))
		return 0; /* accepted; zvisor prints as strace's defaults do */
	if (!zv_strcmp(q, "inject") || !zv_strcmp(q, "fault"))
		return zv_inject_parse(v) < 0 ? -1 : 0;
	return bad("unknown qualifier in -e", e);
}

static long parse_uint(const char *s)
{
	unsigned long v;
	if (zv_parse_ulong(s, &v) < 0 || v > 1u << 30)
		return -1;
	return (long)v;
}

static int option(int argc, char **argv);

/* Each option taken is also kept as text, for the images the guest execs. */
int zv_trace_option(int argc, char **argv)
{
	int n = option(argc, argv);
	struct zv_trace *tr = &zv_proc.trace;
	for (int i = 0; i < n && !tr->restoring; i++) {
		size_t have = zv_strlen(tr->opts), len = zv_strlen(argv[i]);
		if (have + len + 2 >= sizeof tr->opts) {
			zv_dprintf(2, "zvisor: trace options too long\n");
			return -1;
		}
		memcpy(tr->opts + have, argv[i], len);
		tr->opts[have + len] = '\x1f';
		tr->opts[have + len + 1] = 0;
	}
	return n;
}

static int option(int argc, char **argv)
{
	struct zv_trace *tr = &zv_proc.trace;
	const char *a = argv[0];
	const char *next = argc > 1 ? argv[1] : NULL;
	/* the options that take a value: -o FILE, -oFILE, --output=FILE ... */
	static const struct { const char *opt, *lopt; char key; } valued[] = {
		{ "-o", "--output", 'o' }, { "-e", NULL, 'e' }, { "-s", "--string-limit", 's' },
		{ "-X", NULL, 'X' }, { NULL, "--trace", 't' }, { NULL, "--status", 'S' },
		{ NULL, "--inject", 'i' },
	};
	for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
		const char *v = NULL;
		int used = 0;
		size_t ln = valued[k].lopt ? zv_strlen(valued[k].lopt) : 0;
		if (valued[k].opt && !zv_strcmp(a, valued[k].opt)) {
			if (!next)
				return bad("option needs a value:", a);
			v = next;
			used = 2;
		} else if (valued[k].opt && zv_startswith(a, valued[k].opt) && a[2]) {
			v = a + 2;
			used = 1;
		} else if (valued[k].lopt && zv_startswith(a, valued[k].lopt) && a[ln] == '=') {
			v = a + ln + 1;
			used = 1;
		} else if (valued[k].lopt && !zv_strcmp(a, valued[k].lopt)) {
			if (!next)
				return bad("option needs a value:", a);
			v = next;
			used = 2;
		} else {
			continue;
		}
		tr->on = 1;
		switch (valued[k].key) {
		case 'o':
			if (zv_strlen(v) + 16 >= sizeof tr->path)
				return bad("output file name too long:", v);
			zv_strlcpy(tr->path, v, sizeof tr->path);
			break;
		case 'e':
			if (parse_expr(v) < 0)
				return -1;
			break;
		case 's': {
			long n = parse_uint(v);
			if (n < 0)
				return bad("bad string size for -s:", v);
			zv_tb_strsize = (int)n;
			break;
		}
		case 'X':
			if (!zv_strcmp(v, "raw"))
				tr->raw = 1;
			else if (zv_strcmp(v, "abbrev") && zv_strcmp(v, "verbose"))
				return bad("-X: unknown format (raw, abbrev, verbose):", v);
			break;
		case 't':
			if (parse_trace_set(v) < 0)
				return -1;
			break;
		case 'S':
			if (parse_expr(zv_strcmp(v, "failed") ? "status=all" : "status=failed") < 0 ||
			    (zv_strcmp(v, "failed") && zv_strcmp(v, "all")))
				return bad("--status: only 'failed' and 'all' are supported, not", v);
			break;
		case 'i':
			if (zv_inject_parse(v) < 0)
				return -1;
			break;
		}
		return used;
	}
	/* flags, possibly bundled as strace allows: -fT, -tt, -ff */
	if (!zv_strcmp(a, "--json")) {
		tr->on = tr->json = 1;
		return 1;
	}
	if (!zv_strcmp(a, "--summary-only")) {
		tr->summary = 1;
		return 1;
	}
	if (!zv_strcmp(a, "--summary")) {
		tr->summary = 2;
		tr->on = 1;
		return 1;
	}
	if (!zv_strcmp(a, "--summary-wall-clock"))
		return 1; /* -w */
	if (!zv_strcmp(a, "--follow-forks")) {
		tr->on = 1;
		tr->follow = tr->follow ? tr->follow : 1;
		return 1;
	}
	if (!zv_strcmp(a, "--output-separately")) {
		tr->on = 1;
		tr->follow = 2;
		return 1;
	}
	if (a[0] != '-' || a[1] == '-' || !a[1])
		return 0;
	for (const char *p = a + 1; *p; p++)
		if (!zv_strchr("fTtrcCyZvw", *p))
			return 0; /* not ours: let the caller report it */
	tr->on = 1;
	for (const char *p = a + 1; *p; p++) {
		switch (*p) {
		case 'f': tr->follow = tr->follow ? 2 : 1; break;
		case 'T': tr->show_time = 1; break;
		case 't': tr->tstamp++; break;
		case 'r': tr->relative = 1; break;
		case 'c': tr->summary = 1; break;
		case 'C': tr->summary = 2; break;
		case 'y': tr->decode_fds = 1; break;
		case 'Z': tr->failed_only = 1; break;
		case 'v': break; /* structures are printed in full where decoded */
		case 'w': break; /* -c's times are wall-clock times already */
		}
	}
	if (tr->tstamp > 3)
		tr->tstamp = 3;
	return 1;
}

/* -c alone prints only the table; no -e trace= shows every call. */
static void set_defaults(struct zv_trace *tr)
{
	if (tr->summary == 1)
		tr->on = 0;
	int any = 0;
	for (int i = 0; i < 512 / 64; i++)
		any |= tr->set[i] != 0;
	if (!any && !tr->vdso_shown)
		for (int i = 0; i < 512 / 64; i++)
			tr->set[i] = ~0UL;
}

int zv_trace_setup(void)
{
	struct zv_trace *tr = &zv_proc.trace;
	tr->fd = -1;
	set_defaults(tr);
	if (!tr->path[0])
		return 0; /* stderr: the kept copy */
	if (tr->follow == 2 && tr->on)
		return 0; /* FILE.PID, opened by each process */
	long fd = zv_openat(AT_FDCWD, tr->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0) {
		zv_dprintf(2, "zvisor: cannot open %s: %s\n", tr->path, zv_strerror((int)-fd));
		return -1;
	}
	tr->fd = zv_hide_fd((int)fd);
	return 0;
}

/* ---- across execve ------------------------------------------------------ */

int zv_trace_encode_opts(char *buf, size_t n, const struct zv_exec_carry *x)
{
	const struct zv_trace *tr = &zv_proc.trace;
	return tr->opts[0] ? zv_snprintf(buf, n, "%s", tr->opts) : -1;
}

/* Y=the options' text, to the end of the state */
const char *zv_trace_decode_opts(const char *s, struct zv_exec_carry *x)
{
	struct zv_trace *tr = &zv_proc.trace;
	char words[sizeof tr->opts];
	char *argv[128];
	int argc = 0;
	zv_strlcpy(words, s, sizeof words);
	for (char *p = words; *p && argc < 127;) {
		argv[argc++] = p;
		char *e = zv_strchr(p, '\x1f');
		if (!e)
			break;
		*e = 0;
		p = e + 1;
	}
	argv[argc] = NULL;
	zv_strlcpy(tr->opts, s, sizeof tr->opts);
	tr->restoring = 1;
	int fd = tr->fd;
	for (int i = 0; i < argc;) {
		int k = zv_trace_option(argc - i, argv + i);
		i += k > 0 ? k : 1;
	}
	tr->fd = fd;
	tr->restoring = 0;
	set_defaults(tr);
	return s + zv_strlen(s);
}

ZV_EXEC_FIELD(trace_opts, 999, 'Y', zv_trace_encode_opts, zv_trace_decode_opts); /* last: it may hold commas */
