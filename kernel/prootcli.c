/* zvisor proot: PRoot's command line (its options, spelled as PRoot 5.4
 * spells them, with its defaults), turned into the argv of `zvisor run`, so
 * that a script switches from PRoot by changing one word. docs/FSVIEW.md has
 * the table of PRoot's options and what each becomes.
 *
 * PRoot's semantics kept here: options end at the first word that does not
 * start with '-'; long options take their value after '=' and short ones as
 * the next word; -r, -w and -i/-0/-S: the last one counts; -R and -S bind
 * PRoot's lists of host paths, those that exist (run's --bind-preset=host
 * and =build); without -r the guest root is the host's; PRoot binds nothing
 * by itself, so neither does this (--no-default-binds); the working
 * directory, -w or by default the host's working directory's path (a
 * relative one joined to it), is looked up in the guest root, and is / with
 * a warning if the root lacks it; with no command, /bin/sh.
 *
 * zvisor run's own long options that PRoot does not have (--platform=,
 * --time=, --count, ...) are passed on as they are. */
#include "zvisor.h"
#include "cmdline.h"
#include "help.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "fsview/setup.h"
#include <linux/fcntl.h>

enum opt {
	O_ROOT, O_BIND, O_CWD, O_KILL, O_VERBOSE, O_VERSION, O_HELP, O_ROOT_ID, O_CHANGE_ID,
	O_LINK2SYMLINK, O_MIXED, O_ALIAS_R, O_ALIAS_S, O_KERNEL,
	O_UNSUPPORTED, /* the ones below are refused, each with its reason */
	O_QEMU, O_PORT, O_NETCOOP, O_PYTHON,
};

static const struct option {
	const char *name;
	char sep; /* ' ': the value is the next word; '=': after '='; 0: no value */
	enum opt opt;
} options[] = {
	{ "-r", ' ', O_ROOT }, { "--rootfs", '=', O_ROOT },
	{ "-b", ' ', O_BIND }, { "--bind", '=', O_BIND }, { "-m", ' ', O_BIND }, { "--mount", '=', O_BIND },
	{ "-q", ' ', O_QEMU }, { "--qemu", '=', O_QEMU },
	{ "--mixed-mode", ' ', O_MIXED },
	{ "-w", ' ', O_CWD }, { "--pwd", '=', O_CWD }, { "--cwd", '=', O_CWD },
	{ "--kill-on-exit", 0, O_KILL },
	{ "-v", ' ', O_VERBOSE }, { "--verbose", '=', O_VERBOSE },
	{ "-V", 0, O_VERSION }, { "--version", 0, O_VERSION }, { "--about", 0, O_VERSION },
	{ "-h", 0, O_HELP }, { "--help", 0, O_HELP }, { "--usage", 0, O_HELP },
	{ "-k", ' ', O_KERNEL }, { "--kernel-release", '=', O_KERNEL },
	{ "-0", 0, O_ROOT_ID }, { "--root-id", 0, O_ROOT_ID },
	{ "-i", ' ', O_CHANGE_ID }, { "--change-id", '=', O_CHANGE_ID },
	{ "-p", ' ', O_PORT }, { "--port", '=', O_PORT },
	{ "-n", 0, O_NETCOOP }, { "--netcoop", 0, O_NETCOOP },
	{ "-P", ' ', O_PYTHON },
	{ "-l", 0, O_LINK2SYMLINK }, { "--link2symlink", 0, O_LINK2SYMLINK },
	{ "-R", ' ', O_ALIAS_R }, { "-S", ' ', O_ALIAS_S },
};

static const char *const refused[] = {
	[O_QEMU - O_UNSUPPORTED - 1] = "zvisor runs x86-64 programs natively, with no emulator",
	[O_PORT - O_UNSUPPORTED - 1] = "ports are not remapped",
	[O_NETCOOP - O_UNSUPPORTED - 1] = "ports are not remapped",
	[O_PYTHON - O_UNSUPPORTED - 1] = "there are no Python extensions",
};

__attribute__((noreturn)) static void bad(const char *fmt, const char *a, const char *b)
{
	zv_write(2, "zvisor: proot: ", 15);
	zv_dprintf(2, fmt, a, b);
	zv_write(2, "\n", 1);
	zv_exit_group(2);
}

/* The new argv and the strings made for it, in memory of the kernel's. */
struct out {
	char **v;
	int n, cap;
	char *buf;
	size_t used, size;
};

static void *get_mem(size_t n)
{
	void *p = zv_kmap(n, 4096, -1);
	if (zv_is_err((long)p))
		bad("out of memory%s%s", "", "");
	return p;
}

static void push(struct out *o, const char *s)
{
	if (o->n + 2 > o->cap) {
		int cap = o->cap ? o->cap * 2 : 256;
		char **v = get_mem(cap * sizeof *v);
		if (o->n)
			memcpy(v, o->v, o->n * sizeof *v);
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = (char *)s;
	o->v[o->n] = NULL;
}

/* a + b as a new string (b may be NULL). */
static char *join(struct out *o, const char *a, const char *b)
{
	size_t la = zv_strlen(a), lb = b ? zv_strlen(b) : 0;
	if (o->used + la + lb + 1 > o->size) {
		o->size = la + lb + 1 > 65536 ? la + lb + 1 : 65536;
		o->buf = get_mem(o->size);
		o->used = 0;
	}
	char *s = o->buf + o->used;
	memcpy(s, a, la);
	if (lb)
		memcpy(s + la, b, lb);
	s[la + lb] = 0;
	o->used += la + lb + 1;
	return s;
}

static char cwd[ZV_PATH_MAX];

/* path made absolute against the host's working directory, as PRoot reads
 * host paths and a relative -w. */
static const char *absolute(struct out *o, const char *path)
{
	if (path[0] == '/')
		return path;
	if (!cwd[0] && zv_sys2(__NR_getcwd, cwd, sizeof cwd) < 0)
		bad("cannot find the working directory%s%s", "", "");
	if (zv_strcmp(path, ".") == 0)
		return cwd;
	return join(o, join(o, cwd, zv_strcmp(cwd, "/") ? "/" : NULL), path);
}

/* zvisor run's options accepted as they are (none is one of PRoot's). */
static const char *const run_options[] = {
	"--platform=", "--rewrite=", "--time=", "--vdso=", "--no-cache", "--count", "--stats", NULL,
};

static int run_option(const char *a)
{
	for (const char *const *r = run_options; *r; r++) {
		size_t n = zv_strlen(*r);
		if ((*r)[n - 1] == '=' ? zv_strncmp(a, *r, n) == 0 : zv_strcmp(a, *r) == 0)
			return 1;
	}
	return 0;
}

/* What the options say, gathered before the argv is written. */
static struct {
	const char *root; /* NULL: the host's */
	const char *cwd;
	const char *ids; /* "0:0" for -0 and -S */
	const char *preset; /* -R: "host", -S: "build" */
	const char *release; /* -k: "--kernel-release=STRING" */
	int kill, verbose;
} want;

static int parse_int(const char *s, int *v)
{
	const char *end;
	long n = zv_parse_dec(s, &end);
	if (end == s || *end)
		return -1;
	*v = (int)n;
	return 0;
}

/* The option arg names; *value is its value when arg holds it too
 * ("--rootfs=DIR"), else NULL. */
static const struct option *match(const char *arg, const char **value)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
		const struct option *op = &options[i];
		size_t n = zv_strlen(op->name);
		if (zv_strncmp(arg, op->name, n) != 0)
			continue;
		if (!arg[n]) {
			*value = NULL;
			return op;
		}
		if (op->sep == '=' && arg[n] == '=') {
			*value = arg + n + 1;
			return op;
		}
	}
	return NULL;
}

int zv_proot_argv(int argc, char **argv, char ***out_argv)
{
	char **envp = argv + argc + 1; /* argv is the process's own, on its stack */
	struct out o = { 0 }, binds = { 0 }, passed = { 0 };
	if (argc < 3)
		bad("no option and no command: see 'zvisor proot --help'%s%s", "", "");
	int i = 2; /* after "zvisor proot" */
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		if (a[0] != '-')
			break;
		if (zv_strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (run_option(a)) {
			push(&passed, a);
			continue;
		}
		const struct option *op = match(a, &v);
		if (!op)
			bad("unknown option '%s'%s (see 'zvisor proot --help')", a, "");
		if (op->sep && !v) {
			if (op->sep != ' ')
				bad("option '%s' takes its value after '=': %s=VALUE", a, a);
			if (i + 1 >= argc)
				bad("missing value for option '%s'%s", a, "");
			v = argv[++i];
		}
		if (op->opt > O_UNSUPPORTED)
			bad("%s: not supported: %s", op->name, refused[op->opt - O_UNSUPPORTED - 1]);
		switch (op->opt) {
		case O_ROOT:
			want.root = absolute(&o, v);
			break;
		case O_BIND: {
			/* HOST[:GUEST[!]], as PRoot's new_binding reads it: a
			 * HOST of $NAME is that variable's value; HOST, and a
			 * relative GUEST, are made absolute against the working
			 * directory; a HOST that cannot be reached is left out
			 * with a warning (PRoot goes on without it); GUEST's '!'
			 * (do not follow a symbolic link at GUEST) dropped: a
			 * bind never follows GUEST's last component */
			const char *colon = zv_strchr(v, ':');
			char host[ZV_PATH_MAX];
			size_t n = colon ? (size_t)(colon - v) : zv_strlen(v);
			if (n >= sizeof host)
				n = sizeof host - 1;
			memcpy(host, v, n);
			host[n] = 0;
			const char *h = host;
			if (h[0] == '$' && zv_env_value(envp, h + 1))
				h = zv_env_value(envp, h + 1);
			h = absolute(&o, join(&o, h, NULL));
			long fd = zv_openat(AT_FDCWD, h, O_PATH | O_CLOEXEC, 0);
			if (fd < 0) {
				if (want.verbose >= 0)
					zv_dprintf(2, "zvisor: proot: warning: binding '%s' left out: %s: %s\n", v, h,
						   zv_strerror((int)-fd));
				break;
			}
			zv_close((int)fd);
			if (!colon) {
				push(&binds, h);
			} else {
				char *g = join(&o, colon + 1, NULL);
				size_t gl = zv_strlen(g);
				if (gl > 1 && g[gl - 1] == '!')
					g[gl - 1] = 0;
				push(&binds, join(&o, join(&o, h, ":"), absolute(&o, g)));
			}
			break;
		}
		case O_CWD:
			want.cwd = absolute(&o, v);
			break;
		case O_KILL:
			want.kill = 1;
			break;
		case O_VERBOSE:
			if (parse_int(v, &want.verbose) < 0)
				bad("option '%s' expects an integer value, not '%s'", a, v);
			break;
		case O_VERSION:
			zv_dprintf(1, "zvisor %s (zvisor proot: PRoot's command line, see 'zvisor proot --help')\n",
				   ZV_VERSION);
			zv_exit_group(0);
		case O_HELP:
			zv_write(1, zv_proot_help, zv_strlen(zv_proot_help));
			zv_exit_group(0);
		case O_ROOT_ID:
			want.ids = "0:0";
			break;
		case O_CHANGE_ID: {
			const char *c = zv_strchr(v, ':');
			int u, g;
			char uid[24];
			size_t n = c ? (size_t)(c - v) : 0;
			if (!c || n >= sizeof uid)
				bad("option '%s' expects UID:GID, not '%s'", a, v);
			memcpy(uid, v, n);
			uid[n] = 0;
			if (parse_int(uid, &u) < 0 || parse_int(c + 1, &g) < 0 || u < 0 || g < 0)
				bad("option '%s' expects UID:GID, not '%s'", a, v);
			want.ids = v;
			break;
		}
		case O_KERNEL: /* what uname says (PRoot's -k changes that alone) */
			want.release = join(&o, "--kernel-release=", v);
			break;
		case O_LINK2SYMLINK: /* hard links are made as asked: nothing to emulate */
		case O_MIXED: /* only matters with -q */
			break;
		case O_ALIAS_R:
		case O_ALIAS_S:
			want.root = absolute(&o, v);
			if (op->opt == O_ALIAS_S)
				want.ids = "0:0";
			want.preset = op->opt == O_ALIAS_R ? "--bind-preset=host" : "--bind-preset=build";
			break;
		default:
			break;
		}
	}

	push(&o, argv[0]);
	push(&o, "run");
	for (int k = 0; k < passed.n; k++)
		push(&o, passed.v[k]);
	if (want.root || binds.n) {
		push(&o, "--root");
		push(&o, want.root ? want.root : "/");
		push(&o, "--no-default-binds");
	}
	if (want.preset)
		push(&o, want.preset);
	for (int b = 0; b < binds.n; b++) {
		push(&o, "--bind");
		push(&o, binds.v[b]);
	}
	if (want.root || binds.n || want.cwd) {
		/* PRoot's working directory: -w, else the host's working
		 * directory's path; looked up in the guest root, and / (with a
		 * warning unless -v is negative) if it is not there */
		push(&o, "--cwd");
		push(&o, want.cwd ? want.cwd : absolute(&o, "."));
		fsv_opts.cwd_soft = want.verbose < 0 ? 2 : 1;
	}
	if (want.ids && zv_strcmp(want.ids, "0:0") == 0) {
		push(&o, "--fake-root");
	} else if (want.ids) {
		push(&o, "--ids");
		push(&o, want.ids);
	}
	if (want.kill)
		push(&o, "--kill-on-exit");
	if (want.release)
		push(&o, want.release);
	push(&o, "--");
	if (i >= argc)
		push(&o, "/bin/sh"); /* PRoot's default command */
	for (; i < argc; i++)
		push(&o, argv[i]);

	if (want.verbose > 0) { /* what it became, as a command line */
		zv_write(2, "zvisor: proot:", 14);
		for (int k = 0; k < o.n; k++)
			zv_dprintf(2, " %s", o.v[k]);
		zv_write(2, "\n", 1);
	}
	*out_argv = o.v;
	return o.n;
}
