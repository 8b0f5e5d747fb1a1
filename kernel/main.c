/* zvisor's entry: process set-up and the jump into the guest, after the
 * command line (cmdline.c). The same image also starts every program a
 * guest execs, through the internal command "__exec" (see sys/exec.c). */
#include "zvisor.h"
#include "cr/cr.h"
#include "intercept/platform.h"
#include "intercept/sitecache.h"
#include "sys/fdflags.h"
#include "sys/layer.h"
#include "sys/execstate.h"
#include "sys/setid.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "trace/count.h"
#include "lib/kmem.h"
#include "intercept/sites.h"
#include "intercept/sudoff.h"
#include "cmdline.h"
#include "fakeid/fakeid.h"
#include "fsview/setup.h"
#include "trace/remote.h"
#include "image.h"
#include <linux/auxvec.h>
#include <linux/mman.h>

static uint64_t initial_mask; /* the signal mask zvisor was started with */
extern char zv_text_start[], zv_bounce_page[]; /* kernel/zvisor.ld */

/* execvp's search: the first PATH entry that the host could execute
 * (r->files: its ELF and interpreter, open and read for the load). */
static const char *find_program(const char *prog, char **envp, struct zv_resolved *r, char *buf,
				long *err)
{
	if (zv_strchr(prog, '/')) {
		*err = zv_exec_resolve_keep(prog, 0, r, 0);
		return prog;
	}
	const char *path = zv_env_value(envp, "PATH");
	if (!path)
		path = "/bin:/usr/bin"; /* glibc's execvp without PATH (confstr's _CS_PATH) */
	long first = -ENOENT;
	for (;;) { /* every entry, the empty ones too ("", "a:", "a::b"): each is "." */
		const char *colon = zv_strchr(path, ':');
		size_t dl = colon ? (size_t)(colon - path) : zv_strlen(path);
		if (dl + zv_strlen(prog) + 2 < ZV_PATH_MAX) {
			/* An empty entry means the current directory. */
			memcpy(buf, path, dl);
			zv_snprintf(buf + dl, ZV_PATH_MAX - dl, dl ? "/%s" : "%s", prog);
			long e = zv_exec_resolve_keep(buf, 0, r, 0);
			if (e == 0) {
				*err = 0;
				return buf;
			}
			if (e != -ENOENT && e != -ENOTDIR && first == -ENOENT)
				first = e; /* as execvp: remember EACCES and the like */
		}
		if (!colon)
			break;
		path = colon + 1;
	}
	*err = first;
	return prog;
}

/* The image's first thread's block: the first thing the window holds
 * (lib/kmem.c), so that its guard page is the hole below it. */
static struct zv_thread *first_thread;

static void alloc_first_thread(void)
{
	if (!(first_thread = zv_thread_alloc()))
		zv_die(126, "out of memory");
}

static uint64_t auxv_get(const uint64_t *auxv, uint64_t key)
{
	for (; auxv[0] != AT_NULL; auxv += 2)
		if (auxv[0] == key)
			return auxv[1];
	return 0;
}

static void *alloc(size_t n)
{
	void *p = zv_kmap(n, 4096, -1);
	if (zv_is_err((long)p))
		zv_die(126, "out of memory");
	return p;
}

/* The host's auxv as it gave it to this image (after --vdso=none took its
 * vDSO out), kept for the images an exec makes in this process: the
 * guest's stack replaces the host's. */
static void keep_host_auxv(const uint64_t *auxv)
{
	int k = 0;
	for (const uint64_t *a = auxv; a[0] != AT_NULL && k < ZV_HOST_AUXV - 1; a += 2, k++) {
		zv_proc.host_auxv[2 * k] = a[0];
		zv_proc.host_auxv[2 * k + 1] = a[1];
		if (a[0] == AT_PLATFORM && a[1]) {
			zv_strlcpy(zv_proc.host_platform, (const char *)a[1], sizeof zv_proc.host_platform);
			zv_proc.host_auxv[2 * k + 1] = (uint64_t)zv_proc.host_platform;
		}
	}
	zv_proc.host_auxv[2 * k] = AT_NULL;
	zv_proc.host_auxv[2 * k + 1] = 0;
}

struct start {
	const char *path, *execfn;
	char **argv, **envp;
	const uint64_t *auxv;
	struct zv_resolved *r;
	const struct zv_exec_carry *x;
	char shown[ZV_PATH_MAX]; /* the path as trace reads it: guest memory, as argv and envp are */
};

/* The new image's first instruction, reached through a frame, when a layer
 * looks at it first (a tracer's exec stop): every register zero but rip
 * and rsp, as after the host's execve, the guest's mask, no vector state
 * (rt_sigreturn of a frame without one starts the FPU afresh). */
__attribute__((noreturn)) static void exec_entered(uint64_t sp, uint64_t entry)
{
	struct zv_thread *t = zv_current();
	uint64_t mask;
	zv_host_set_mask(~0UL, &mask);
	struct { uint64_t pretcode; struct zv_ucontext uc; } f = { 0 };
	f.uc.uc_flags = 0x6; /* UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS */
	f.uc.uc_stack = zv_kernel_stack(t);
	f.uc.mc.rip = entry;
	f.uc.mc.rsp = sp;
	f.uc.mc.eflags = 0x202;
	f.uc.mc.cs = 0x33;
	f.uc.mc.ss = 0x2b;
	f.uc.uc_sigmask = mask;
	zv_event_exec_start(t, &f.uc);
	if (t->fast.sig_pending)
		zv_signals_on_exit(t, &f.uc);
	zv_enter_frame(&f.uc);
}

/* Loads path (already resolved to r) and starts it as the guest, on the
 * first thread's kernel stack, where the kernel finds its thread. */
__attribute__((noreturn)) static void start_here(void *arg)
{
	struct start *s = arg;
	const char *path = s->path, *execfn = s->execfn;
	char **argv = s->argv, **envp = s->envp;
	const uint64_t *auxv = s->auxv;
	struct zv_resolved *r = s->r;
	const struct zv_exec_carry *x = s->x;
	/* The final argv: a #! script's words replace argv[0]. */
	long argc = 0;
	while (argv[argc])
		argc++;
	char **gargv = zv_image_argv(r, argv, r->nprefix ? alloc((r->nprefix + argc + 1) * sizeof(char *)) : NULL);

	struct zv_thread *t = first_thread;
	long e = zv_platform_install();
	if (e < 0)
		zv_die(126, "cannot install the %s platform: %s", zv_plat->name,
		       zv_strerror((int)-e));
	e = zv_thread_arm_as(t, zv_proc.hpid, zv_proc.hpid); /* the image's first thread leads its process */
	t->tid = t->pid = zv_proc.pid; /* the guest's: a restored process's own (cr/pids.c's field J) */
	if (e < 0)
		zv_die(126, "cannot arm the %s platform: %s%s", zv_plat->name,
		       zv_strerror((int)-e),
		       zv_proc.platform != ZV_PLAT_SECCOMP ? " (Syscall User Dispatch needs Linux >= 5.11; try --platform=seccomp)" : "");
	zv_proc.nthreads = 1;
	zv_fdflags_exact(); /* the host's execve closed every close-on-exec fd */
	t->is_thread = 1;
	t->trace.traced = (zv_proc.trace.on || zv_proc.trace.summary) && zv_proc.trace.exec_traced;
	if (zv_proc.first_image && t->trace.traced) {
		/* strace shows the traced program's execve; an exec'd image's
		 * line was printed by the image before it */
		zv_snprintf(s->shown, sizeof s->shown, "%s", path);
		long ea[6] = { (long)s->shown, (long)argv, (long)envp };
		t->tid = t->htid = t->pid = zv_proc.pid;
		zv_trace_exec(t, __NR_execve, ea, 0);
		if (zv_proc.trace.summary)
			zv_count_time(__NR_execve, 0, 0);
	}
	/* SUD may go off once every executable byte is scanned (sudoff.c) */
	zv_sudoff_never = zv_proc.platform != ZV_PLAT_STUBS || zv_proc.rewrite == ZV_REWRITE_NONE;
	const char *host_execfn = (const char *)auxv_get(auxv, AT_EXECFN);
	uint64_t top = ((uint64_t)host_execfn + zv_strlen(host_execfn) + 1 + 8 + 4095) & ~4095UL;
	zv_layout_init(auxv, top);
	zv_vdso_setup(t, (uint64_t *)auxv);
	keep_host_auxv(auxv);
	zv_count_tsc_init();
	zv_layers_fold(); /* after --time, the vDSO and -c's TSC, which change how calls are routed */
	t->sigsys_blocked = x->sigsys_blocked;
	zv_signals_init(t->sighand, x->ignored_known ? &x->ignored : NULL);

	struct zv_image *img = alloc(sizeof *img);
	zv_sitecache_init(envp, zv_proc.first_image ? (zv_proc.err_fd >= 0 ? zv_proc.err_fd : 2) : -1);
	zv_setid_host_image = r->setid ? ZV_SETID_HOST_FILE : ZV_SETID_HOST_PLAIN;
	zv_image_load(t, path, r->elf, execfn, img);

	/* The guest's stack replaces ours at the top of the host's stack. */
	zv_proc.stack_top = top;
	size_t need = 65536;
	for (long i = 0; gargv[i]; i++)
		need += zv_strlen(gargv[i]) + 1 + 8;
	for (long i = 0; envp[i]; i++)
		need += zv_strlen(envp[i]) + 1 + 8;
	need = (need + 4095) & ~4095UL;
	void *buf = alloc(need);
	uint64_t sp = zv_build_stack(buf, need, top, gargv, envp, img, execfn, auxv);
	if (!sp)
		zv_die(126, "%s: %s", path, zv_strerror(E2BIG));

	/* The host reads auxv from where this image has it now: in buf. */
	zv_publish_mm_fields(zv_proc.host_sp, sp, buf, top - sp);
	uint64_t mask = x->guest_mask & ~zv_kernel_signals();
	t->kernel_blocked = zv_kernel_blocked(x->guest_mask);
	t->faults_blocked = (mask & ZV_FAULT_SIGNALS) != 0;
	zv_host_set_mask(mask, NULL);
	zv_enter_guest(sp, buf, top - sp, img->entry, (uint64_t)t - 64, zv_proc.exec_stop ? exec_entered : NULL);
}

/* The host's stack holds argv, envp and auxv (and s: trace reads the path
 * there, as guest memory, which zvisor's window is not). */
__attribute__((noreturn)) static void start_guest(const char *path, const char *execfn, char **argv, char **envp,
						 const uint64_t *auxv, struct zv_resolved *r,
						 const struct zv_exec_carry *x)
{
	struct start s = { path, execfn, argv, envp, auxv, r, x, "" };
	zv_call_on_stack(first_thread, start_here, &s);
}

/* Reports go to the stderr zvisor started with, kept as a hidden fd: the
 * guest may close its own (coreutils do at exit). */
static void keep_stderr(void)
{
	long e = zv_sys3(__NR_fcntl, 2, 0 /* F_DUPFD */, 3);
	zv_proc.err_fd = e >= 0 ? zv_hide_fd((int)e) : -1;
}

static void setup_count(void)
{
	int fd = zv_count_create();
	if (fd < 0)
		zv_die(126, "--count: cannot create the table: %s", zv_strerror(-fd));
	zv_proc.count_fd = zv_hide_fd(fd);
	keep_stderr();
}

__attribute__((noreturn)) static void cmd_run(int argc, char **argv, char **envp, const uint64_t *auxv,
					      int trace)
{
	int count = 0;
	alloc_first_thread();
	int i = zv_cmdline_options(argc, argv, trace, &count);
	if ((zv_proc.trace.on || zv_proc.trace.summary) && zv_trace_setup() < 0)
		zv_exit_group(2);
	if (zv_trace_npids) /* trace -p: a running process, no program of ours */
		zv_trace_attach_main();
	zv_fsv_start(envp); /* --root: PROGRAM and PATH are the guest's, in its view */
	if (zv_fsv_on())
		zv_sitecache_keep_dir(); /* zvisor's own, not the guest's HOME */
	int st = zv_fakeid_start(envp, fsv_opts.root); /* --fake-root, --ids: the database beside the root */
	if (st)
		zv_exit_group(st);
	char **gargv = argv + i;
	struct zv_resolved *r = alloc(sizeof *r);
	char *buf = alloc(ZV_PATH_MAX);
	long err;
	const char *path = find_program(gargv[0], envp, r, buf, &err);
	if (err < 0)
		zv_die(err == -ENOENT ? 127 : 126, "%s: %s", path,
		       err == -ENOEXEC && r->why[0] ? r->why : zv_strerror((int)-err));
	zv_proc.leader_pid = zv_proc.pid;
	if (zv_killexit_wanted && (err = zv_killexit_start()) < 0)
		zv_die(126, "--kill-on-exit: %s", zv_strerror((int)-err));
	zv_proc.trace.exec_traced = 1; /* the first thread is traced */
	zv_proc.first_image = 1;
	if (zv_proc.trace.summary && !count) {
		count = 1;
		zv_count_timed = 1;
	}
	if (count) {
		setup_count();
		/* As strace counts the traced program's execve; exit and
		 * exit_group never return, and neither counts them. */
		zv_count_record(__NR_execve, 0, 0);
	} else if (zv_proc.stats || zv_proc.trace.on) {
		keep_stderr();
	}
	struct zv_exec_carry x = { initial_mask, (initial_mask & ZV_SIGBIT(31)) != 0, 0, 0, 0, 0, ZV_EXEC_FILES_NONE, 0 };
	zv_load_elf_given(&r->files); /* the load neither opens nor reads them again */
	start_guest(path, path, gargv, envp, auxv, r, &x);
}

/* A guest's execve: zvisor __exec STATE PATH EXECFN ARGV0 ARGS...
 * (PATH is what to load, EXECFN what the guest named: they differ for
 * /proc/self/exe). */
__attribute__((noreturn)) static void cmd_exec(int argc, char **argv, char **envp, const uint64_t *auxv)
{
	if (argc < 4)
		zv_die(126, "bad internal exec");
	alloc_first_thread();
	struct zv_exec_carry x = { .files = ZV_EXEC_FILES_NONE };
	zv_exec_state_parse(argv[0], &x);
	if (!zv_proc.hpid) /* no h= */
		zv_proc.pid = zv_proc.hpid = (int)zv_getpid();
	if (zv_proc.count_fd >= 0 && zv_count_attach(zv_proc.count_fd) < 0)
		zv_proc.count_fd = -1;
	zv_count_timed = zv_proc.trace.summary != 0;
	if (zv_proc.seccomp_fd >= 0) {
		zv_seccomp_restore(zv_proc.seccomp_fd);
		zv_proc.seccomp_fd = -1;
	}
	const char *path = argv[1];
	struct zv_resolved *r = alloc(sizeof *r);
	if (x.resolved) { /* an ELF file, checked by the exec'ing image */
		r->nprefix = 0;
		r->why[0] = 0;
		r->setid = x.resolved == 2;
		zv_strlcpy(r->elf, path, sizeof r->elf);
		zv_load_elf_given(&x.files); /* opened by it (F): read, not opened or fstat'd again */
	} else {
		zv_exec_files_close(&x.files);
		long err = zv_exec_resolve(path, 0, r);
		if (err < 0)
			zv_die(126, "%s: %s", path, err == -ENOEXEC && r->why[0] ? r->why : zv_strerror((int)-err));
	}
	start_guest(path, argv[2], argv + 3, envp, auxv, r, &x);
}

/* _start: the host's execve enters here with rsp at argc. */
__asm__(".text\n"
	".globl _start\n"
	".hidden _start\n"
	".type _start,@function\n"
	"_start:\n"
	"	xor %ebp, %ebp\n"	/* outermost frame */
	"	mov %rsp, %rdi\n"	/* zv_main(initial stack pointer) */
	"	and $-16, %rsp\n"	/* ABI alignment for the C call */
	"	call zv_main\n"
	"	hlt\n");		/* zv_main never returns */

__attribute__((noreturn, used)) void zv_main(uint64_t *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	char **e = envp;
	while (*e)
		e++;
	const uint64_t *auxv = (const uint64_t *)(e + 1);

	/* no fold here: start_guest and restore fold before any guest call */
	zv_proc.host_sp = (uint64_t)sp;
	zv_inexec_install();
	zv_proc.text_start = (uint64_t)zv_text_start; /* code only: the headers share its mapping */
	zv_proc.text_end = (uint64_t)zv_bounce_page; /* text's last page, after all kernel code (Makefile checks) */

	/* Nothing may interrupt set-up; the guest's mask is restored at entry.
	 * An exec'ing image blocked every signal before its execve (sys/exec.c),
	 * and the host keeps the mask across it; it says the pid too. */
	uint64_t all = ~0UL;
	if (argc >= 2 && zv_strcmp(argv[1], "__exec") == 0)
		cmd_exec(argc - 2, argv + 2, envp, auxv);
	zv_proc.pid = zv_proc.hpid = (int)zv_getpid();
	zv_sys4(__NR_rt_sigprocmask, ZV_SIG_SETMASK, &all, &initial_mask, 8);
	if (argc >= 2 && zv_strcmp(argv[1], "restore") == 0)
		zv_cr_restore_main(argc - 2, argv + 2, auxv); /* signals stay blocked until each thread resumes */
	zv_sys4(__NR_rt_sigprocmask, ZV_SIG_SETMASK, &initial_mask, NULL, 8);
	int trace = zv_cmdline_command(&argc, &argv); /* run, trace or proot: the others are answered there */
	zv_sys4(__NR_rt_sigprocmask, ZV_SIG_SETMASK, &all, NULL, 8);
	cmd_run(argc - 2, argv + 2, envp, auxv, trace);
}
