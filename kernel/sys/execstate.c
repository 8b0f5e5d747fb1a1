/* The state carried across execve: a row per field, its key, the
 * subsystem that owns it and how it is written and read (see execstate.h).
 * The word is "p=3,m=0,s=0,...": the core's fields in the table's order,
 * then the features' (ZV_EXEC_FIELD) in theirs; those whose encoder
 * declines are left out. Y must stay last: its value may hold commas. */
#include "zvisor.h"
#include "sys/execstate.h"
#include "lib/fmt.h"
#include "lib/string.h"

struct field {
	char key;
	int *num;                 /* an int of zv_proc, in decimal ... */
	zv_state_encoder *encode; /* ... unless these are set */
	zv_state_decoder *decode;
};

_Static_assert(sizeof(enum zv_platform) == sizeof(int) && sizeof(enum zv_rewrite) == sizeof(int) &&
	       sizeof(enum zv_vdso_mode) == sizeof(int) && sizeof(enum zv_exec_mode) == sizeof(int),
	       "enum fields are carried as ints");
#define NUM(k, member) { k, (int *)&zv_proc.member, NULL, NULL }

static int encode_mask(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return zv_snprintf(buf, n, "%lx", x->guest_mask);
}

static const char *decode_mask(const char *s, struct zv_exec_carry *x)
{
	x->guest_mask = zv_parse_hex(s, &s);
	return s;
}

static int encode_sigsys(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return zv_snprintf(buf, n, "%d", x->sigsys_blocked);
}

static const char *decode_sigsys(const char *s, struct zv_exec_carry *x)
{
	x->sigsys_blocked = (int)zv_parse_dec(s, &s);
	return s;
}

/* The signals the guest ignores, which the host keeps ignored across
 * execve: the new image need not ask the host for 64 dispositions. */
static int encode_ignored(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return zv_snprintf(buf, n, "%lx", x->ignored);
}

static const char *decode_ignored(const char *s, struct zv_exec_carry *x)
{
	x->ignored = zv_parse_hex(s, &s);
	x->ignored_known = 1;
	return s;
}

/* The path names an ELF file (no #! line) whose checks, the interpreter's
 * too, the exec'ing image made for the host's errnos: the new image need
 * not make them again (a file changed since fails at load, status 126). */
static int encode_resolved(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return x->resolved ? zv_snprintf(buf, n, "%d", x->resolved) : -1;
}

static const char *decode_resolved(const char *s, struct zv_exec_carry *x)
{
	x->resolved = (int)zv_parse_dec(s, &s);
	return s;
}

/* The pid the host keeps across execve: the new image asks no getpid. */
static int encode_hpid(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return x->hpid > 0 ? zv_snprintf(buf, n, "%d", x->hpid) : -1;
}

static const char *decode_hpid(const char *s, struct zv_exec_carry *x)
{
	long v = zv_parse_dec(s, &s);
	if (v <= 0 || v > 0x3fffffff)
		zv_die(126, "bad internal state");
	zv_proc.pid = zv_proc.hpid = (int)v;
	return s;
}

/* The resolution's files (F=FD.ID[.IFD.IID], hex; an ID is the seven
 * words of struct zv_file_id): the ELF and its interpreter, opened without
 * close-on-exec for the next image's load, which neither opens nor fstats
 * them again (sys/exec.c says when). */
static int encode_id(char *buf, size_t n, int fd, const struct zv_file_id *id)
{
	return zv_snprintf(buf, n, "%x.%lx.%lx.%lx.%lx.%lx.%lx.%lx", fd, id->dev, id->ino, id->size, id->mtime,
			   id->mtime_ns, id->ctime, id->ctime_ns);
}

static int encode_files(char *buf, size_t n, const struct zv_exec_carry *x)
{
	const struct zv_exec_files *f = &x->files;
	if (f->fd < 0)
		return -1;
	int k = encode_id(buf, n, f->fd, &f->id);
	if (f->ifd < 0 || (size_t)k + 1 >= n)
		return k; /* a cut word: the caller sees its length */
	buf[k] = '.';
	return k + 1 + encode_id(buf + k + 1, n - k - 1, f->ifd, &f->iid);
}

static const char *decode_id(const char *s, int *fd, struct zv_file_id *id)
{
	uint64_t w[8];
	for (int i = 0; i < 8; i++) {
		const char *e;
		w[i] = zv_parse_hex(s, &e);
		if (e == s || (i < 7 && *e != '.'))
			zv_die(126, "bad internal state");
		s = i < 7 ? e + 1 : e;
	}
	if (w[0] > 0x7fffffff)
		zv_die(126, "bad internal state");
	*fd = (int)w[0];
	*id = (struct zv_file_id){ w[1], w[2], w[3], w[4], w[5], w[6], w[7] };
	return s;
}

static const char *decode_files(const char *s, struct zv_exec_carry *x)
{
	struct zv_exec_files *f = &x->files;
	s = decode_id(s, &f->fd, &f->id);
	f->size = f->id.size;
	if (*s == '.') {
		s = decode_id(s + 1, &f->ifd, &f->iid);
		f->isize = f->iid.size;
	}
	return s;
}

/* The exec'ing thread's own zvisor fd (a CLONE_VM child may have one). */
static int encode_self_fd(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return zv_snprintf(buf, n, "%d", zv_self_fd(zv_current()));
}

/* "SIZE" or "SIZE.PART.PART": [vvar*]'s size, then its mappings' */
static int encode_vvar(char *buf, size_t n, const struct zv_exec_carry *x)
{
	if (!zv_proc.vvar_size)
		return -1;
	int k = zv_snprintf(buf, n, "%lx", zv_proc.vvar_size);
	for (int i = 0; i < zv_proc.vvar_parts && k > 0 && (size_t)k < n; i++)
		k += zv_snprintf(buf + k, n - k, ".%lx", zv_proc.vvar_part[i]);
	return k;
}

static const char *decode_vvar(const char *s, struct zv_exec_carry *x)
{
	zv_proc.vvar_size = zv_parse_hex(s, &s);
	zv_proc.vvar_parts = 0;
	while (*s == '.' && zv_proc.vvar_parts < ZV_VVAR_PARTS)
		zv_proc.vvar_part[zv_proc.vvar_parts++] = zv_parse_hex(s + 1, &s);
	return s;
}

static const struct field fields[] = {
	{ 'h', NULL, encode_hpid, decode_hpid }, /* main.c: the host pid (first: the others' decoders may use it) */
	NUM('p', platform),          /* intercept/: the platform */
	{ 'm', NULL, encode_mask, decode_mask },     /* sys/signal.c: the guest's mask */
	{ 's', NULL, encode_sigsys, decode_sigsys }, /* sys/signal.c: SIGSYS as the guest sees it */
	{ 'i', NULL, encode_ignored, decode_ignored }, /* sys/signal.c: the ignored signals */
	{ 'o', NULL, encode_resolved, decode_resolved }, /* sys/exec.c: the file was resolved (2: set-id) */
	{ 'F', NULL, encode_files, decode_files },       /* sys/exec.c: its fds and identities */
	NUM('c', count_fd),          /* trace/count.c: --count's shared table */
	NUM('e', err_fd),            /* main.c: the kept stderr */
	{ 'x', &zv_proc.self_fd, encode_self_fd, NULL }, /* sys/fs.c: zvisor's executable */
	NUM('l', leader_pid),        /* sys/proc.c: who prints the reports */
	NUM('f', seccomp_installed), /* intercept/plat_seccomp.c: the host filter is in place */
	NUM('q', seccomp_fd),        /* sys/seccomp.c: the guest's filters, in a memfd */
	NUM('r', rewrite),           /* intercept/: --rewrite */
	NUM('a', rewrite_after),     /* intercept/: a site is rewritten at its n-th SIGSYS */
	NUM('u', no_cred_cache),     /* sys/id.c: ask the host for ids */
	NUM('t', stats),             /* sys/entry.c: --stats */
	NUM('v', vdso_mode),         /* loader/vdso.c: --vdso */
	NUM('n', no_cache),          /* intercept/stubs.c: --no-cache */
	NUM('k', carry_fd),          /* sys/exec.c: the fd the file is named through */
	NUM('E', exec_mode),         /* sys/exec.c: --exec */
	{ 'V', NULL, encode_vvar, decode_vvar }, /* loader/vdso.c: [vvar*]'s size below the vDSO */
	{ 'T', NULL, zv_time_encode, zv_time_decode },             /* sys/vtime_spec.c: --time */
	/* then the features' (ZV_EXEC_FIELD) */
};
#define NFIELDS (sizeof fields / sizeof fields[0])

/* Field i of the core's table, then of the features' list: NULL past both. */
static const struct field *field_at(size_t i, struct field *tmp)
{
	if (i < NFIELDS)
		return &fields[i];
	i -= NFIELDS;
	if (i >= (size_t)(zv_exec_fields_end - zv_exec_fields_start))
		return NULL;
	const struct zv_exec_field *e = zv_exec_fields_start[i];
	*tmp = (struct field){ e->key, NULL, e->encode, e->decode };
	return tmp;
}

int zv_exec_state_format(char *buf, size_t n, const struct zv_exec_carry *x)
{
	size_t k = 0;
	struct field tmp;
	const struct field *f;
	for (size_t i = 0; (f = field_at(i, &tmp)); i++) {
		if (k + 3 >= n)
			return (int)n; /* cut: as snprintf, a length beyond the buffer */
		size_t at = k + zv_snprintf(buf + k, n - k, k ? ",%c=" : "%c=", f->key);
		int len = f->encode ? f->encode(buf + at, n - at, x) : zv_snprintf(buf + at, n - at, "%d", *f->num);
		if (len < 0) {
			buf[k] = 0; /* the field is left out */
			continue;
		}
		k = at + len;
	}
	return (int)k;
}

void zv_exec_state_parse(const char *s, struct zv_exec_carry *x)
{
	while (*s) {
		size_t i = 0;
		struct field tmp;
		const struct field *f;
		while ((f = field_at(i, &tmp)) && f->key != s[0])
			i++;
		if (!f || s[1] != '=')
			zv_die(126, "bad internal state");
		s += 2;
		if (f->decode)
			s = f->decode(s, x);
		else
			*f->num = (int)zv_parse_dec(s, &s);
		if (*s == ',')
			s++;
	}
}
