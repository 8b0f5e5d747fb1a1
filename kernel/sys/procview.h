/* The guest's view of the procfs files that would show zvisor
 * (sys/procview.c): /proc/self/{maps,smaps,smaps_rollup,numa_maps,status}
 * and their /proc/<pid>, thread-self and task forms; mountinfo and mounts
 * when a root of the guest's own is set (zv_view_mounts); stat (its signal
 * fields; and another's, a task's children and an fd's fdinfo when a
 * restored tree's ids are shown: zv_guest_ids_on). */
#ifndef ZV_SYS_PROCVIEW_H
#define ZV_SYS_PROCVIEW_H
#include <stddef.h>
#include <stdint.h>

struct zv_thread;
struct zv_call;

enum zv_pv_kind { ZV_PV_MAPS = 1, ZV_PV_SMAPS, ZV_PV_ROLLUP, ZV_PV_NUMA, ZV_PV_STATUS,
		  ZV_PV_MOUNTINFO, ZV_PV_MOUNTS /* only under a view's hook (sys/viewhook.h) */,
		  ZV_PV_LOCKS /* /proc/locks */,
		  ZV_PV_STAT /* another's only while zv_guest_ids_on */,
		  ZV_PV_CHILDREN, ZV_PV_FDINFO /* only while zv_guest_ids_on */ };

/* A growing buffer in kernel memory. */
struct zv_pv_buf {
	char *p;
	size_t len, cap;
};
int zv_pv_put(struct zv_pv_buf *b, const char *s, size_t n); /* -ENOMEM */
/* The lines of a procfs text: each call gives the next line of
 * text[0, len) (n bytes, without its newline; *nl: one followed), or NULL
 * at the end. */
struct zv_pv_lines {
	const char *text;
	size_t len, at;
};
static inline const char *zv_pv_next_line(struct zv_pv_lines *it, size_t *n, int *nl)
{
	if (it->at >= it->len)
		return NULL;
	const char *line = it->text + it->at;
	size_t k = 0, left = it->len - it->at;
	while (k < left && line[k] != '\n')
		k++;
	*n = k;
	*nl = k < left;
	it->at += k + (size_t)*nl;
	return line;
}
/* The whole file at fd (read from offset 0) into b, 0-terminated. */
int zv_pv_read_all(int fd, struct zv_pv_buf *b);
int zv_pv_kind_of_name(const char *s); /* the kind of /proc/PID/<s>, or 0 */

/* sys/procview_give.c: this process's own maps, smaps, numa_maps or
 * smaps_rollup (name) as it sees them, into out: its length, -E2BIG if
 * over cap, or -errno (the layer's own_text). */
long zv_pv_give(const char *name, char *out, size_t cap);
/* The same text in a new memfd (close-on-exec, its offset at the end): the
 * fd or -errno. */
long zv_pv_give_fd(const char *name);
/* sys/procview_peer.c: the text another hosted process (host pid hpid)
 * shows itself for kind (maps, smaps, numa_maps, smaps_rollup), asked over the peer
 * channel, into out: 0, or -errno (not hosted, stopped, no answer). */
int zv_pv_from_peer(int hpid, int kind, struct zv_pv_buf *out);
/* Its program, as its /proc/self/exe names it, into out (0-terminated):
 * the length, or -errno (the layers' exe_of). */
long zv_pv_peer_exe(int hpid, char *out, size_t cap);

/* An open of path by the guest returned fd: marks fd if it is one of the
 * files above, or another process's status where ids are virtual. */
void zv_procview_opened(struct zv_thread *t, const char *path, long fd);

/* sys/procview_anon.c: anonymous memory the kernel maps from a file
 * (sys/filemem.h) is shown as anonymous memory.
 * A maps or smaps header line of that file: writes its anonymous form
 * ("lo-hi perms 00000000 00:00 0 ") into buf and returns its length; else 0. */
int zv_pv_anon_header(const char *line, size_t n, char *buf, size_t cap);
/* One attribute line of such an smaps record onto out, its counts as
 * anonymous memory's (a: the record's counts so far). */
struct zv_pv_anon {
	uint64_t rss, pss, pss_dirty, shared_clean, private_clean, anon;
};
size_t zv_pv_anon_attr(struct zv_pv_anon *a, const char *line, size_t n, char *buf, size_t cap);
/* Only notes the line's count in a. */
void zv_pv_anon_note(struct zv_pv_anon *a, const char *line);
/* A "Key:   N kB" line with the number v instead, into buf: its length. */
size_t zv_pv_kb_line(const char *line, size_t n, uint64_t v, char *buf, size_t cap);
/* A numa_maps line of that file, rewritten onto out: 1; 0 if it is not; -ENOMEM. */
int zv_pv_anon_numa(const char *line, size_t n, struct zv_pv_buf *out);

/* sys/procview_maps.c: the host's maps-like text (maps, smaps, numa_maps)
 * filtered line by line, without the kernel's regions. */
#define ZV_PV_MAX_REGIONS 64
struct zv_pv_hidden {
	uint64_t r[ZV_PV_MAX_REGIONS + 3][2];
	int n;
};
struct zv_pv_filter {
	int kind;
	int skip;          /* the current record is not shown */
	long prev;         /* maps, smaps: where the last record written starts in out (-1: none) */
	uint64_t resume;   /* records ending at or below this address are left out (0: none) */
	uint64_t slo, shi; /* the restored stack */
	int anon;          /* the current record is memory mapped from an image */
	int merging;       /* smaps: the current record's counts go to the previous one's (at f->prev) */
	struct zv_pv_anon counts;
	struct zv_pv_hidden h;
};
void zv_pv_filter_begin(struct zv_pv_filter *f, int kind);
/* One line of the host's text (n bytes; nl: a newline followed) onto out.
 * A line that starts a record while out holds more than enough bytes is
 * not taken: returns 1 with *start its address; else 0, or -ENOMEM. */
int zv_pv_filter_line(struct zv_pv_filter *f, const char *line, size_t n, int nl, size_t enough,
		      struct zv_pv_buf *out, uint64_t *start);
/* Records of a guest's text (0-terminated) as seq_file makes them: a maps
 * or numa_maps line, an smaps mapping with its fields, all of status or
 * smaps_rollup. Whether one starts at byte at; where the one holding byte
 * at ends. */
int zv_pv_record_starts(int kind, const char *text, size_t at);
size_t zv_pv_record_end(int kind, const char *text, size_t len, size_t at);
/* smaps_rollup's whole text raw into out, the hidden mappings' fields
 * taken off. */
int zv_pv_filter_rollup(const char *raw, size_t len, struct zv_pv_buf *out);
/* sys/procview_locks.c: /proc/locks's text raw into out, without the
 * running programs' marks (sys/txtbusy.h). */
int zv_pv_filter_locks(const char *raw, size_t len, struct zv_pv_buf *out);
/* sys/procview_status.c: the host's status text raw into out, with the
 * signal fields of the guest's view; tid is the thread it shows (host's);
 * other: of another process (only its virtual ids change). */
int zv_pv_filter_status(struct zv_thread *t, struct zv_call *c, int tid, int other, const char *raw, size_t len,
			struct zv_pv_buf *out);
/* Thread tid's (host's) signal sets as the guest would see them: pending,
 * blocked, ignored, caught; sig[0] and sig[1] come in as the host shows
 * them (procview_status.c). */
void zv_pv_guest_sigs(struct zv_thread *t, struct zv_call *c, int tid, uint64_t sig[4]);
/* sys/procview_stat.c: the host's stat or children text raw into out,
 * with the ids the guest knows (zv_guest_id, zv_guest_group); a stat of
 * its own process (not other) with its signal fields as the guest's. */
int zv_pv_filter_stat(struct zv_thread *t, struct zv_call *c, int tid, int other, const char *raw, size_t len,
		      struct zv_pv_buf *out);
int zv_pv_filter_children(const char *raw, size_t len, struct zv_pv_buf *out);
/* An fd's fdinfo: a pidfd's Pid and NSpid lines as the guest knows them. */
int zv_pv_filter_fdinfo(const char *raw, size_t len, struct zv_pv_buf *out);
#endif
