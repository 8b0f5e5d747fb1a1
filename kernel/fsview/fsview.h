/* fsview: a root filesystem of the guest's own (zvisor run --root DIR).
 * Every path the guest names is resolved in its view (the root and the
 * binds laid over it) by the kernel, and the call is passed on to the
 * host in its *at form on what the view found: a host directory fd and a
 * last component that is no symlink (AT_SYMLINK_NOFOLLOW), so that the host
 * never follows a symlink or a `..` of the guest's by itself.
 *
 *   options.c   --root, --bind, --no-default-binds, --bind-preset, --cwd
 *   setup.c     the view at start: the root, the binds, the working directory
 *   glue.c      the directories the view makes up to hold binds
 *   view.c      the view's state: binds by guest path, host paths back to guest ones
 *   alias.c     host directories at more than one view path: the one each was reached by
 *   walk.c      the resolver: a guest path to (host dir fd, last component)
 *   walkutil.c  its fds, the guest's string, single names, a last symlink
 *   dcache.c    the directories and symlinks resolved before
 *   shared.c    the page the view's processes share: the cache's epoch, each one's program
 *   procfs.c    /proc's magic links (root, exe) and the links' targets in guest terms
 *   mounts.c    /proc/self/mountinfo and mounts: / and the binds
 *   layer.c     the layer: which calls it sees, the kinds of sysent's column, the hooks
 *   pathcall.c  a PATH row: its paths resolved, then made in its *at form (atcalls.c)
 *   oneshot.c   an open the host can resolve alone, in one call
 *   cwd.c       chdir, fchdir, getcwd, chroot
 *   sock.c      AF_UNIX addresses in and out
 *   state.c     the view across exec (the exec state's V field)
 * The core reaches it only through the layer list and the hooks of
 * sys/viewhook.h. */
#ifndef ZV_FSVIEW_H
#define ZV_FSVIEW_H
#include <stddef.h>
#include <stdint.h>
#include "sys/viewhook.h"
#include "fsview/dcache.h"

struct zv_thread;
struct zv_call;

#define FSV_PATH_MAX 4096
#define FSV_MAX_BINDS 64
#define FSV_MAXSYMLINKS 40
#define FSV_S_IFMT 0170000
#define FSV_S_IFLNK 0120000
#define FSV_S_IFDIR 0040000 /* the host's: ELOOP after 40 symlinks in one lookup */

enum fsv_bind_kind { FSV_BIND_DIR = 1, FSV_BIND_FILE, FSV_BIND_LINK };

/* A host file or directory laid over a guest path. */
struct fsv_bind {
	uint16_t guest;      /* offsets into fsv.pool: the guest path (canonical, no trailing /) */
	uint16_t host;       /* the host path (canonical) */
	uint16_t base;       /* offset of the guest path's last component */
	uint8_t kind;        /* enum fsv_bind_kind */
	uint8_t procfs;      /* the host's /proc itself: its magic links are the view's */
	int fd;              /* O_PATH of the source (a directory), or of its parent (a file or symlink) */
	uint16_t name;       /* a file's or symlink's name in that parent */
	uint64_t dev, ino;   /* the guest directory that holds the mountpoint (a name under it
			      * is looked at twice), when it exists in the root */
};

/* The process's view. Set at start (setup.c) or by an exec's state
 * (state.c); a fork child has a copy. */
struct fsv_state {
	int on;
	int rootfd;            /* O_PATH: the root directory, hidden */
	int gluefd;            /* O_PATH: the tree of the directories the view makes up (glue.c), or -1 */
	uint16_t glue_host;    /* its host path (in the pool) */
	size_t glue_host_len;
	/* chroot inside the view: the process's root, as a view path and a
	 * host directory (vrootfd is rootfd until a chroot) */
	int vrootfd;
	char vroot[FSV_PATH_MAX];
	size_t vroot_len;      /* 1 for "/" */
	char root_host[FSV_PATH_MAX]; /* the root's canonical host path */
	size_t root_host_len;
	uint64_t root_dev, root_ino;
	int aliased;           /* a host directory has more than one view path (alias.c) */
	int nbinds;
	struct fsv_bind binds[FSV_MAX_BINDS];
	char basenames[512];   /* the binds' last components, each followed by '/' */
	char gluenames[512];   /* the other components of their guest paths */
	uint64_t basefirst[4], gluefirst[4]; /* their names' first bytes, a bit each */
	size_t pool_len;
	char pool[16384];
};

extern struct fsv_state fsv;

static inline const char *fsv_str(uint16_t off) { return fsv.pool + off; }

/* A CLONE_VM child that is not a thread (vfork): this memory is its
 * parent's, its fd table and working directory its own. (Before an
 * image's first thread exists, set-up is the process's only flow.) */
int fsv_vm_child(void);
extern int fsv_in_setup;
/* One made with CLONE_VFORK: its parent waits, so what the memory holds
 * stays as it was (it may read the cache, not change it). */
int fsv_vfork_child(void);

/* setup.c: the canonical host path of an fd; its length or -errno. */
long fsv_fd_host(int fd, char *out, size_t n);
/* glue.c: the directories the view makes up, in a tree under zvisor's
 * cache directory (NULL: none is made). */
void fsv_glue_make(const char *cache);

/* alias.c: host directories at more than one view path. fsv_alias_find
 * sets fsv.aliased from the binds; the host path a view path names (by its
 * binds and the root, not asking the host) and whether it is host; an open
 * of res gave fd (the view path kept when the host's would not name it);
 * that view path of fd, whose host path is host, into out (-1: none). */
struct fsv_res;
void fsv_alias_find(void);
long fsv_host_of_view(const char *view, char *out, size_t n);
int fsv_alias_same(const char *view, const char *host);
void fsv_alias_opened(int fd, const struct fsv_res *res);
long fsv_alias_fd(int fd, const char *host, char *out, size_t n);

/* view.c */
int fsv_pool_add(const char *s, size_t n, uint16_t *off);
/* The bind at guest view path p (n bytes), or NULL. */
const struct fsv_bind *fsv_bind_at(const char *p, size_t n);
/* Whether some bind lies strictly below guest view path p (n bytes). */
int fsv_bind_below(const char *p, size_t n);
/* Whether name (n bytes) is the last component of some bind, or another
 * component of one's guest path; fsv_names_add records a bind's. */
int fsv_bind_basename(const char *name, size_t n);
int fsv_glue_name(const char *name, size_t n);
void fsv_names_add(const char *guest);
/* The view path of a host path into out; -1 if the view does not reach it. */
long fsv_view_of_host(const char *host, char *out, size_t n);
/* A view path as the process names it (its chroot): -1 outside its root. */
long fsv_proc_path(const char *view, char *out, size_t n);
long fsv_guest_path(const char *host, char *out, size_t n); /* zv_view_guest_path */

/* walk.c: the resolver. */
enum fsv_mode {
	FSV_FOLLOW,   /* the last component is followed */
	FSV_NOFOLLOW, /* it is not */
	FSV_CREATE,   /* only its parent is resolved */
	FSV_DIR,      /* followed, and it must be a directory: *res is the directory itself */
};

/* Known about the last component. */
enum fsv_last { FSV_LAST_UNKNOWN, FSV_LAST_NOLINK, FSV_LAST_MAGIC, FSV_LAST_SELF };

struct fsv_res {
	int dirfd;                 /* where the host looks name up */
	int owned;                 /* dirfd is the resolver's: fsv_res_done closes it */
	int last;                  /* enum fsv_last */
	int bind;                  /* the last component is a bind's mountpoint: its index, or -1 */
	size_t namelen;
	char name[256 + 2];        /* last component ("." for the directory itself) */
	char view[FSV_PATH_MAX];   /* the view path of dirfd */
	size_t viewlen;
	int links;                 /* symlinks followed so far */
	int inroot;                /* RESOLVE_IN_ROOT: the guest's dirfd that is the root */
	int begun;                 /* fsv_resolve began a walk of the cache: fsv_res_done ends it */
	int dc;                    /* the cache may be used */
	struct fsv_dref ent;       /* dirfd's entry in the cache (dcache.h) */
};

/* openat2's restrictions a guest may ask for (RESOLVE_*) */
#define FSV_R_NO_XDEV 0x01
#define FSV_R_NO_MAGICLINKS 0x02
#define FSV_R_NO_SYMLINKS 0x04
#define FSV_R_BENEATH 0x08
#define FSV_R_IN_ROOT 0x10

/* Resolves the guest's (dirfd, path) in the view: 0 with *res set, or
 * -errno as the host's lookup would give it. path is a kernel copy. */
long fsv_resolve(int dirfd, const char *path, int mode, unsigned resolve, struct fsv_res *res);
/* The last component of res is a symlink with target t: resolve on from
 * there (following it) with mode. */
long fsv_follow_last(struct fsv_res *res, const char *target, int mode, unsigned resolve);
/* The last component of res is a symlink with target t: a magic link of
 * /proc (res->last becomes FSV_LAST_MAGIC: the host follows it) or one the
 * view follows (fsv_follow_last). */
long fsv_past_link(struct fsv_res *res, const char *t, int mode, unsigned resolve);
/* Whether a symlink with target t in res's directory is one of /proc's magic links. */
int fsv_magic_last(struct fsv_res *res, const char *target);
/* The view path of res's directory grows by a name (forgotten when it would
 * not fit), or is set; the view path of a name in it (into v, FSV_PATH_MAX
 * bytes): its length, 0 if too long. */
void fsv_view_push(struct fsv_res *res, const char *c, size_t n);
void fsv_view_set(struct fsv_res *res, const char *v, size_t n);
size_t fsv_child_view(const struct fsv_res *res, const char *c, size_t n, char *v);
/* memo.c: the directory a path's first n bytes led to from the entry from
 * (kept by the walk before its last component; 1 with *res set there), and
 * how much of a path may be kept so (0: none). */
void fsv_memo_set(struct fsv_dref from, const char *key, size_t n, const struct fsv_res *res);
int fsv_memo_get(struct fsv_dref from, const char *key, size_t n, struct fsv_res *res);
size_t fsv_memo_prefix(const char *path, size_t len, int mode);
void fsv_memo_fork_child(void);
/* The guest opened directory path (n bytes, absolute, resolved by the host
 * alone) as fd; the generation of the pseudo entry FSV_DC_GUEST while that
 * fd serves walks (0: not), given the cache root's; and none serves. */
void fsv_memo_guest_dir(const char *path, size_t n, int fd);
uint32_t fsv_memo_guest_gen(uint32_t root_gen);
void fsv_memo_guest_drop(void);
/* Finds out whether res's last component is a symlink and follows it if so
 * (for calls that cannot tell by their result). */
long fsv_settle_last(struct fsv_res *res, int mode, unsigned resolve);
void fsv_res_done(struct fsv_res *res);
/* A name in a directory the guest holds, where the host's lookup is the
 * view's (no '/', ".", "..", nor a bind's or /proc link's name): *res
 * without a walk. */
int fsv_simple_name(const char *p);
void fsv_res_direct(struct fsv_res *res, int dirfd, const char *name);
/* Before a call that makes an fd: the walk's own fd (a low number the guest
 * would get) moves out of its way. */
void fsv_res_high(struct fsv_res *res);
/* fd moved above the guest's range (closed, the new number returned; the
 * same when it cannot move). */
int fsv_fd_high(int fd, int cloexec);
/* Whether fd lies above the guest's range (no: a limit below 256 has none). */
int fsv_fd_is_high(int fd);
/* A copy of the guest's string at p: 0, -EFAULT, or -ENAMETOOLONG. */
long fsv_copy_path(const char *p, char *out, size_t n);
/* The view path of the directory behind the guest's dirfd (AT_FDCWD: its
 * working directory) into out; its length or -errno. */
long fsv_dirfd_view(int dirfd, char *out, size_t n);

/* procfs.c */
/* A magic link of /proc as the guest sees it. The link is name (n bytes) in
 * the pid directory at view path dir (relative to the /proc bind: "<pid>"
 * or "<pid>/task/<tid>"). Returns 1 with *target the view path to go on at
 * (root, exe; perhaps in buf), or 0: the host's link stands. */
int fsv_proc_magic(const char *dir, size_t dlen, const char *name, size_t n, char *buf, size_t bn,
		   const char **target);
/* Whether name (n bytes) is one of the links fsv_proc_magic may change. */
static inline int fsv_proc_magic_name(const char *name, size_t n)
{
	return (n == 4 && !__builtin_memcmp(name, "root", 4)) || (n == 3 && !__builtin_memcmp(name, "exe", 3));
}
/* A readlink of a /proc link: the host's answer buf (n bytes) in guest
 * terms, written back into buf (size cap); the new length. */
long fsv_proc_readlink(char *buf, long n, long cap);

/* mounts.c: zv_view_mounts */
extern int (*const fsv_mounts_hook)(int info, const char *raw, size_t len, zv_view_put *put, void *ctx);

/* cwd.c */
long fsv_cwd_call(struct zv_call *c);
long fsv_cwd_view(char *out, size_t n); /* the working directory's view path */
/* A walk from the working directory starts at its cache entry, if it has one. */
void fsv_cwd_start(struct fsv_res *res);
void fsv_cwd_forget(void);
/* The working directory was entered by view path v (n bytes). */
void fsv_cwd_entered(const char *v, size_t n);

/* pathcall.c */
long fsv_path_call(struct zv_call *c);
/* oneshot.c: an open by the host in one call, or -ELOOP/-EXDEV: walk it. */
struct open_how;
long fsv_open_oneshot(struct zv_call *c, int dirfd, const char *path, const struct open_how *how);

/* sock.c */
long fsv_sock_call(struct zv_call *c);
long fsv_sockout_call(struct zv_call *c);


/* state.c */
void fsv_hooks_on(void);
#endif
