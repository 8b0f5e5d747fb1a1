/* The commands `zvisor checkpoint [--leave-running] PID DIR` and `zvisor
 * restore DIR`. The first asks a running zvisor process over the channel
 * (cr/channel.h) and waits for its answer; the second reads the image and
 * hands over to cr/restore.c. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/channel.h"
#include "cr/restore.h"
#include "cr/stream.h"
#include "cr/memory.h"
#include "cr/zstd.h"
#include "cr/sample.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>
#include <linux/mman.h>

#define SI_QUEUE (-1)

__attribute__((noreturn)) static void usage(const char *cmd, const char *fmt, const char *arg)
{
	zv_dprintf(2, "zvisor: %s: ", cmd);
	zv_dprintf(2, fmt, arg);
	zv_dprintf(2, "\nTry 'zvisor %s --help' for more information.\n", cmd);
	zv_exit_group(2);
}

__attribute__((noreturn)) static void die1(const char *cmd, const char *fmt, const char *a, const char *b)
{
	zv_dprintf(2, "zvisor: %s: ", cmd);
	zv_dprintf(2, fmt, a, b);
	zv_dprintf(2, "\n");
	zv_exit_group(1);
}

/* The absolute form of path (cwd + path). */
void zv_cr_absolute(const char *path, char *out, size_t n)
{
	if (path[0] == '/') {
		zv_strlcpy(out, path, n);
		return;
	}
	long r = zv_sys2(__NR_getcwd, out, n);
	if (r < 0)
		die1("checkpoint", "cannot read the current directory%s%s", "", "");
	size_t k = zv_strlen(out);
	zv_snprintf(out + k, n - k, "%s%s", k > 1 ? "/" : "", path);
}

struct ts { long s, ns; };

/* Whether process pid runs zvisor: its image is mapped at zvisor's fixed
 * address. Asked before anything is sent, since the request is a SIGSYS,
 * which kills a process that is not zvisor's. */
static int runs_zvisor(const char *pid)
{
	char path[64], buf[4096 + 32], want[32];
	zv_snprintf(path, sizeof path, "/proc/%s/maps", pid);
	long fd = zv_openat(-100, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	int wn = zv_snprintf(want, sizeof want, "\n%lx-", (unsigned long)ZV_KWIN_START);
	/* line by line through a window that keeps the last bytes of the read before */
	size_t keep = 1;
	buf[0] = '\n';
	long n, found = 0, any = 0;
	while (!found && (n = zv_read((int)fd, buf + keep, sizeof buf - 1 - keep)) > 0) {
		any = 1;
		size_t len = keep + (size_t)n;
		for (size_t i = 0; i + (size_t)wn <= len && !found; i++)
			found = !memcmp(buf + i, want, (size_t)wn);
		keep = len < (size_t)wn ? len : (size_t)wn;
		memmove(buf, buf + len - keep, keep);
	}
	zv_close((int)fd);
	return any ? found != 0 : -ESRCH;
}

/* Waits up to ms for fd to be readable; 1 if it is. */
static int readable(int fd, int ms)
{
	struct { int fd; short events, revents; } p = { fd, 1 /* POLLIN */, 0 };
	struct ts t = { ms / 1000, (ms % 1000) * 1000000L };
	return zv_sys5(__NR_ppoll, &p, 1, &t, NULL, 8) > 0;
}

/* Below this, running zstd (a few ms) costs more than the bytes it saves. */
#define AUTO_MIN (1UL << 20)

/* pages.bin becomes pages.bin.zst (how: ZV_CR_Z_ALWAYS, or ZV_CR_Z_AUTO from 1 MiB on
 * when a sample says a quarter would be saved (cr/sample.c) and the whole
 * is then at least a tenth smaller); the
 * index, rewritten whole and renamed over the old one, says so. The image
 * is complete at every step. */
void zv_cr_compress_pages(const char *dir, int how)
{
	char src[4200], dst[4200];
	zv_snprintf(src, sizeof src, "%s/pages.bin", dir);
	zv_snprintf(dst, sizeof dst, "%s/pages.bin.zst", dir);
	struct zv_cr_stat a, b;
	if (how == ZV_CR_Z_NEVER || zv_cr_stat_path(src, &a) < 0 || !a.size)
		return;
	if (how == ZV_CR_Z_AUTO && (a.size < AUTO_MIN || zv_cr_sample_saving(src, a.size) < 25 || !zv_cr_zstd_path()))
		return;
	if (zv_cr_zstd_compress(src, dst) < 0 || zv_cr_stat_path(dst, &b) < 0 ||
	    (how == ZV_CR_Z_AUTO && b.size * 10 > a.size * 9)) {
		zv_sys3(__NR_unlinkat, -100, dst, 0);
		return;
	}
	/* One mapping for the index's reading and writing, and its text (the
	 * arena): the guest's process runs this too (--checkpoint-on) and
	 * keeps running, so nothing may stay behind. */
	uint64_t arena = (256 + (uint64_t)ZV_CR_MAX_SECTIONS * 128 + 4095) & ~4095UL; /* as read_index asks */
	uint64_t len = (sizeof(struct zv_cr_in) + sizeof(struct zv_cr_out) + 4095) & ~4095UL;
	struct zv_cr_in *in = zv_kmap(len + arena, 4096, -1);
	if (zv_is_err((long)in))
		return;
	struct zv_cr_out *o = (struct zv_cr_out *)(in + 1);
	in->arena = (char *)in + len;
	in->arena_len = arena;
	struct zv_cr_layout l;
	zv_cr_image_layout(&l);
	in->dirfd = o->dirfd = (int)zv_openat(-100, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	int ok = in->dirfd >= 0 && zv_cr_read_index(in, l.build) >= 0;
	if (ok) {
		o->nsec = in->nsec;
		for (unsigned i = 0; i < in->nsec; i++) {
			o->sec[i] = in->sec[i];
			o->sec[i].zstd |= !zv_strcmp(in->sec[i].name, "pages");
		}
		zv_sys3(__NR_unlinkat, o->dirfd, "index.json.tmp", 0);
		ok = zv_cr_write_index_as(o, l.build, "index.json.tmp") >= 0 &&
		     zv_sys4(__NR_renameat, o->dirfd, "index.json.tmp", o->dirfd, "index.json") >= 0;
	}
	zv_sys3(__NR_unlinkat, -100, ok ? src : dst, 0);
	if (in->dirfd >= 0)
		zv_close(in->dirfd);
	zv_kunmap(in, len + arena);
}

__attribute__((noreturn)) void zv_cr_checkpoint_main(int argc, char **argv)
{
	int compress = ZV_CR_Z_AUTO;
	struct zv_cr_request *req = zv_kmap(sizeof *req, 4096, -1);
	if (zv_is_err((long)req))
		die1("checkpoint", "out of memory%s%s", "", "");
	const char *pos[2];
	int npos = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!zv_strcmp(a, "--help") || !zv_strcmp(a, "-h")) {
			zv_write(1, zv_checkpoint_help, zv_strlen(zv_checkpoint_help));
			zv_exit_group(0);
		} else if (!zv_strcmp(a, "--leave-running") || !zv_strcmp(a, "-R")) {
			req->leave_running = 1;
		} else if (!zv_strcmp(a, "--compress") || !zv_strcmp(a, "-z")) {
			if (!zv_cr_zstd_path())
				die1("checkpoint", "--compress needs the zstd program (apt-get install zstd)%s%s", "", "");
			compress = ZV_CR_Z_ALWAYS;
		} else if (!zv_strcmp(a, "--compress=auto")) {
			compress = ZV_CR_Z_AUTO;
		} else if (!zv_strcmp(a, "--no-compress")) {
			compress = ZV_CR_Z_NEVER;
		} else if (a[0] == '-' && a[1]) {
			usage("checkpoint", "unknown option '%s'", a);
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			usage("checkpoint", "too many arguments ('%s')", a);
		}
	}
	if (npos < 2)
		usage("checkpoint", "%s", npos ? "no image directory given (zvisor checkpoint PID DIR)" : "no PID given (zvisor checkpoint PID DIR)");
	unsigned long pid;
	if (zv_parse_ulong(pos[0], &pid) < 0 || pid == 0 || pid > 0x3fffffff)
		usage("checkpoint", "'%s' is not a process id", pos[0]);
	zv_cr_absolute(pos[1], req->dir, sizeof req->dir);
	if (zv_sys3(__NR_faccessat, -100, req->dir, 0) == 0)
		die1("checkpoint", "%s already exists%s", req->dir, "");
	int me = (int)zv_getpid();
	req->reply_pid = me;
	int zv = runs_zvisor(pos[0]);
	if (zv == -ENOENT || zv == -ESRCH)
		die1("checkpoint", "no process %s%s", pos[0], "");
	if (zv < 0)
		die1("checkpoint", "cannot inspect process %s: %s", pos[0], zv_strerror(-zv));
	if (!zv)
		die1("checkpoint", "process %s does not run under zvisor%s", pos[0], "");

	long ls = zv_cr_channel_socket(5);
	struct zv_cr_sockaddr addr;
	int alen = zv_cr_channel_addr(&addr, me);
	if (ls < 0 || zv_sys3(__NR_bind, ls, &addr, alen) < 0 || zv_sys2(__NR_listen, ls, 4) < 0)
		die1("checkpoint", "cannot open the channel%s%s", "", "");
	long pidfd = zv_sys2(__NR_pidfd_open, pid, 0);
	zv_siginfo si = { .si_signo = 31, .si_code = SI_QUEUE };
	si.kill.pid = me;
	si.kill.uid = (uint32_t)zv_sys0(__NR_getuid);
	uint64_t v = (ZV_CR_TAG_REQUEST << 32) | (uint32_t)me;
	memcpy(si.bytes + 8, &v, 8);
	long r = zv_sys3(__NR_rt_sigqueueinfo, pid, 31, &si);
	if (r == -ESRCH)
		die1("checkpoint", "no process %s%s", pos[0], "");
	if (r < 0)
		die1("checkpoint", "cannot signal process %s: %s", pos[0], zv_strerror((int)-r));
	/* The process connects to fetch the request, then again to answer. */
	if (!readable((int)ls, 5000))
		die1("checkpoint", pidfd >= 0 && readable((int)pidfd, 0) ? "process %s ended%s" : "process %s did not answer%s",
		     pos[0], "");
	long c = zv_sys3(__NR_accept4, ls, NULL, NULL);
	if (c < 0 || zv_sys4(__NR_sendto, c, req, sizeof *req, 0) != (long)sizeof *req)
		die1("checkpoint", "the channel to process %s broke%s", pos[0], "");
	zv_close((int)c);
	/* Writing the image takes as long as the memory is big: wait while
	 * the process lives. */
	for (;;) {
		if (readable((int)ls, 200))
			break;
		if (pidfd >= 0 && readable((int)pidfd, 0))
			die1("checkpoint", "process %s ended before the checkpoint was complete%s", pos[0], "");
	}
	c = zv_sys3(__NR_accept4, ls, NULL, NULL);
	char msg[320];
	long n = c >= 0 ? zv_sys6(__NR_recvfrom, c, (long)msg, sizeof msg - 1, 0, 0, 0) : -1;
	if (n <= 0)
		die1("checkpoint", "no answer from process %s%s", pos[0], "");
	msg[n] = 0;
	if (zv_strcmp(msg, "ok"))
		die1("checkpoint", "%s%s", zv_startswith(msg, "error: ") ? msg + 7 : msg, "");
	if (!req->leave_running && pidfd >= 0)
		readable((int)pidfd, 10000); /* it ends: return once it has */
	zv_cr_compress_pages(req->dir, compress);
	zv_exit_group(0);
}

__attribute__((noreturn)) void zv_cr_restore_main(int argc, char **argv, const uint64_t *auxv)
{
	(void)auxv;
	const char *dir = NULL;
	int other_host = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!zv_strcmp(a, "--help") || !zv_strcmp(a, "-h")) {
			zv_write(1, zv_restore_help, zv_strlen(zv_restore_help));
			zv_exit_group(0);
		} else if (!zv_strcmp(a, "--other-host")) {
			other_host = 1;
		} else if (a[0] == '-' && a[1]) {
			usage("restore", "unknown option '%s'", a);
		} else if (!dir) {
			dir = a;
		} else {
			usage("restore", "too many arguments ('%s')", a);
		}
	}
	if (!dir)
		usage("restore", "%s", "no image directory given (zvisor restore DIR)");
	long dfd = zv_openat(-100, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		die1("restore", "%s: %s", dir, zv_strerror((int)-dfd));

	/* First read the index and the layout into memory anywhere, to learn
	 * where the saved address space leaves room. */
	uint64_t first_len = sizeof(struct zv_cr_in) + (8UL << 20);
	struct zv_cr_in *in = zv_mmap(NULL, first_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (zv_is_err((long)in))
		die1("restore", "out of memory%s%s", "", "");
	in->dirfd = (int)dfd;
	in->arena = (char *)in + ((sizeof *in + 4095) & ~4095UL);
	in->arena_len = first_len - ((sizeof *in + 4095) & ~4095UL);
	struct zv_cr_restore *r = zv_cr_alloc(in, sizeof *r);
	r->in = in;
	r->other_host = other_host;
	zv_cr_image_layout(&r->layout);
	if (zv_cr_read_index(in, r->layout.build) < 0)
		die1("restore", "%s: %s", dir, in->why);
	uint64_t mlen, need = 0;
	const struct zv_cr_meta *meta = zv_cr_get(in, "meta", &mlen);
	if (!meta || meta == (void *)-1 || mlen != sizeof *meta)
		die1("restore", "%s: %s", dir, meta == (void *)-1 ? in->why : "meta.bin: missing or damaged");
	r->meta = *meta;
	for (unsigned i = 0; i < in->nsec; i++)
		if (zv_strcmp(in->sec[i].name, "pages"))
			need += (in->sec[i].size + 8191) & ~4095UL;
	const struct zv_cr_section *mmsec = zv_cr_section(in, "mm");
	if (!mmsec)
		die1("restore", "%s: %s", dir, "no mm section (damaged image)");
	const char *mm = zv_cr_get(in, "mm", &mlen);
	if (mm == (void *)-1)
		die1("restore", "%s: %s", dir, in->why);
	uint64_t hole_len = ((sizeof *in + 4095) & ~4095UL) + need + (4UL << 20) + HOLE_STACK_LEN;
	hole_len = (hole_len + 0xfffff) & ~0xfffffUL;
	uint64_t hole = zv_cr_place_hole(in, mm, mlen, hole_len);
	if (!hole)
		die1("restore", "%s: no room for the restore's scratch memory%s", dir, "");
	/* Move to the hole: the state, then the stack. */
	struct zv_cr_in *hin = (struct zv_cr_in *)hole;
	memcpy(hin, in, sizeof *in);
	hin->arena = (char *)hole + ((sizeof *in + 4095) & ~4095UL);
	hin->arena_len = hole_len - ((sizeof *in + 4095) & ~4095UL) - HOLE_STACK_LEN - (2UL << 20);
	hin->arena_used = 0;
	struct zv_cr_restore *hr = zv_cr_alloc(hin, sizeof *hr);
	*hr = *r;
	hr->in = hin;
	hr->hole = hole;
	hr->hole_len = hole_len;
	hr->mm = NULL;
	zv_munmap(in, first_len);
	zv_call_on_stack((char *)hole + hole_len - (2UL << 20), zv_cr_restore_stage2, hr);
}
