/* The kernel state an exec'd image inherits (sys/execstate.c): one argv
 * word of KEY=VALUE fields separated by commas, written by execve
 * (sys/exec.c) and read by the internal __exec command (main.c). Each
 * field's encoder and decoder belong to the subsystem that owns the state:
 * the core's are listed in execstate.c, a feature's attach with
 * ZV_EXEC_FIELD (below). */
#ifndef ZV_SYS_EXECSTATE_H
#define ZV_SYS_EXECSTATE_H
#include <stddef.h>
#include <stdint.h>
#include "sys/exec.h"

/* What belongs to the exec'ing thread rather than to zv_proc. */
struct zv_exec_carry {
	uint64_t guest_mask;   /* the guest's signal mask */
	int sigsys_blocked;    /* the guest believes SIGSYS is blocked */
	int ignored_known;     /* the exec'ing image said which signals are ignored: */
	uint64_t ignored;      /* those the host keeps ignored across execve */
	int resolved;          /* the path is an ELF file the exec'ing image resolved (no #!); 2: set-id */
	int pid;               /* the exec'ing thread's process as the guest knows it (a vfork child's own) */
	struct zv_exec_files files; /* the resolved ELF and its interpreter, open across the execve (fd -1: none) */
	int hpid;              /* the process's host pid after the execve (the exec'ing thread's tgid), 0: ask */
};

/* An encoder writes a field's value (without "KEY=") into buf and returns
 * its length as snprintf does, or -1 to leave the field out. A decoder
 * reads a value and returns where it stopped. */
typedef int zv_state_encoder(char *buf, size_t n, const struct zv_exec_carry *x);
typedef const char *zv_state_decoder(const char *s, struct zv_exec_carry *x);

/* Returns the length written, as snprintf. */
int zv_exec_state_format(char *buf, size_t n, const struct zv_exec_carry *x);
/* Sets zv_proc and *x; a malformed word ends zvisor (status 126). */
void zv_exec_state_parse(const char *s, struct zv_exec_carry *x);

/* A feature's field: ZV_EXEC_FIELD(name, order, 'K', encoder, decoder);
 * in its own file. The word holds the core's fields (execstate.c), then
 * the features' in their order (three digits, sorted by the linker:
 * kernel/zvisor.ld). In use: 100 w (intercept/sitecache.c: the vDSO's
 * windows), 200 K (cr/freeze.c: --checkpoint-on), 210 J (cr/pids.c: a restored
 * process's ids), 300 R (fsview/state.c:
 * --root's view), 310 C (intercept/sitecache.c: the cache's directory
 * under a root), 320 I (fakeid/config.c: --fake-root, --ids), 330 z
 * (killexit.c: --kill-on-exit's mark), 337 y (sys/mm.c: the personality),
 * 340 P (ptrace/layer.c: the tracer of
 * a traced image), 800 X (trace: the
 * output fd and whether the thread is traced), 999 Y (trace: the options'
 * text, last since it may hold commas). */
struct zv_exec_field {
	char key;
	zv_state_encoder *encode;
	zv_state_decoder *decode;
};
#define ZV_EXEC_FIELD(name, order, key, encoder, decoder) \
	__attribute__((used, section(".zv_exec_fields." #order "." #name))) \
	static const struct zv_exec_field *const zv_exec_field_##name = \
		&(const struct zv_exec_field){ key, encoder, decoder }
extern const struct zv_exec_field *const zv_exec_fields_start[], *const zv_exec_fields_end[];

/* The core's fields with encoders of their own. */
zv_state_encoder zv_time_encode;        /* sys/vtime_spec.c: T= */
zv_state_decoder zv_time_decode;
#endif
