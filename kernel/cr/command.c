/* The commands `zvisor checkpoint [--leave-running] PID DIR` and `zvisor
 * restore DIR`: their options; the first hands over to cr/coord.c, which
 * asks the process and its descendants over the peer channel, the second
 * reads the image and hands over to cr/restore.c (a tree: cr/treerestore.c). */
#include "zvisor.h"
#include "cr/cr.h"
#include "peer/peer.h"
#include "cr/restore.h"
#include "cr/treerestore.h"
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

/* --inherit-fd N (or =N): an fd number above 2, at most ZV_CR_MAX_INHERIT of them. */
static void inherit_arg(const char *cmd, const char *a, char **argv, int argc, int *i, int *fds, int *n)
{
	const char *v = zv_strchr(a, '=') ? zv_strchr(a, '=') + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	unsigned long fd;
	if (!v)
		usage(cmd, "%s", "--inherit-fd needs an fd number");
	if (zv_parse_ulong(v, &fd) < 0 || fd < 3 || fd > 0x3fffffff)
		usage(cmd, "--inherit-fd: '%s' is not an fd number above 2 (0-2 follow this process's always)", v);
	if (*n == ZV_CR_MAX_INHERIT)
		usage(cmd, "%s", "too many --inherit-fd");
	fds[(*n)++] = (int)fd;
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
	uint64_t data = a.held < a.size ? a.held : a.size; /* a placed mapping's holes cost nothing */
	if (zv_cr_zstd_compress(src, dst) < 0 || zv_cr_stat_path(dst, &b) < 0 ||
	    (how == ZV_CR_Z_AUTO && b.size * 10 > data * 9)) {
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
		} else if (!zv_strcmp(a, "--tcp-close")) {
			req->tcp_close = 1;
		} else if (!zv_strcmp(a, "--inherit-fd") || zv_startswith(a, "--inherit-fd=")) {
			inherit_arg("checkpoint", a, argv, argc, &i, req->inherit, &req->ninherit);
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
	if (zv_cr_dir_taken(req->dir))
		die1("checkpoint", "%s already exists%s", req->dir, " and is not an empty directory");
	int zv = zv_peer_hosted((int)pid);
	if (zv == -ENOENT || zv == -ESRCH)
		die1("checkpoint", "no process %s%s", pos[0], "");
	if (zv < 0)
		die1("checkpoint", "cannot inspect process %s: %s", pos[0], zv_strerror(-zv));
	if (!zv)
		die1("checkpoint", "process %s does not run under zvisor%s", pos[0], "");
	zv_cr_coordinate(req, (int)pid, compress);
	zv_exit_group(0);
}

__attribute__((noreturn)) void zv_cr_restore_main(int argc, char **argv, const uint64_t *auxv)
{
	(void)auxv;
	const char *dir = NULL;
	struct zv_cr_ropts o = { 0 };
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!zv_strcmp(a, "--help") || !zv_strcmp(a, "-h")) {
			zv_write(1, zv_restore_help, zv_strlen(zv_restore_help));
			zv_exit_group(0);
		} else if (!zv_strcmp(a, "--other-host")) {
			o.other_host = 1;
		} else if (!zv_strcmp(a, "--eager")) {
			o.eager = 1;
		} else if (!zv_strcmp(a, "--inherit-fd") || zv_startswith(a, "--inherit-fd=")) {
			inherit_arg("restore", a, argv, argc, &i, o.inherit, &o.ninherit);
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
	if (zv_sys4(__NR_faccessat, dfd, "tree.bin", 0, 0) == 0)
		zv_cr_restore_tree(dir, (int)dfd, &o); /* a tree: cr/treerestore.c */
	zv_cr_restore_dir(dir, (int)dfd, &o, NULL);
}

/* The image in dir (opened: dfd) into this process. */
__attribute__((noreturn)) void zv_cr_restore_dir(const char *dir, int dfd, const struct zv_cr_ropts *o,
						  const struct zv_cr_treectx *tree)
{
	/* First read the index and the layout into memory anywhere, to learn
	 * where the saved address space leaves room. */
	uint64_t first_len = sizeof(struct zv_cr_in) + (8UL << 20);
	struct zv_cr_in *in = zv_mmap(NULL, first_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (zv_is_err((long)in))
		zv_cr_restore_die(tree, "out of memory");
	in->dirfd = dfd;
	/* the fds section replaces fd 2 by the program's (a file, /dev/null, a
	 * pipe of the tree): a failure after it is still said where the
	 * restore's own stderr goes */
	in->errfd = (int)zv_sys3(__NR_fcntl, 2, F_DUPFD_CLOEXEC, 3);
	zv_cr_errfd = in->errfd;
	in->arena = (char *)in + ((sizeof *in + 4095) & ~4095UL);
	in->arena_len = first_len - ((sizeof *in + 4095) & ~4095UL);
	struct zv_cr_restore *r = zv_cr_alloc(in, sizeof *r);
	r->in = in;
	r->other_host = o->other_host;
	r->eager = o->eager;
	memcpy(r->inherit, o->inherit, sizeof r->inherit);
	r->ninherit = o->ninherit;
	zv_cr_image_layout(&r->layout);
	char why[512];
	if (zv_cr_read_index(in, r->layout.build) < 0) {
		zv_snprintf(why, sizeof why, "%s: %s", dir, in->why);
		zv_cr_restore_die(tree, why);
	}
	uint64_t mlen, need = 0;
	const struct zv_cr_meta *meta = zv_cr_get(in, "meta", &mlen);
	if (!meta || meta == (void *)-1 || (mlen != sizeof *meta && mlen != ZV_CR_META1_SIZE)) {
		zv_snprintf(why, sizeof why, "%s: %s", dir, meta == (void *)-1 ? in->why : "meta.bin: missing or damaged");
		zv_cr_restore_die(tree, why);
	}
	memcpy(&r->meta, meta, mlen);
	for (unsigned i = 0; i < in->nsec; i++)
		if (zv_strcmp(in->sec[i].name, "pages"))
			need += (in->sec[i].size + 8191) & ~4095UL;
	const struct zv_cr_section *mmsec = zv_cr_section(in, "mm");
	if (!mmsec) {
		zv_snprintf(why, sizeof why, "%s: no mm section (damaged image)", dir);
		zv_cr_restore_die(tree, why);
	}
	/* version 1's records made over, the pages' reading (cr/restore.c),
	 * what a tree's restorer made for this process */
	need += 2 * (mmsec->size + 4096) + (2UL << 20) + (tree ? zv_cr_treectx_size(tree) : 0);
	const char *mm = zv_cr_get(in, "mm", &mlen);
	if (mm == (void *)-1) {
		zv_snprintf(why, sizeof why, "%s: %s", dir, in->why);
		zv_cr_restore_die(tree, why);
	}
	/* a process alone makes its SysV segments (a tree's restorer made them) */
	static struct zv_cr_treectx alone;
	if (!tree && zv_cr_sysv_alone(mm, mlen, &alone, why, sizeof why) < 0)
		zv_cr_restore_die(NULL, why);
	if (!tree && alone.nshanon) {
		tree = &alone;
		need += zv_cr_treectx_size(tree);
	}
	uint64_t hole_len = ((sizeof *in + 4095) & ~4095UL) + need + (4UL << 20) + HOLE_STACK_LEN;
	hole_len = (hole_len + 0xfffff) & ~0xfffffUL;
	uint64_t hole = zv_cr_place_hole(in, mm, mlen, hole_len);
	if (!hole) {
		zv_snprintf(why, sizeof why, "%s: no room for the restore's scratch memory", dir);
		zv_cr_restore_die(tree, why);
	}
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
	if (tree)
		zv_cr_treectx_copy(hin, tree, &hr->tree); /* into the hole: what it points to goes with clear_own */
	zv_munmap(in, first_len);
	zv_call_on_stack((char *)hole + hole_len - (2UL << 20), zv_cr_restore_stage2, hr);
}
