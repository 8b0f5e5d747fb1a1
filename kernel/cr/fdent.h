/* The saving side's view of the process's fds (cr/fdscan.c lists them,
 * cr/fdkinds.c and cr/fdlocks.c describe each into its record). */
#ifndef ZV_CR_FDENT_H
#define ZV_CR_FDENT_H
#include <stdint.h>
#include <asm/stat.h>
#include "cr/resutil.h"
#include "cr/fdimage.h"
#include "cr/image.h"

#define ZV_CR_LINK_MAX 4096
/* st_mode's types (linux/stat.h hides them next to glibc's headers) */
#define ZV_S_IFMT 0170000
#define ZV_S_IFREG 0100000
#define ZV_S_IFDIR 0040000
#define ZV_S_IFCHR 0020000
#define ZV_S_IFIFO 0010000
#define ZV_S_IFLNK 0120000

/* A socket's state read at the checkpoint (cr/fdsock.c). */
struct zv_cr_sockent {
	int domain, type, protocol, state;
	uint64_t peer_ino;
	uint32_t shutdown, flags;
	uint8_t addr[112], peer[112];
	uint32_t addrlen, peerlen;
	int32_t peek_off;
	struct zv_cr_buf queue;  /* its messages, as the record's bytes hold them */
	uint32_t nmsgs;
};

struct zv_cr_ent {
	int fd;
	int recno;           /* its record's number: fd, or ZV_CR_INFLIGHT + k for a file in flight */
	int inflight;        /* fd is this saver's own copy of a file in flight */
	int kind;            /* enum zv_cr_fd_kind; 0: not savable by itself (why) */
	const char *why;     /* why not, for the refusal */
	int dup_of;          /* a lower fd sharing the description, or -1 */
	int stdio;           /* STDIO: which */
	int pty;             /* PTM, PTS: the pty's number */
	int pid;             /* PIDFD: the host's pid of its process (fdinfo Pid:), -1 once waited for */
	uint32_t flags, fdflags;
	int64_t pos;
	struct stat st;
	struct zv_cr_sockent sk; /* SOCKET */
	char link[ZV_CR_LINK_MAX]; /* readlink of /proc/self/fd/N */
};

struct zv_cr_ents {
	struct zv_cr_ent *e;  /* ascending fd */
	unsigned n;
	size_t size;          /* of the allocation */
	char *info;           /* a buffer for one fdinfo file */
	size_t info_size;
	unsigned ninflight;
};

/* Lists every fd but skip and skip2 (the image's directory, the
 * checkpoint's session) and classifies it by its link, mode and flags. 0, or -1 with o->why set. */
long zv_cr_ents_load(struct zv_cr_out *o, struct zv_cr_ents *s, int skip, int skip2);
void zv_cr_ents_free(struct zv_cr_ents *s);
/* Adds the file at this saver's fd as a file in flight (an ent to describe,
 * closed by zv_cr_ents_free): its index, or -1 (o->why set). */
long zv_cr_ents_add_inflight(struct zv_cr_out *o, struct zv_cr_ents *s, int fd);
/* Whether fds a and b of this process share one open file description. */
int zv_cr_same_description(int a, int b);
/* The character devices saved by path: the index of rdev's in
 * zv_cr_dev_names, or -1. */
int zv_cr_dev_index(unsigned long rdev);
extern const char *const zv_cr_dev_names[];
/* Reads fd's /proc/self/fdinfo into s->info: its length or -errno. */
long zv_cr_fdinfo(struct zv_cr_ents *s, int fd);

/* Bytes that follow a record (a path, a pipe's contents, epoll targets). */
struct zv_cr_extra {
	void *p;
	size_t size;         /* of the allocation, 0 when p is not owned */
};
void zv_cr_extra_free(struct zv_cr_extra *x);

/* Fills the kind's part of rec (and its bytes after) for e, which is not a
 * dup. 0, or -1 with o->why set. */
long zv_cr_describe(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
		    struct zv_cr_fd *rec, struct zv_cr_extra *x);
/* cr/fdsock.c: a socket's state (Unix: not listening; TCP: connected)
 * into e->sk, its queue peeked (files in flight added to s); then the
 * record and its bytes. */
long zv_cr_sock_load(struct zv_cr_out *o, struct zv_cr_ents *s, unsigned i);
long zv_cr_describe_socket(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec, struct zv_cr_extra *x);
/* cr/fdinotify.c: an inotify instance's watches. */
long zv_cr_describe_inotify(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			    struct zv_cr_fd *rec, struct zv_cr_extra *x);
/* cr/fdpty.c: a pseudo-terminal's master or terminal (PTM, PTS). */
long zv_cr_describe_pty(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec);
/* Appends e's locks (fdinfo lock: lines) to the "fdlocks" section. */
long zv_cr_save_locks(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
		      struct zv_cr_buf *locks);
#endif
