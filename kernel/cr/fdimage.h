/* The checkpoint's file descriptor sections (docs/CHECKPOINT.md, "File
 * descriptors"): written by cr/fds.c, read by cr/fds_restore.c.
 *
 * Section "fds": struct zv_cr_fds_head, then one record per fd in
 * ascending fd order, each a struct zv_cr_fd followed by len bytes (a path
 * with its NUL, a pipe's buffered bytes, or an epoll set's
 * struct zv_cr_epoll_target array), padded to 8 bytes.
 * Section "fdlocks": struct zv_cr_fds_head, then struct zv_cr_lock records. */
#ifndef ZV_CR_FDIMAGE_H
#define ZV_CR_FDIMAGE_H
#include <stdint.h>

#define ZV_CR_FDS_MAGIC 0x5a564644u   /* "ZVFD" */
#define ZV_CR_LOCKS_MAGIC 0x5a564c4bu /* "ZVLK" */
#define ZV_CR_FDS_VERSION 2 /* 1: no SOCKET, FIFO, EXTERNAL or in-flight records; read too */

struct zv_cr_fds_head {
	uint32_t magic, version;
	uint32_t count;          /* records that follow */
	uint32_t reserved;
};

enum zv_cr_fd_kind {
	ZV_CRFD_FILE = 1,    /* regular file, by path; checked at restore */
	ZV_CRFD_DIR,         /* directory, by path */
	ZV_CRFD_OPATH,       /* an O_PATH fd, by path */
	ZV_CRFD_CHR,         /* /dev/null and friends, by path */
	ZV_CRFD_STDIO,       /* reaches outside: a dup of the restorer's fd u.stdio */
	ZV_CRFD_PIPE,        /* one end of a pipe whose ends are all in the process */
	ZV_CRFD_EVENTFD,
	ZV_CRFD_TIMERFD,
	ZV_CRFD_EPOLL,
	ZV_CRFD_LISTEN,      /* a listening TCP, TCP6 or Unix socket */
	ZV_CRFD_SIGNALFD,
	ZV_CRFD_DUP,         /* shares the open file description of fd u.dup_of */
	ZV_CRFD_MEMFD,       /* a memfd: its name and contents follow */
	ZV_CRFD_SOCKET,      /* a Unix socket (not listening) or a connected TCP one: u.sk */
	ZV_CRFD_FIFO,        /* an end of a named FIFO: u.pipe, its path follows (and bytes, as a pipe's) */
	ZV_CRFD_EXTERNAL,    /* leads outside: the restorer's fd u.stdio (zvisor restore --inherit-fd) */
	ZV_CRFD_PTM,         /* a pseudo-terminal's master (/dev/ptmx): u.pty */
	ZV_CRFD_PTS,         /* its terminal (/dev/pts/N), the master held by the saved processes: u.pty.index */
	ZV_CRFD_PIDFD,       /* a pidfd of a saved process (u.pidfd.vpid, its pid as the program knows it), or of one already waited for (-1) */
	ZV_CRFD_INOTIFY,     /* an inotify instance: u.inotify.nwatches struct zv_cr_inwatch follow (cr/fdinotify.c) */
	ZV_CRFD_UDP,         /* a UDP or UDP6 socket: u.sock (backlog: ZV_CRUDP_*), its peer's address follows when connected */
	ZV_CRFD_DELETED,     /* a regular file with no name left: u.deleted, its path and contents follow */
};

/* Records from this fd number on are files in flight (sent with
 * SCM_RIGHTS, not yet received): made at restore and sent again, never
 * put at their number. */
#define ZV_CR_INFLIGHT 0x40000000

/* A socket's flags (u.sk.flags). */
#define ZV_CRSK_PASSCRED 1   /* SO_PASSCRED */
#define ZV_CRSK_NODELAY 2    /* TCP_NODELAY */
#define ZV_CRSK_KEEPALIVE 4  /* SO_KEEPALIVE */
#define ZV_CRSK_CLOSED 8     /* --tcp-close: a connection to the outside, restored closed */
#define ZV_CRSK_PEER_GONE 16 /* connected, its peer closed: restored with a peer that is closed after */

/* A socket record's bytes: its address (addrlen), its peer's (peerlen),
 * padded to 8 each, then nmsgs queued messages, each a struct
 * zv_cr_sockmsg, its nfds fd numbers (records of this image: an fd of the
 * process, or one in flight), and its len bytes, padded to 8. */
struct zv_cr_sockmsg {
	uint32_t len, nfds;
};

/* A UDP socket's options (u.sock.backlog). */
#define ZV_CRUDP_BROADCAST 1
#define ZV_CRUDP_REUSEADDR 2
#define ZV_CRUDP_REUSEPORT 4

struct zv_cr_fd {
	int32_t fd;
	uint32_t kind;          /* enum zv_cr_fd_kind */
	uint32_t flags;         /* the description's status flags (fdinfo flags:, O_* without O_CLOEXEC) */
	uint32_t fdflags;       /* FD_CLOEXEC */
	int64_t pos;            /* the offset (fdinfo pos:) */
	uint32_t len;           /* bytes after the record, before padding */
	uint32_t reserved;
	union {
		struct {                /* FILE, DIR, OPATH, CHR: the path follows */
			uint64_t size, ino, dev;
			int64_t mtime_sec, mtime_nsec;
		} file;
		int32_t stdio;          /* STDIO: 0, 1 or 2 */
		int32_t dup_of;         /* DUP: a lower fd */
		struct {                /* PIPE, FIFO: the data follows on one record per pipe */
			uint64_t id;    /* the pipe's inode: the ends of one pipe share it */
			uint32_t size;  /* F_GETPIPE_SZ */
			uint32_t pathlen; /* FIFO: its path (with its NUL, padded to 8) comes first */
		} pipe;
		struct {
			uint64_t count;
			uint32_t semaphore;
			uint32_t reserved;
		} eventfd;
		struct {                /* PIDFD */
			int32_t vpid;
			uint32_t reserved;
		} pidfd;
		struct {                /* INOTIFY */
			uint32_t nwatches;
			uint32_t reserved;
		} inotify;
		struct {
			int32_t clockid;
			uint32_t settime_flags; /* TFD_TIMER_ABSTIME, TFD_TIMER_CANCEL_ON_SET */
			uint64_t ticks;         /* expirations not yet read */
			int64_t value_ns, interval_ns; /* remaining, period */
		} timerfd;
		struct {                /* EPOLL: struct zv_cr_epoll_target[] follows */
			uint32_t ntargets;
			uint32_t reserved;
		} epoll;
		struct {
			int32_t domain, type, protocol;
			int32_t v6only;
			int32_t backlog;        /* LISTEN; UDP: ZV_CRUDP_* options */
			uint32_t addrlen;
			uint8_t addr[112];      /* struct sockaddr_{in,in6,un} */
			uint64_t ino;           /* the socket's inode (version 1: 0) */
		} sock;
		struct {                /* MEMFD: namelen bytes of name (with its NUL), then size bytes */
			uint64_t size;
			uint64_t ino;   /* at the checkpoint: how the core finds its mappings */
			uint32_t seals; /* F_GET_SEALS */
			uint32_t namelen;
		} memfd;
		struct {                /* DELETED: pathlen bytes of the path it had (with its NUL), then size bytes */
			uint64_t size, ino;
			uint32_t mode, pathlen; /* mode: its permission bits */
			int64_t mtime_sec, mtime_nsec;
		} deleted;
		uint64_t sigmask;       /* SIGNALFD */
		struct {                /* PTM, PTS */
			uint32_t index;         /* the pty's number at the checkpoint (TIOCGPTN, the terminal's minor) */
			int32_t sid, pgrp;      /* PTM: the session the terminal is the controlling one of, its
						 * foreground group (ids as the programs saw them; 0: none) */
			uint32_t locked, packet; /* PTM: TIOCGPTLCK, TIOCGPKT */
			uint8_t termios[36];    /* PTM: the terminal's struct termios (TCGETS) */
			uint16_t winsize[4];    /* PTM: TIOCGWINSZ */
		} pty;
		struct {                /* SOCKET */
			int32_t domain, type, protocol;
			int32_t state;          /* Unix: sock_diag's (1 connected, 7 not); TCP: tcpi_state */
			uint64_t ino, peer_ino; /* Unix: its inode, its peer's (0: none) */
			uint32_t shutdown;      /* Unix: sock_diag's (1 no more receives, 2 no more sends) */
			uint32_t flags;         /* ZV_CRSK_* */
			uint32_t addrlen, peerlen;
			uint32_t nmsgs;         /* messages queued for it to receive */
			int32_t peek_off;       /* SO_PEEK_OFF, -1: off */
		} sk;
		uint8_t raw[144];
	} u;
};

/* INOTIFY's bytes after its record: a zv_cr_inwatch per watch, ascending
 * wd, each followed by its path (NUL included) padded to 8. */
struct zv_cr_inwatch {
	int32_t wd;
	uint32_t mask;      /* as fdinfo shows it, with IN_DONT_FOLLOW when the watch had it */
	uint32_t pathlen;
	uint32_t reserved;
};

struct zv_cr_epoll_target {
	int32_t fd;
	uint32_t events;
	uint64_t data;
};

enum zv_cr_lock_kind { ZV_CRLK_POSIX = 1, ZV_CRLK_OFD, ZV_CRLK_FLOCK };

struct zv_cr_lock {
	int32_t fd;             /* taken again through this fd */
	uint16_t kind;          /* enum zv_cr_lock_kind */
	uint16_t type;          /* F_RDLCK or F_WRLCK */
	int64_t start, len;     /* len 0: to the end of the file */
};

static inline uint32_t zv_cr_pad8(uint32_t n) { return (n + 7) & ~7u; }
#endif
