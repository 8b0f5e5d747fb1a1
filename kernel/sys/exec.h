/* execve's checks (sys/execelf.c, sys/resolve.c): zv_exec_resolve() decides
 * what execve(path, argv) would run, following #! lines as the host does,
 * and fails with the host's errno. The loader (loader/) maps what it
 * chose. */
#ifndef ZV_SYS_EXEC_H
#define ZV_SYS_EXEC_H
#include <stdint.h>
#include <stddef.h>

#define ZV_PATH_MAX 4096
/* #! nesting the host allows: exec_binprm() fails with ELOOP at depth > 5, so
 * five nested scripts run and a sixth is ELOOP (measured on 6.x). */
#define ZV_SCRIPT_DEPTH 5

/* The fields every resolution writes come first, so that a plain ELF's
 * touches one page of the 10 KiB (each page is a fault, at every exec). */
/* The ELF file and its interpreter as the resolution opened them (O_CLOEXEC;
 * -1 when not kept), for the loader of an exec made in this process: one
 * open and one header read per file, not two. */
#define ZV_EXEC_HEAD 1024 /* the first bytes of each, read once: headers and PT_INTERP */
/* A file's identity as its fstat gave it when opened, in the site cache's
 * key order (intercept/sitecache.c): the loader's code mappings take it
 * instead of an fstat each. */
struct zv_file_id {
	uint64_t dev, ino, size, mtime, mtime_ns, ctime, ctime_ns;
};
struct zv_exec_files {
	int fd, ifd;
	uint64_t size, isize;
	const char *head, *ihead; /* their first bytes (headn, iheadn of them), or NULL */
	long headn, iheadn;
	struct zv_file_id id, iid; /* fd's and ifd's */
};
#define ZV_EXEC_FILES_NONE ((struct zv_exec_files){ .fd = -1, .ifd = -1, .headn = -1, .iheadn = -1 })
_Static_assert(sizeof(struct zv_file_id) == 7 * sizeof(uint64_t), "the site cache's seven words");

struct zv_resolved {
	struct zv_exec_files files; /* kept only by zv_exec_resolve_keep */
	char head[ZV_EXEC_HEAD], ihead[ZV_EXEC_HEAD]; /* files.head's and files.ihead's bytes */
	/* For a #! script, argv' = prefix[0..nprefix) followed by argv[1..]:
	 * prefix is [interp, optional-arg, ..., path] as the host builds it.
	 * nprefix == 0: not a script, argv is used unchanged. */
	int nprefix;
	int setid;     /* the ELF file is set-user-ID or set-group-ID (bits the host would honour) */
	char why[160]; /* one-line reason on failure, e.g. "not an ELF file" */
	char *prefix[3 * ZV_SCRIPT_DEPTH + 1];
	char elf[ZV_PATH_MAX]; /* the ELF file to map: path itself, or the final #! interpreter */
	char words[ZV_SCRIPT_DEPTH * 256 + ZV_PATH_MAX]; /* storage for prefix strings */
};

/* Returns 0, or -errno as the host's execve would give it (ENOENT, EACCES,
 * ENOEXEC, ENOTDIR, ELOOP, ENAMETOOLONG, and for a bad PT_INTERP EIO, EINVAL
 * or ELIBBAD). An ELF zvisor cannot host (32-bit, not x86-64, corrupt or
 * truncated headers) is -ENOEXEC with a reason. The interpreter named in
 * PT_INTERP is checked too. why is set on every failure (one printable line).
 * host_checked: the host has just judged path itself executable
 * (AT_EXECVE_CHECK), so its permission and file-type checks are not made
 * again; a #! interpreter or PT_INTERP is still checked. */
int zv_exec_resolve(const char *path, int host_checked, struct zv_resolved *r);
/* The same, and on success r->files holds the ELF file and its interpreter
 * open: the caller closes them (zv_exec_files_close). inherit: opened
 * without O_CLOEXEC, for the host's execve of zvisor to hand them to the
 * next image (sys/exec.c; only where no other task shares the fd table). */
int zv_exec_resolve_keep(const char *path, int host_checked, struct zv_resolved *r, int inherit);
void zv_exec_files_close(struct zv_exec_files *f);
#endif
