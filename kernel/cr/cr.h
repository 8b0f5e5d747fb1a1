/* Checkpoint/restore inside the kernel (docs/CHECKPOINT.md): the state the
 * pieces share. The checkpoint saves the whole address space, the kernel's
 * own memory included, so a restored process resumes with every guest-visible
 * kernel table as it was; what the host holds (threads, fds, timers, signal
 * actions, per-thread registrations) is re-created. */
#ifndef ZV_CR_CR_H
#define ZV_CR_CR_H
#include <stdint.h>
#include <stddef.h>
#include "cr/image.h"
#include "cr/state.h"

struct zv_thread;
struct zv_ucontext;

/* The queued SIGSYS value (si_value) from the checkpointing thread to the
 * others: the high half is the tag, the low half its pid (`zvisor
 * checkpoint` asks over the peer channel, cr/serve.c). */
#define ZV_CR_TAG_FREEZE 0x7a76667aUL
#define ZV_CR_MAX_THREADS 1024
#define ZV_CR_SCRATCH 8

#define ZV_CR_MAX_INHERIT 16
struct zv_cr_request {
	char dir[4096];        /* absolute */
	int leave_running;
	int tcp_close;         /* --tcp-close */
	int ninherit;          /* --inherit-fd N... */
	int inherit[ZV_CR_MAX_INHERIT];
};

/* Section "meta": the process as a whole. */
struct zv_cr_meta {
	int pid, ppid;          /* the guest's */
	int nthreads;
	int platform;
	int64_t mono, boot;     /* MONOTONIC and BOOTTIME as the guest read them */
	char boot_id[40];       /* the host's boot: another one's clocks differ */
	int pgid, sid;          /* the guest's (version 1: none) */
};
#define ZV_CR_META1_SIZE 72

/* A restored process's ids (cr/pids.c): the guest's and the host's. */
struct zv_cr_id {
	int32_t vid, hid;
	uint32_t group;         /* 1: a process group or session, 0: a process, ZV_CR_ID_SHM */
	int32_t pad;
};
struct zv_cr_ids {
	uint32_t n, cap;
	struct zv_cr_id e[];
};

/* The process's checkpoint state. It is kernel memory like the rest, so a
 * restored process finds the dumper's copy: restore resets it. */
struct zv_cr_state {
	volatile int busy;          /* a checkpoint is being taken */
	int round;                  /* how many were started */
	volatile int parked;        /* threads parked so far */
	volatile int release;       /* futex: bumped when parked threads go on */
	int dumper_htid;            /* the thread that writes the image */
	int session;                /* its peer connection to `zvisor checkpoint` (cr/serve.c), -1: none */
	int tree;                   /* the image is one process's of a tree (cr/tree.h) */
	int64_t frozen_mono, frozen_boot; /* a session's clocks when it froze: the image's */
	int signal;                 /* --checkpoint-on, 0 if none */
	int nthreads;
	uint64_t hole, hole_len;    /* restore's scratch memory, unmapped once resumed */
	uint64_t area, area_len;    /* a tree's shared page (cr/treerestore.c), likewise */
	struct zv_thread *hole_leader; /* the thread that unmaps it */
	volatile int go;            /* futex: restored threads wait for the last one */
	int restored;               /* host pid and tids differ from the guest's */
	struct zv_cr_ids *ids;      /* a restored process's: the ids its program knows by others */
	uint64_t shared_pending;    /* signals the host held pending for the process */
	/* the large fields last: every start reads the ones above (one page) */
	struct zv_thread *threads[ZV_CR_MAX_THREADS]; /* the parked ones */
	struct zv_cr_request req;
	struct zv_cr_request on_signal;  /* --checkpoint-dir, --leave-running */
	uint64_t scratch[ZV_CR_SCRATCH][2]; /* the checkpoint's own memory, left out */
};
extern struct zv_cr_state zv_cr;

/* cr/command.c: pages.bin into pages.bin.zst when how says so (--compress
 * always, --compress=auto when it pays off), the index rewritten; the image
 * is complete at every step. */
enum { ZV_CR_Z_AUTO, ZV_CR_Z_ALWAYS, ZV_CR_Z_NEVER };
void zv_cr_compress_pages(const char *dir, int how);

/* cr/freeze.c */
int zv_cr_sigsys(struct zv_thread *t, const void *si, struct zv_ucontext *uc); /* 1: it was ours */
void zv_cr_signal(struct zv_thread *t, struct zv_ucontext *uc);                /* --checkpoint-on's signal */
void zv_cr_park(struct zv_thread *t);
void zv_cr_start(struct zv_thread *t, const struct zv_cr_request *req);
const char *zv_cr_wait_for_all(void);   /* every other thread parked, or why not */
void zv_cr_finish(int kill);            /* the parked threads go on, or the process ends */
/* A TCP connection between the saved processes, fd of this one (cr/fdsock.c):
 * zv_cr_finish(1) resets it (SO_LINGER 0), leaving no TIME_WAIT on its
 * address for the restore; forgotten by zv_cr_finish and a restore. */
void zv_cr_note_reset(int fd);
void zv_cr_forget_resets(void);
/* cr/serve.c: the peer service `zvisor checkpoint` asks for, and what the
 * checkpointing thread does for it while the others are parked. */
void zv_cr_serve(struct zv_thread *t, int fd, const void *msg, size_t n, int *fds, int nfds);
void zv_cr_session(struct zv_thread *t);
int zv_cr_restart_call(struct zv_thread *t); /* a call interrupted only by the freeze: made again */
int zv_cr_parse_signal(const char *s);
struct zv_exec_carry;
int zv_cr_encode(char *buf, unsigned long n, const struct zv_exec_carry *x);
const char *zv_cr_decode(const char *s, struct zv_exec_carry *x);
struct zv_call;
long zv_cr_sys_rseq(struct zv_call *c);
/* cr/inotify_notes.c: each watch's file noted as it is added; the path
 * noted last for a device and inode (dont_follow: the watch's
 * IN_DONT_FOLLOW), or NULL. */
long zv_cr_sys_inotify_add_watch(struct zv_call *c);
const char *zv_cr_inotify_path(uint64_t dev, uint64_t ino, int *dont_follow);
void zv_cr_inotify_fork_child(void);
/* cr/pids.c: a restored process's ids, the host's for the guest's and back
 * (processes and threads; groups and sessions; its parent's) */
long zv_cr_host_id(long x);
long zv_cr_guest_id(long x);
long zv_cr_host_group(long x);
long zv_cr_guest_group(long x);
long zv_cr_guest_ppid(long x);
void zv_cr_ids_add(int vid, int hid, int group);
#define ZV_CR_ID_SHM 2   /* a SysV shared memory segment's id (cr/shmobj.c) */
long zv_cr_guest_shmid(long x);
/* cr/piddents.c: getdents of /proc and of task directories, with those ids. */
long zv_cr_pid_dents(struct zv_call *c);
void zv_cr_boot_id(char out[40]);
/* cr/dump.c: writes the image of the frozen process; 0 or -1 (o->why). */
long zv_cr_dump(struct zv_cr_out *o, struct zv_thread *self);
/* cr/memory.c */
long zv_cr_save_memory(struct zv_cr_out *o);
/* cr/coord.c: `zvisor checkpoint`'s side: saves process pid and its
 * descendants (returns once DIR is complete; a refusal ends zvisor). */
void zv_cr_coordinate(const struct zv_cr_request *req, int pid, int compress);
/* cr/command.c: `zvisor checkpoint` and `zvisor restore` */
void zv_cr_absolute(const char *path, char *out, unsigned long n);
__attribute__((noreturn)) void zv_cr_checkpoint_main(int argc, char **argv);
extern const char zv_checkpoint_help[], zv_restore_help[]; /* cr/help.c */
__attribute__((noreturn)) void zv_cr_restore_main(int argc, char **argv, const uint64_t *auxv);
/* asm: arch/crjmp.S */
int zv_cr_setjmp(uint64_t buf[8]) __attribute__((returns_twice));
__attribute__((noreturn)) void zv_cr_longjmp(const uint64_t buf[8]);
#endif
