/* --fake-root and --ids: the program runs under virtual credentials, and
 * the owners, modes and device numbers it gives files are kept with each
 * file and shown by stat (docs/DESIGN.md, "Virtual ids and ownership").
 *   config.c    the options, the identity, what crosses execve, the hooks
 *   procids.c   the run's processes' credentials, for another's status
 *   creds.c     the host's rules for changing credentials, on a zv_creds
 *   idcalls.c   the id calls: get*, set*, getgroups, capget, capset, prctl
 *   record.c    a file's record and its text (user.containers.override_stat)
 *   xattr.c     records in the file's extended attribute
 *   db.c        records in the database file, by device and inode
 *   cache.c     what a file's attribute said, while its ctime stands still
 *               (in this process, and in a file of zvisor's cache directory)
 *   store.c     a file's record wherever it is kept; the view stat shows
 *   statcalls.c stat, lstat, fstat, newfstatat, statx
 *   procowner.c the owner of a hosted process's /proc entries
 *   siginfo.c   a sender's uid in what waitid, sigtimedwait and signalfd give
 *   owncalls.c  chown, chmod and mknod families
 *   create.c    new files: owner and mode from the virtual ids
 *   names.c     unlink and rename: a record goes with the last link
 *   dents.c     getdents: the d_type of a device node the program made
 *   sockcred.c  SCM_CREDENTIALS and SO_PEERCRED
 *   xattrhide.c the record's attribute hidden from the program
 *   layer.c     the layer and its events */
#ifndef ZV_FAKEID_FAKEID_H
#define ZV_FAKEID_FAKEID_H
#include <stdint.h>
#include <stddef.h>
#include "arch/thread.h"
#include <asm/unistd_64.h>
#include <linux/errno.h>
#include <linux/capability.h>

/* File types and mode bits (linux/stat.h leaves them to libc when a libc
 * header came first). */
#ifndef S_IFMT
#define S_IFMT 0170000
#define S_IFSOCK 0140000
#define S_IFLNK 0120000
#define S_IFREG 0100000
#define S_IFBLK 0060000
#define S_IFDIR 0040000
#define S_IFCHR 0020000
#define S_IFIFO 0010000
#define S_ISUID 0004000
#define S_ISGID 0002000
#define S_ISVTX 0001000
#define S_IXGRP 0000010
#endif

#define ZV_FID_OVERFLOW 65534u /* the id of a host id the view does not map (overflowuid) */
#define ZV_FID_DUMP_USER 1     /* SUID_DUMP_USER: a dumpable process's /proc files are its euid's */

struct zv_fakeid {
	int on;
	int db_only;                 /* --fake-db-only: no extended attributes */
	uint32_t uid, gid;           /* the identity the program starts as */
	uint32_t host_uid, host_gid; /* the host's real ids: files of theirs show as uid:gid */
	int last_cap;                /* the host's highest capability number */
	uint64_t cap_bnd;            /* the host's bounding set */
	int xattrat;                 /* the host has getxattrat and the like (Linux 6.13): 1, 0 or -1 unknown */
	int no_new_privs;            /* the program's (the seccomp platform sets the host's itself) */
	int dumpable;                /* the process's, as PR_GET_DUMPABLE says (the host's follows PR_SET_DUMPABLE only) */
	volatile int db_lock;        /* the database's writers within this process */
	/* the database (db.c): a hidden fd, carried across execve, and its mapping */
	int db_fd;
	void *db_map;
	uint64_t no_xattr_dev[8];    /* devices whose filesystem refused user xattrs */
};
extern struct zv_fakeid zv_fid;

/* A file's record: what stat shows instead of the host's. */
struct zv_fid_rec {
	uint32_t uid, gid;
	uint32_t mode;          /* 07777 bits, and a file type (S_IFMT bits) or 0: the host's */
	uint32_t major, minor;  /* a device node's number */
};

/* What stat says of a file, in the form every stat call shares: the key
 * of its record (dev, ino) and the fields the view changes. */
struct zv_fid_stat {
	uint64_t dev, ino;      /* dev: major << 32 | minor */
	uint32_t mode, uid, gid, nlink;
	uint32_t rmajor, rminor;
	uint64_t ctime_ns;      /* its change time: a cached attribute's key */
};

/* creds.c */
int zv_fid_capable(const struct zv_creds *c, int cap);
int zv_fid_in_group(const struct zv_creds *c, uint32_t gid);
/* the uid calls (gid 0) and the gid calls (gid 1) */
long zv_fid_set_id(struct zv_creds *c, int gid, uint32_t v);
long zv_fid_set_reid(struct zv_creds *c, int gid, uint32_t r, uint32_t e);
long zv_fid_set_resid(struct zv_creds *c, int gid, uint32_t r, uint32_t e, uint32_t s);
long zv_fid_set_fsid(struct zv_creds *c, int gid, uint32_t fs);
void zv_fid_set_groups(struct zv_creds *c, const uint32_t *g, uint32_t n);
long zv_fid_capset(struct zv_creds *c, uint64_t eff, uint64_t prm, uint64_t inh);
long zv_fid_prctl(struct zv_creds *c, long op, unsigned long a2, unsigned long a3, unsigned long a4,
		  unsigned long a5);
int zv_fid_exec(struct zv_creds *c, uint32_t mode, uint32_t uid, uint32_t gid, int suid_ok, int sgid_ok);
int zv_fid_dump_changed(const struct zv_creds *old, const struct zv_creds *new);
int zv_fid_exec_dumpable(const struct zv_creds *old, const struct zv_creds *new);

/* config.c */
uint32_t zv_fid_guest_uid(uint32_t host);
uint32_t zv_fid_guest_gid(uint32_t host);
void zv_fid_start_cred(struct zv_creds *c);
int zv_fid_suid_dumpable(void); /* the host's fs.suid_dumpable */

/* procids.c: the run's table of credentials, for another's /proc/PID/status */
extern int zv_fid_procids_fd; /* hidden, carried across exec; -1: none */
void zv_fid_procids_make(void);     /* the first image */
void zv_fid_procids_attach(int fd); /* an exec'd one */
void zv_fid_publish(const struct zv_thread *t); /* t's credentials changed (or a new image) */
void zv_fid_publish_child(const struct zv_thread *t, int pid); /* a fork child, as the fork returns */
void zv_fid_publish_all(struct zv_thread *self); /* the process's dumpability changed */
int zv_fid_task_creds(int tid, int tgid, struct zv_creds *c, int *dumpable);
void zv_fid_procids_fork_child(struct zv_thread *t);
void zv_fid_procids_exit(const struct zv_thread *t, int all);
int zv_fid_other_creds(int tid, const char *raw, size_t len, struct zv_creds *c);
int zv_fid_task_status_creds(int tid, struct zv_creds *c); /* read from its status */
uint32_t zv_fid_sender_uid(const struct zv_thread *self, int tid, int pid, uint32_t huid);

/* record.c */
#define ZV_FID_XATTR "user.containers.override_stat"
int zv_fid_rec_format(char *buf, size_t n, const struct zv_fid_rec *r);
int zv_fid_rec_parse(const char *s, size_t n, struct zv_fid_rec *r);
void zv_fid_apply(struct zv_fid_stat *s, const struct zv_fid_rec *r);
void zv_fid_rec_of(struct zv_fid_rec *r, const struct zv_fid_stat *view);
int zv_fid_rec_needed(const struct zv_fid_rec *r, const struct zv_fid_stat *host);

/* xattr.c: the record's attribute of the file at (dirfd, path, AT_ flags):
 * AT_EMPTY_PATH with "" names dirfd itself; -errno as the host says it. */
long zv_fid_xattr_get(int dirfd, const char *path, int flags, char *buf, size_t n);
long zv_fid_xattr_set(int dirfd, const char *path, int flags, const char *val, size_t n);
long zv_fid_xattr_remove(int dirfd, const char *path, int flags);
/* The same for another attribute: the host's copy of one it keeps for its
 * root (xattrhide.c), named ZV_FID_PRIV NAME. */
#define ZV_FID_PRIV "user.zvisor."
long zv_fid_xattr_remove_name(int dirfd, const char *path, int flags, const char *name);

/* db.c */
int zv_fid_db_open(const char *path);
int zv_fid_db_get(uint64_t dev, uint64_t ino, struct zv_fid_rec *r);
long zv_fid_db_put(uint64_t dev, uint64_t ino, const struct zv_fid_rec *r); /* r NULL: remove */
int zv_fid_db_empty(void);

/* cache.c */
int zv_fid_cache_get(const struct zv_fid_stat *s, struct zv_fid_rec *r);
void zv_fid_cache_put(const struct zv_fid_stat *s, const struct zv_fid_rec *r);
void zv_fid_cache_drop(const struct zv_fid_stat *s);

/* store.c */
uint64_t zv_fid_dev(uint64_t encoded);
long zv_fid_fstatat(int dirfd, const char *path, int flags, struct zv_fid_stat *s);
int zv_fid_lookup(int dirfd, const char *path, int flags, const struct zv_fid_stat *s, struct zv_fid_rec *r);
long zv_fid_store(int dirfd, const char *path, int flags, const struct zv_fid_stat *s, const struct zv_fid_rec *r);
void zv_fid_view(int dirfd, const char *path, int flags, struct zv_fid_stat *s);

/* procowner.c: s of a hosted process's /proc entry owned as natively */
void zv_fid_proc_owner(int dirfd, const char *path, int flags, struct zv_fid_stat *s);

/* For the command line (cmdline.c, main.c). */
void zv_fakeid_root(void);
int zv_fakeid_ids(const char *spec);
void zv_fakeid_db(const char *path);
void zv_fakeid_db_only(void);
int zv_fakeid_start(char **envp, const char *root); /* 0, or an exit status */

/* layer.c: n bytes of a call's argument at p, which a layer before may
 * have put in kernel memory (fsview's rewritten structs), or the guest's:
 * 0 or -EFAULT. */
long zv_fid_arg_copy(void *dst, uint64_t p, size_t n);

/* create.c: what a new file gets */
uint32_t zv_fid_keep_bits(const struct zv_creds *c, uint32_t type);
long zv_fid_created(const struct zv_creds *c, int dirfd, const char *path, int flags, uint32_t lacks,
		    uint32_t adds, const struct zv_fid_rec *dev);
int zv_fid_setgid_dir(int dirfd, uint64_t path, uint32_t *gid); /* the new file's directory is set-gid: its group */

/* The layer's handlers. */
struct zv_call;
long zv_fid_id_call(struct zv_call *c);     /* idcalls.c */
long zv_fid_stat_call(struct zv_call *c);   /* statcalls.c */
long zv_fid_own_call(struct zv_call *c);    /* owncalls.c */
long zv_fid_create_call(struct zv_call *c); /* create.c */
long zv_fid_name_call(struct zv_call *c);   /* names.c */
long zv_fid_sock_call(struct zv_call *c);   /* sockcred.c */
long zv_fid_xattr_call(struct zv_call *c);  /* xattrhide.c */
long zv_fid_dents_call(struct zv_call *c);  /* dents.c */
long zv_fid_siginfo_call(struct zv_call *c); /* siginfo.c */
extern int zv_fid_sigfds; /* siginfo.c: the process made a signalfd: its reads are seen */
#endif
