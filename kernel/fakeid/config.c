/* The options (--fake-root, --ids, --fake-db, --fake-db-only), the
 * identity a run starts as, the id map between host and view, and what
 * crosses execve (exec state field I): the options, the database's fd,
 * the exec'ing thread's credentials and the fd of the run's table of
 * credentials (procids.c). */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/execstate.h"
#include "sys/viewhook.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>
#include <linux/prctl.h>

struct zv_fakeid zv_fid = { .xattrat = -1, .db_fd = -1, .dumpable = ZV_FID_DUMP_USER };
static const char *db_path;     /* --fake-db */
static struct zv_creds carried;  /* the exec'ing thread's, for the new image's first */
static int have_carried;
static int cred_set;              /* this process's first image has its ids */

/* --fake-root: uid and gid 0. */
void zv_fakeid_root(void)
{
	zv_fid.on = 1;
	zv_fid.uid = zv_fid.gid = 0;
}

static int parse_id(const char **s, uint32_t *out)
{
	const char *e;
	long v = zv_parse_dec(*s, &e);
	if (e == *s || **s == '-' || v < 0 || v >= 0xffffffffL)
		return 0;
	*s = e;
	*out = (uint32_t)v;
	return 1;
}

/* --ids UID:GID; 0, or -1 for a bad spec. */
int zv_fakeid_ids(const char *spec)
{
	const char *s = spec;
	uint32_t u, g;
	if (!parse_id(&s, &u) || *s++ != ':' || !parse_id(&s, &g) || *s)
		return -1;
	zv_fid.on = 1;
	zv_fid.uid = u;
	zv_fid.gid = g;
	return 0;
}

void zv_fakeid_db(const char *path) { db_path = path; }
void zv_fakeid_db_only(void) { zv_fid.db_only = 1; }

uint32_t zv_fid_guest_uid(uint32_t host) { return host == zv_fid.host_uid ? zv_fid.uid : ZV_FID_OVERFLOW; }
uint32_t zv_fid_guest_gid(uint32_t host) { return host == zv_fid.host_gid ? zv_fid.gid : ZV_FID_OVERFLOW; }

static uint32_t start_groups[ZV_CRED_GROUPS];
static uint32_t start_ngroups;

/* The credentials a run starts with: the identity in every id, root's
 * capabilities for uid 0 (the host's bounding set), the host's groups
 * through the id map. */
void zv_fid_start_cred(struct zv_creds *c)
{
	*c = (struct zv_creds){ 0 };
	c->uid = c->euid = c->suid = c->fsuid = zv_fid.uid;
	c->gid = c->egid = c->sgid = c->fsgid = zv_fid.gid;
	c->cap_bnd = zv_fid.cap_bnd;
	if (!zv_fid.uid)
		c->cap_prm = c->cap_eff = zv_fid.cap_bnd;
	zv_fid_set_groups(c, start_groups, start_ngroups);
}

static int make_dir(const char *path)
{
	long r = zv_sys3(__NR_mkdirat, AT_FDCWD, path, 0700);
	return r == 0 || r == -EEXIST;
}

/* The database beside the root: ROOT.owners.db. 0 if the name is too long. */
static int beside(const char *root, char *out, size_t n)
{
	size_t l = zv_strlen(root);
	while (l > 1 && root[l - 1] == '/')
		l--;
	if (l + 11 > n)
		return 0;
	memcpy(out, root, l);
	memcpy(out + l, ".owners.db", 11);
	return 1;
}

/* $XDG_STATE_HOME/zvisor/owners.db (~/.local/state/...), its directories
 * made. 0 if there is no such place. */
static int in_state_dir(char **envp, char *out, size_t n)
{
	const char *xdg = NULL, *home = NULL;
	for (; *envp; envp++) {
		if (zv_startswith(*envp, "XDG_STATE_HOME=/"))
			xdg = *envp + 15;
		else if (zv_startswith(*envp, "HOME=/"))
			home = *envp + 5;
	}
	char base[4000];
	if (xdg && zv_strlen(xdg) < 3900) {
		zv_snprintf(base, sizeof base, "%s", xdg);
	} else if (home && zv_strlen(home) < 3900) {
		zv_snprintf(base, sizeof base, "%s/.local", home);
		make_dir(base);
		zv_snprintf(base, sizeof base, "%s/.local/state", home);
	} else {
		return 0;
	}
	zv_snprintf(out, n, "%s/zvisor", base);
	if (!make_dir(base) || !make_dir(out))
		return 0;
	zv_snprintf(out, n, "%s/zvisor/owners.db", base);
	return 1;
}

static void hooks(void);

int zv_fid_suid_dumpable(void)
{
	char c = '0';
	long fd = zv_openat(AT_FDCWD, "/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC, 0);
	if (fd >= 0) {
		zv_sys3(__NR_read, fd, &c, 1);
		zv_close((int)fd);
	}
	return c >= '0' && c <= '2' ? c - '0' : 0;
}

/* zvisor run's set-up once the options are read: the host's ids,
 * capabilities and groups, the database. root: --root's directory, or
 * NULL. Returns 0, or the exit status after one line on stderr. */
int zv_fakeid_start(char **envp, const char *root)
{
	if (!zv_fid.on && (db_path || zv_fid.db_only)) {
		zv_dprintf(2, "zvisor: %s needs --fake-root or --ids\n", db_path ? "--fake-db" : "--fake-db-only");
		return 2;
	}
	if (!zv_fid.on)
		return 0;
	uint32_t r[3], g[3];
	zv_sys3(__NR_getresuid, &r[0], &r[1], &r[2]);
	zv_sys3(__NR_getresgid, &g[0], &g[1], &g[2]);
	zv_fid.host_uid = r[0];
	zv_fid.host_gid = g[0];
	zv_fid.no_new_privs = zv_sys2(__NR_prctl, PR_GET_NO_NEW_PRIVS, 0) == 1;
	zv_fid.last_cap = -1;
	for (int cap = 0; cap < 64; cap++) {
		long v = zv_sys2(__NR_prctl, PR_CAPBSET_READ, cap);
		if (v < 0)
			break;
		zv_fid.last_cap = cap;
		if (v)
			zv_fid.cap_bnd |= 1ULL << cap;
	}
	uint32_t host[64];
	long n = zv_sys2(__NR_getgroups, 64, host);
	for (long i = 0; i < n && start_ngroups < ZV_CRED_GROUPS; i++)
		start_groups[start_ngroups++] = zv_fid_guest_gid(host[i]);
	char path[4096];
	int e = -ENOENT;
	if (db_path) {
		if ((e = zv_fid_db_open(db_path)) < 0) {
			zv_dprintf(2, "zvisor: --fake-db: %s: %s\n", db_path,
				   e == -EINVAL ? "not a zvisor ownership database" : zv_strerror(-e));
			return 2;
		}
	} else {
		/* beside the root, else the user's state directory, else (no place
		 * of its own) in memory, for this run's processes */
		if (root && beside(root, path, sizeof path))
			e = zv_fid_db_open(path);
		if (e < 0 && in_state_dir(envp, path, sizeof path))
			e = zv_fid_db_open(path);
		if (e < 0 && (e = zv_fid_db_open(NULL)) < 0) {
			zv_dprintf(2, "zvisor: --fake-root: cannot make a database in memory: %s\n", zv_strerror(-e));
			return 126;
		}
	}
	zv_fid_procids_make();
	hooks();
	return 0;
}

static const char *decode(const char *s, struct zv_exec_carry *x);
static int encode(char *buf, size_t n, const struct zv_exec_carry *x);

ZV_EXEC_FIELD(fakeid, 320, 'I', encode, decode);

/* Exec state field I: the options, the database's fd, the exec'ing
 * thread's credentials, the table's fd; hexadecimal numbers separated by
 * dots. */
static int encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	if (!zv_fid.on)
		return -1;
	const struct zv_creds *c = &zv_current()->cred;
	int k = zv_snprintf(buf, n, "%x.%x.%x.%x.%x.%x.%x.%lx.%x.%x.%x.%x.%x.%x.%x.%x.%x.%x.%lx.%lx.%lx.%lx.%lx.%x.%x",
			    zv_fid.db_only, zv_fid.no_new_privs, zv_fid.uid, zv_fid.gid, zv_fid.host_uid, zv_fid.host_gid,
			    zv_fid.last_cap + 1, (unsigned long)zv_fid.cap_bnd, zv_fid.db_fd + 1, c->uid,
			    c->euid, c->suid, c->fsuid, c->gid, c->egid, c->sgid, c->fsgid,
			    zv_fid.xattrat + 1, (unsigned long)c->cap_inh, (unsigned long)c->cap_prm,
			    (unsigned long)c->cap_eff, (unsigned long)c->cap_bnd, (unsigned long)c->cap_amb,
			    c->securebits, c->ngroups);
	for (uint32_t i = 0; i < c->ngroups && k < (int)n; i++)
		k += zv_snprintf(buf + k, n - k, ".%x", c->groups[i]);
	if (k < (int)n)
		k += zv_snprintf(buf + k, n - k, ".%x", zv_fid_procids_fd + 1);
	return k;
}

static uint64_t next(const char **s)
{
	if (**s == '.')
		(*s)++;
	return zv_parse_hex(*s, s);
}

static const char *decode(const char *s, struct zv_exec_carry *x)
{
	struct zv_creds *c = &carried;
	zv_fid.on = 1;
	zv_fid.db_only = (int)next(&s);
	zv_fid.no_new_privs = (int)next(&s);
	zv_fid.uid = (uint32_t)next(&s);
	zv_fid.gid = (uint32_t)next(&s);
	zv_fid.host_uid = (uint32_t)next(&s);
	zv_fid.host_gid = (uint32_t)next(&s);
	zv_fid.last_cap = (int)next(&s) - 1;
	zv_fid.cap_bnd = next(&s);
	zv_fid.db_fd = (int)next(&s) - 1;
	if (zv_fid.db_fd >= 0)
		zv_keep_hidden_fd(&zv_fid.db_fd);
	c->uid = (uint32_t)next(&s);
	c->euid = (uint32_t)next(&s);
	c->suid = (uint32_t)next(&s);
	c->fsuid = (uint32_t)next(&s);
	c->gid = (uint32_t)next(&s);
	c->egid = (uint32_t)next(&s);
	c->sgid = (uint32_t)next(&s);
	c->fsgid = (uint32_t)next(&s);
	zv_fid.xattrat = (int)next(&s) - 1;
	c->cap_inh = next(&s);
	c->cap_prm = next(&s);
	c->cap_eff = next(&s);
	c->cap_bnd = next(&s);
	c->cap_amb = next(&s);
	c->securebits = (uint32_t)next(&s);
	uint32_t ng = (uint32_t)next(&s);
	c->ngroups = 0;
	for (uint32_t i = 0; i < ng && *s == '.'; i++)
		if (c->ngroups < ZV_CRED_GROUPS)
			c->groups[c->ngroups++] = (uint32_t)next(&s);
	if (*s == '.')
		zv_fid_procids_attach((int)next(&s) - 1);
	have_carried = 1;
	hooks();
	return s;
}

/* The new image's first thread: the credentials it inherits, then what
 * exec makes of them (set-user-ID and set-group-ID files, capabilities). */
static struct zv_thread *image_thread;
static int image_secure;

void zv_fakeid_image(struct zv_thread *t, const char *path)
{
	if (!zv_fid.on)
		return;
	if (have_carried) /* the host exec'd this image */
		t->cred = carried;
	else if (!cred_set) /* the first; an exec made in this process keeps t's */
		zv_fid_start_cred(&t->cred);
	have_carried = 0;
	cred_set = 1;
	t->cred_valid = 1;
	image_thread = t;
	struct zv_fid_stat s = { 0 };
	struct zv_fid_rec rec;
	struct zv_at at = { 0 };
	int mapped_uid = 0, mapped_gid = 0; /* the kernel ignores set-ID bits of an owner its map lacks */
	if (zv_at_lookup(path, 0, &at) == 0 && zv_fid_fstatat(at.dirfd, at.name, at.at_flags, &s) == 0) {
		int found = zv_fid_lookup(at.dirfd, at.name, at.at_flags, &s, &rec);
		mapped_uid = found || s.uid == zv_fid.host_uid;
		mapped_gid = found || s.gid == zv_fid.host_gid;
		zv_fid_apply(&s, found ? &rec : NULL);
	}
	int suid_ok = 0;
	if ((s.mode & 06000) && !zv_fid.no_new_privs) { /* nor from a nosuid mount */
		struct { uint64_t type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags, spare[4]; } fs;
		long fd = zv_openat(at.dirfd, at.name, O_PATH | O_CLOEXEC | (at.at_flags ? O_NOFOLLOW : 0), 0);
		suid_ok = fd >= 0 && zv_sys2(__NR_fstatfs, fd, &fs) == 0 && !(fs.flags & 2 /* ST_NOSUID */);
		if (fd >= 0)
			zv_close((int)fd);
	}
	zv_at_release(&at);
	struct zv_creds before = t->cred;
	image_secure = zv_fid_exec(&t->cred, s.mode, s.uid, s.gid, suid_ok && mapped_uid, suid_ok && mapped_gid);
	zv_fid.dumpable = zv_fid_exec_dumpable(&before, &t->cred) ? ZV_FID_DUMP_USER : zv_fid_suid_dumpable();
	zv_fid_publish(t);
}

/* AT_UID, AT_EUID, AT_GID, AT_EGID and AT_SECURE of the new image. */
static uint64_t aux(uint64_t type, uint64_t value)
{
	const struct zv_creds *c = image_thread ? &image_thread->cred : NULL;
	if (!c)
		return value;
	switch (type) {
	case 11: return c->uid;   /* AT_UID */
	case 12: return c->euid;  /* AT_EUID */
	case 13: return c->gid;   /* AT_GID */
	case 14: return c->egid;  /* AT_EGID */
	case 23: return image_secure; /* AT_SECURE */
	default: return value;
	}
}

/* /proc/PID/status: the ids and capabilities of c. */
static int status_line(const struct zv_creds *c, const char *line, size_t kl, char *buf, size_t size)
{
#define KEY(k) (kl == sizeof k - 1 && !memcmp(line, k, kl))
	if (KEY("Uid:"))
		return zv_snprintf(buf, size, "Uid:\t%u\t%u\t%u\t%u", c->uid, c->euid, c->suid, c->fsuid);
	if (KEY("Gid:"))
		return zv_snprintf(buf, size, "Gid:\t%u\t%u\t%u\t%u", c->gid, c->egid, c->sgid, c->fsgid);
	if (KEY("Groups:")) {
		int k = zv_snprintf(buf, size, "Groups:\t");
		for (uint32_t i = 0; i < c->ngroups; i++)
			k += zv_snprintf(buf + k, size - k, i ? " %u" : "%u", c->groups[i]);
		return k + zv_snprintf(buf + k, size - k, " ");
	}
	static const struct { const char *key; size_t off; } caps[] = {
		{ "CapInh:", __builtin_offsetof(struct zv_creds, cap_inh) },
		{ "CapPrm:", __builtin_offsetof(struct zv_creds, cap_prm) },
		{ "CapEff:", __builtin_offsetof(struct zv_creds, cap_eff) },
		{ "CapBnd:", __builtin_offsetof(struct zv_creds, cap_bnd) },
		{ "CapAmb:", __builtin_offsetof(struct zv_creds, cap_amb) },
	};
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
		if (kl == 7 && !memcmp(line, caps[i].key, 7))
			return zv_snprintf(buf, size, "%s\t%016lx", caps[i].key,
					   (unsigned long)*(const uint64_t *)((const char *)c + caps[i].off));
#undef KEY
	return 0;
}

static void hooks(void)
{
	zv_ids_make_virtual();
	zv_aux_hook = aux;
	zv_ids_status_hook = status_line;
	zv_ids_other_hook = zv_fid_other_creds;
	zv_ids_sender_hook = zv_fid_sender_uid;
}
