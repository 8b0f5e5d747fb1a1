/* The command line's view options (run and trace): kept as given until
 * setup.c opens them, once the whole command line is read. */
#include "fsview/fsview.h"
#include "fsview/setup.h"
#include "zvisor.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/syscall.h"

struct fsv_opts fsv_opts ZV_COLD_BSS;

/* The value of option name at argv[0] ("--name=V" or "--name V"): NULL if
 * argv[0] is not it; *used is how many words it took. */
static const char *value(int argc, char **argv, const char *name, int *used)
{
	size_t n = zv_strlen(name);
	const char *a = argv[0];
	if (zv_strncmp(a, name, n))
		return NULL;
	if (a[n] == '=') {
		*used = 1;
		return a + n + 1;
	}
	if (a[n])
		return NULL;
	if (argc < 2) {
		zv_dprintf(2, "zvisor: %s: no value given\n", name);
		zv_exit_group(2);
	}
	*used = 2;
	return argv[1];
}

__attribute__((noreturn)) static void bad(const char *what, const char *v)
{
	zv_dprintf(2, "zvisor: %s '%s'\n", what, v);
	zv_exit_group(2);
}

int zv_fsv_option(int argc, char **argv)
{
	int used = 0;
	const char *v;
	if ((v = value(argc, argv, "--root", &used))) {
		if (!*v)
			bad("--root: no directory given:", v);
		fsv_opts.root = v;
	} else if ((v = value(argc, argv, "--bind", &used))) {
		if (!*v || fsv_opts.nbinds >= 32)
			bad(*v ? "--bind: too many binds at" : "--bind: no path given:", v);
		fsv_opts.binds[fsv_opts.nbinds++] = v;
	} else if ((v = value(argc, argv, "--cwd", &used))) {
		if (!*v)
			bad("--cwd: no directory given:", v);
		fsv_opts.cwd = v;
	} else if ((v = value(argc, argv, "--bind-preset", &used))) {
		if (!zv_strcmp(v, "host"))
			fsv_opts.preset = FSV_PRESET_HOST;
		else if (!zv_strcmp(v, "build"))
			fsv_opts.preset = FSV_PRESET_BUILD;
		else if (!zv_strcmp(v, "none"))
			fsv_opts.preset = FSV_PRESET_NONE, fsv_opts.no_default = 1;
		else
			bad("--bind-preset: unknown preset (host, build, none):", v);
	} else if (!zv_strcmp(argv[0], "--no-default-binds")) {
		fsv_opts.no_default = 1;
		used = 1;
	} else {
		return 0;
	}
	fsv_opts.any = 1;
	return used;
}
