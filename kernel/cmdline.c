/* zvisor's command line: the command (help, --version, check-elf, run,
 * trace, proot) and the options of run and trace, which go into zv_proc. A bad
 * one gets one line and the usage on stderr, status 2. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cmdline.h"
#include "help.h"
#include "trace/remote.h"
#include "intercept/platform.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "fakeid/fakeid.h"
#include "fsview/setup.h"
#include "sys/calls.h"

__attribute__((noreturn)) static void usage_error(const char *fmt, const char *arg)
{
	zv_dprintf(2, fmt, arg);
	zv_write(2, zv_usage_text, zv_strlen(zv_usage_text));
	zv_exit_group(2);
}

int zv_cmdline_command(int *argcp, char ***argvp)
{
	int argc = *argcp;
	char **argv = *argvp;
	if (argc < 2)
		usage_error("zvisor: no command given%s\n", "");
	const char *cmd = argv[1];
	if (zv_strcmp(cmd, "--help") == 0 || zv_strcmp(cmd, "-h") == 0 || zv_strcmp(cmd, "help") == 0) {
		zv_write(1, zv_main_help, zv_strlen(zv_main_help));
		zv_write(1, zv_usage_text, zv_strlen(zv_usage_text));
		zv_exit_group(0);
	}
	if (zv_strcmp(cmd, "--version") == 0 || zv_strcmp(cmd, "-V") == 0) {
		zv_dprintf(1, "zvisor %s\n", ZV_VERSION);
		zv_exit_group(0);
	}
	if (zv_strcmp(cmd, "checkpoint") == 0)
		zv_cr_checkpoint_main(argc - 2, argv + 2);
	if (zv_strcmp(cmd, "check-elf") == 0)
		zv_exit_group(zv_check_main(argc - 2, argv + 2));
	if (zv_strcmp(cmd, "run") == 0 || zv_strcmp(cmd, "trace") == 0)
		return cmd[0] == 't';
	if (zv_strcmp(cmd, "proot") == 0) { /* PRoot's options, as zvisor run's */
		*argcp = zv_proot_argv(argc, argv, argvp);
		return 0;
	}
	usage_error("zvisor: unknown command '%s'\n", cmd);
}

int zv_cmdline_options(int argc, char **argv, int trace, int *count)
{
	int i = 0;
	if (trace)
		zv_proc.trace.on = 1;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (zv_strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (trace && (zv_strcmp(a, "-p") == 0 || (a[1] == 'p' && a[2]) || zv_startswith(a, "--attach="))) {
			/* -p PID, -pPID, --attach=PID: a running process (trace/remote.c) */
			const char *v = a[1] == 'p' ? (a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "")) : a + 9;
			unsigned long pid;
			if (zv_parse_ulong(v, &pid) < 0 || !pid || pid > 0x7fffffff)
				usage_error("zvisor: trace: -p: '%s' is not a process id\n", v);
			if (zv_trace_npids == 16)
				usage_error("zvisor: trace: at most 16 processes with -p%s\n", "");
			zv_trace_pids[zv_trace_npids++] = (int)pid;
			continue;
		}
		int k = trace ? zv_trace_option(argc - i, argv + i) : 0;
		if (k < 0)
			zv_exit_group(2);
		if (k > 0) {
			i += k - 1;
			continue;
		}
		if (zv_strcmp(a, "-h") == 0 || zv_strcmp(a, "--help") == 0) {
			if (trace)
				zv_write(1, zv_trace_help, zv_strlen(zv_trace_help));
			else
				zv_write(1, zv_run_help, zv_strlen(zv_run_help));
			zv_exit_group(0);
		} else if ((k = zv_fsv_option(argc - i, argv + i)) > 0) {
			i += k - 1; /* --root, --bind, --cwd, ... (fsview/options.c) */
		} else if (zv_strcmp(a, "-c") == 0 || zv_strcmp(a, "--count") == 0) {
			*count = 1;
		} else if (zv_startswith(a, "--checkpoint-on=") || zv_strcmp(a, "--checkpoint-on") == 0) {
			const char *v = a[15] == '=' ? a + 16 : (i + 1 < argc ? argv[++i] : "");
			if (!(zv_cr.signal = zv_cr_parse_signal(v)))
				usage_error("zvisor: --checkpoint-on: '%s' is not a signal zvisor can take (e.g. USR2)\n", v);
		} else if (zv_startswith(a, "--checkpoint-dir=") || zv_strcmp(a, "--checkpoint-dir") == 0) {
			const char *v = a[16] == '=' ? a + 17 : (i + 1 < argc ? argv[++i] : "");
			if (!*v)
				usage_error("zvisor: --checkpoint-dir: no directory given%s\n", "");
			zv_cr_absolute(v, zv_cr.on_signal.dir, sizeof zv_cr.on_signal.dir);
		} else if (zv_strcmp(a, "--leave-running") == 0) {
			zv_cr.on_signal.leave_running = 1;
		} else if (zv_startswith(a, "--kernel-release=") || zv_strcmp(a, "--kernel-release") == 0) {
			const char *v = a[16] == '=' ? a + 17 : (i + 1 < argc ? argv[++i] : "");
			if (zv_kernel_release_set(v) < 0)
				usage_error("zvisor: --kernel-release: '%s' is not a release (1 to 64 characters, no comma)\n", v);
		} else if (zv_strcmp(a, "--kill-on-exit") == 0) {
			zv_killexit_wanted = 1; /* the mark is made once the options are read */
		} else if (zv_strcmp(a, "--fake-root") == 0) {
			zv_fakeid_root();
		} else if (zv_startswith(a, "--ids=") || zv_strcmp(a, "--ids") == 0) {
			const char *v = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : "");
			if (zv_fakeid_ids(v) < 0)
				usage_error("zvisor: --ids: '%s' is not UID:GID (numbers)\n", v);
		} else if (zv_startswith(a, "--fake-db=") || zv_strcmp(a, "--fake-db") == 0) {
			const char *v = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : "");
			if (!*v)
				usage_error("zvisor: --fake-db: no file given%s\n", "");
			zv_fakeid_db(v);
		} else if (zv_strcmp(a, "--fake-db-only") == 0) {
			zv_fakeid_db_only();
		} else if (zv_strcmp(a, "--stats") == 0) {
			zv_proc.stats = 1;
		} else if (zv_strcmp(a, "--no-cache") == 0) {
			zv_proc.no_cache = 1;
		} else if (zv_startswith(a, "--exec=") || zv_strcmp(a, "--exec") == 0) {
			const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : "");
			if (zv_strcmp(v, "inprocess") == 0)
				zv_proc.exec_mode = ZV_EXEC_INPROCESS;
			else if (zv_strcmp(v, "host") == 0)
				zv_proc.exec_mode = ZV_EXEC_HOST;
			else
				usage_error("zvisor: unknown exec mode '%s' (inprocess, host)\n", v);
		} else if (zv_startswith(a, "--platform=") || zv_strcmp(a, "--platform") == 0) {
			const char *v = a[10] == '=' ? a + 11 : (i + 1 < argc ? argv[++i] : "");
			int p = zv_platform_by_name(v);
			if (p < 0)
				usage_error("zvisor: unknown platform '%s' (stubs, zpoline, sud, seccomp)\n", v);
			zv_proc.platform = (enum zv_platform)p;
		} else if (zv_startswith(a, "--time=") || zv_strcmp(a, "--time") == 0) {
			const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : "");
			char why[200];
			if (zv_time_setup(v, why, sizeof why) < 0) {
				zv_dprintf(2, "zvisor: %s\n", why);
				zv_exit_group(2);
			}
		} else if (zv_startswith(a, "--vdso=") || zv_strcmp(a, "--vdso") == 0) {
			const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : "");
			static const char *const modes[] = { "auto", "kernel", "none" };
			int m = 0;
			while (m < 3 && zv_strcmp(v, modes[m]) != 0)
				m++;
			if (m == 3)
				usage_error("zvisor: unknown vDSO mode '%s' (auto, kernel, none)\n", v);
			zv_proc.vdso_mode = (enum zv_vdso_mode)m;
		} else if (zv_startswith(a, "--rewrite=") || zv_strcmp(a, "--rewrite") == 0) {
			const char *v = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : "");
			if (zv_strcmp(v, "lazy") == 0)
				zv_proc.rewrite = ZV_REWRITE_LAZY;
			else if (zv_strcmp(v, "none") == 0)
				zv_proc.rewrite = ZV_REWRITE_NONE;
			else if (zv_strcmp(v, "load") == 0)
				zv_proc.rewrite = ZV_REWRITE_LOAD;
			else
				usage_error("zvisor: unknown rewrite mode '%s' (lazy, load, none)\n", v);
		} else if ((k = zv_trace_option(argc - i, argv + i)) != 0) {
			if (k < 0)
				zv_exit_group(2);
			i += k - 1; /* strace's options work on run too */
		} else {
			usage_error("zvisor: unknown option '%s'\n", a);
		}
	}
	if (zv_trace_npids && i < argc)
		usage_error("zvisor: trace: -p and a program together are not supported (%s)\n", argv[i]);
	if (zv_trace_npids && zv_proc.trace.summary)
		usage_error("zvisor: trace: -c with -p is not supported%s\n", "");
	if (i >= argc && !zv_trace_npids)
		usage_error(trace ? "zvisor: trace: no program given%s\n" : "zvisor: run: no program given%s\n", "");
	if (zv_cr.signal && !zv_cr.on_signal.dir[0]) {
		char name[32];
		zv_snprintf(name, sizeof name, "checkpoint.%d", (int)zv_getpid());
		zv_cr_absolute(name, zv_cr.on_signal.dir, sizeof zv_cr.on_signal.dir);
	}
	return i;
}
