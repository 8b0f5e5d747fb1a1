/* Compressed sections (`zvisor checkpoint --compress`): the zstd program
 * compresses pages.bin after the checkpoint, when that pays off, and
 * decompresses it into a pipe at restore. The kernel has no compressor of
 * its own; the host's zstd is run as a child that sends no SIGCHLD (the
 * restored guest must not see one). */
#include "zvisor.h"
#include "cr/zstd.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

static const char *const places[] = { "/usr/bin/zstd", "/usr/local/bin/zstd", "/bin/zstd" };

/* The child's side: argv on fds in, out (or -1 for the parent's). */
static struct {
	char *argv[12];
	int in, out;
	const char *path;
} job;

static void child(void)
{
	if (job.in >= 0)
		zv_sys2(__NR_dup2, job.in, 0);
	if (job.out >= 0)
		zv_sys2(__NR_dup2, job.out, 1);
	long null = zv_openat(-100, "/dev/null", O_WRONLY, 0); /* zvisor says what failed, in one line */
	if (null >= 0)
		zv_sys2(__NR_dup2, null, 2);
	uint64_t none = 0;
	zv_sys4(__NR_rt_sigprocmask, ZV_SIG_SETMASK, &none, NULL, 8);
	char *envp[] = { NULL };
	zv_sys3(__NR_execve, job.path, job.argv, envp);
	zv_exit_group(127);
}

const char *zv_cr_zstd_path(void)
{
	for (unsigned i = 0; i < sizeof places / sizeof places[0]; i++)
		if (zv_sys3(__NR_faccessat, -100, places[i], 1 /* X_OK */) == 0)
			return places[i];
	return NULL;
}

/* Starts zstd with args (argv[0] excluded, at most 10); returns its pid. */
static long spawn(const char *const *args, int in, int out)
{
	job.path = zv_cr_zstd_path();
	if (!job.path)
		return -ENOENT;
	job.argv[0] = (char *)"zstd";
	int i = 0;
	for (; args[i] && i < 10; i++)
		job.argv[i + 1] = (char *)args[i];
	job.argv[i + 1] = NULL;
	job.in = in;
	job.out = out;
	/* exit signal 0: no SIGCHLD; the child runs on a copy of this stack */
	return zv_clone_raw(0, NULL, NULL, NULL, 0, child);
}

long zv_cr_zstd_wait(long pid)
{
	int status = 0;
	long r;
	do
		r = zv_sys4(__NR_wait4, pid, &status, 0x40000000 /* __WALL */, NULL);
	while (r == -EINTR);
	return r < 0 ? r : status;
}

long zv_cr_zstd_compress(const char *src, const char *dst)
{
	const char *args[] = { "-q", "-f", "-1", "-T0", src, "-o", NULL };
	const char *full[8];
	int k = 0;
	for (; args[k]; k++)
		full[k] = args[k];
	full[k++] = dst;
	full[k] = NULL;
	long pid = spawn(full, -1, -1);
	if (pid < 0)
		return pid;
	long st = zv_cr_zstd_wait(pid);
	return st == 0 ? 0 : -EIO;
}

long zv_cr_zstd_reader(const char *path, long *pid)
{
	int p[2];
	if (zv_sys2(__NR_pipe2, p, O_CLOEXEC) < 0)
		return -EMFILE;
	const char *args[] = { "-q", "-d", "-c", path, NULL };
	*pid = spawn(args, -1, p[1]);
	zv_close(p[1]);
	if (*pid < 0) {
		zv_close(p[0]);
		return *pid;
	}
	return p[0];
}
