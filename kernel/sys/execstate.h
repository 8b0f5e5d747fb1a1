/* The kernel state an exec'd image inherits (sys/execstate.c): one argv
 * word of KEY=VALUE fields separated by commas, written by execve
 * (sys/exec.c) and read by the internal __exec command (main.c). Each
 * field's encoder and decoder belong to the subsystem that owns the state;
 * the table in execstate.c lists them all. */
#ifndef ZV_SYS_EXECSTATE_H
#define ZV_SYS_EXECSTATE_H
#include <stddef.h>
#include <stdint.h>

/* What belongs to the exec'ing thread rather than to zv_proc. */
struct zv_exec_carry {
	uint64_t guest_mask;   /* the guest's signal mask */
	int sigsys_blocked;    /* the guest believes SIGSYS is blocked */
	int ignored_known;     /* the exec'ing image said which signals are ignored: */
	uint64_t ignored;      /* those the host keeps ignored across execve */
	int resolved;          /* the path is an ELF file the exec'ing image resolved (no #!) */
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

/* The subsystems' fields. */
zv_state_encoder zv_time_encode;        /* sys/vtime_spec.c: T= */
zv_state_decoder zv_time_decode;
zv_state_encoder zv_trace_encode_out;   /* trace: X= the output fd and whether the thread is traced */
zv_state_decoder zv_trace_decode_out;
zv_state_encoder zv_pt_encode;          /* ptrace/layer.c: P= the tracer of a traced image */
zv_state_decoder zv_pt_decode;
zv_state_encoder zv_trace_encode_opts;  /* trace: Y= the options' text (last: it may hold commas) */
zv_state_decoder zv_trace_decode_opts;
#endif
