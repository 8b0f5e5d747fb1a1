/* Unit tests of the classic-BPF checker and interpreter that run the guest's
 * own seccomp filters (kernel/sys/seccomp.c: valid_filter, run_filter):
 * what the host's seccomp accepts and refuses, each instruction's result,
 * each seccomp_data field. */
#include "sys/seccomp.c"
#include "unit.h"
#include "stubs.h"
#include <stddef.h>

/* What seccomp.c calls outside the interpreter. */
struct zv_proc zv_proc;
const struct zv_sysent zv_sysent[512]; /* strict mode's column: not reached */
const struct zv_sysent zv_sysent_none;
void zv_count_tsc_off(void) { UNIT_UNREACHED("zv_count_tsc_off"); }
void zv_die_by_signal(int sig) { UNIT_UNREACHED("zv_die_by_signal"); }
void zv_force_signal(struct zv_thread *t, struct zv_ucontext *uc, const zv_siginfo *si) { UNIT_UNREACHED("zv_force_signal"); }
long zv_host_call(struct zv_thread *t, long nr, long a, long b, long c, long d, long e, long f) { UNIT_UNREACHED("zv_host_call"); }
void *zv_kmap(size_t size, size_t align, int fd) { UNIT_UNREACHED("zv_kmap"); }
void zv_sandbox_on(void) { UNIT_UNREACHED("zv_sandbox_on"); }
long zv_sys_exit(struct zv_call *c) { UNIT_UNREACHED("zv_sys_exit"); }
long zv_event_seccomp_trace(struct zv_thread *t, struct zv_ucontext *uc, long nr, uint32_t data)
{
	UNIT_UNREACHED("zv_event_seccomp_trace");
}

#define N(a) (sizeof (a) / sizeof (a)[0])
#define S(code, k) BPF_STMT(code, k)
#define J(code, k, jt, jf) BPF_JUMP(code, k, jt, jf)
#define RET_A S(BPF_RET | BPF_A, 0)

static const struct seccomp_data data = {
	.nr = 39, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = 0x123456789abcdef0ULL,
	.args = { 0x1111111122222222ULL, 0x3333333344444444ULL, 0x5555555566666666ULL,
		  0x7777777788888888ULL, 0x99999999aaaaaaaaULL, 0xbbbbbbbbccccccccULL },
};

/* run_filter of a program valid_filter must accept. */
static uint32_t run_valid(const struct sock_filter *p, unsigned n, const char *name)
{
	CHECK(valid_filter(p, n), "%s is refused", name);
	return run_filter(p, &data);
}
#define RUN(prog) run_valid(prog, N(prog), #prog)
#define VALID(prog) valid_filter(prog, N(prog))

/* A ALU-op v, through K and through X, with A = a. */
static uint32_t alu_k(uint16_t op, uint32_t a, uint32_t v)
{
	struct sock_filter p[] = { S(BPF_LD | BPF_IMM, a), S(BPF_ALU | op | BPF_K, v), RET_A };
	return RUN(p);
}

static uint32_t alu_x(uint16_t op, uint32_t a, uint32_t v)
{
	struct sock_filter p[] = { S(BPF_LDX | BPF_IMM, v), S(BPF_LD | BPF_IMM, a), S(BPF_ALU | op | BPF_X, 0), RET_A };
	return RUN(p);
}

static void test_checker(void)
{
	struct sock_filter ok[] = { S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	CHECK(VALID(ok), "a lone RET");
	CHECK(!valid_filter(ok, 0), "an empty program");
	static struct sock_filter big[MAX_INSNS + 1];
	for (unsigned i = 0; i < N(big); i++)
		big[i] = (struct sock_filter)S(BPF_RET | BPF_K, 0);
	CHECK(valid_filter(big, MAX_INSNS), "BPF_MAXINSNS instructions");
	CHECK(!valid_filter(big, MAX_INSNS + 1), "one more than BPF_MAXINSNS");
	struct sock_filter no_ret[] = { S(BPF_LD | BPF_IMM, 1) };
	CHECK(!VALID(no_ret), "no RET at the end");
	struct sock_filter tail[] = { S(BPF_RET | BPF_K, 0), S(BPF_LD | BPF_IMM, 1) };
	CHECK(!VALID(tail), "falls off the end");

	/* jumps: forward only, inside the program */
	struct sock_filter ja_last[] = { S(BPF_JMP | BPF_JA, 1), S(BPF_RET | BPF_K, 1), S(BPF_RET | BPF_K, 2) };
	CHECK(VALID(ja_last), "ja to the last instruction");
	struct sock_filter ja_out[] = { S(BPF_JMP | BPF_JA, 2), S(BPF_RET | BPF_K, 1), S(BPF_RET | BPF_K, 2) };
	CHECK(!VALID(ja_out), "ja past the end");
	struct sock_filter ja_huge[] = { S(BPF_JMP | BPF_JA, 0xffffffff), S(BPF_RET | BPF_K, 1) };
	CHECK(!VALID(ja_huge), "ja by 2^32-1 (wraps backwards)");
	struct sock_filter jt_out[] = { J(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0), S(BPF_RET | BPF_K, 1), S(BPF_RET | BPF_K, 2) };
	CHECK(!VALID(jt_out), "jt past the end");
	struct sock_filter jf_out[] = { J(BPF_JMP | BPF_JGT | BPF_X, 0, 0, 2), S(BPF_RET | BPF_K, 1), S(BPF_RET | BPF_K, 2) };
	CHECK(!VALID(jf_out), "jf past the end");
	struct sock_filter jf_last[] = { J(BPF_JMP | BPF_JSET | BPF_K, 0, 0, 1), S(BPF_RET | BPF_K, 1), S(BPF_RET | BPF_K, 2) };
	CHECK(VALID(jf_last), "jf to the last instruction");
	struct sock_filter jne[] = { J(BPF_JMP | 0x50 /* eBPF JNE */, 0, 0, 0), S(BPF_RET | BPF_K, 1) };
	CHECK(!VALID(jne), "a jump classic BPF lacks");

	/* loads of seccomp_data: aligned words inside it */
	for (uint32_t k = 0; k < sizeof(struct seccomp_data) + 8; k++) {
		struct sock_filter p[] = { S(BPF_LD | BPF_W | BPF_ABS, k), RET_A };
		CHECK(VALID(p) == (k % 4 == 0 && k < sizeof(struct seccomp_data)), "ld abs %u", k);
	}
	struct sock_filter ldh[] = { S(BPF_LD | BPF_H | BPF_ABS, 0), RET_A };
	CHECK(!VALID(ldh), "a half-word load");
	struct sock_filter ldb[] = { S(BPF_LD | BPF_B | BPF_ABS, 0), RET_A };
	CHECK(!VALID(ldb), "a byte load");
	struct sock_filter ind[] = { S(BPF_LD | BPF_W | BPF_IND, 0), RET_A };
	CHECK(!VALID(ind), "an indirect load");
	struct sock_filter mem_ok[] = { S(BPF_ST, 15), S(BPF_LDX | BPF_MEM, 15), RET_A };
	CHECK(VALID(mem_ok), "scratch word 15");
	struct sock_filter mem_out[] = { S(BPF_ST, 16), RET_A };
	CHECK(!VALID(mem_out), "scratch word 16");
	struct sock_filter mem_ld_out[] = { S(BPF_LD | BPF_MEM, 16), RET_A };
	CHECK(!VALID(mem_ld_out), "load of scratch word 16");

	/* ALU: what the host refuses (checked on Linux 6.x: EINVAL) */
	struct sock_filter div0[] = { S(BPF_ALU | BPF_DIV | BPF_K, 0), RET_A };
	CHECK(!VALID(div0), "division by a constant 0");
	struct sock_filter divx[] = { S(BPF_ALU | BPF_DIV | BPF_X, 0), RET_A };
	CHECK(VALID(divx), "division by X");
	struct sock_filter modk[] = { S(BPF_ALU | BPF_MOD | BPF_K, 3), RET_A };
	CHECK(!VALID(modk), "BPF_MOD (seccomp refuses it)");
	struct sock_filter modx[] = { S(BPF_ALU | BPF_MOD | BPF_X, 0), RET_A };
	CHECK(!VALID(modx), "BPF_MOD by X");
	struct sock_filter lsh31[] = { S(BPF_ALU | BPF_LSH | BPF_K, 31), RET_A };
	CHECK(VALID(lsh31), "shift left by 31");
	struct sock_filter lsh32[] = { S(BPF_ALU | BPF_LSH | BPF_K, 32), RET_A };
	CHECK(!VALID(lsh32), "shift left by a constant 32");
	struct sock_filter rsh32[] = { S(BPF_ALU | BPF_RSH | BPF_K, 32), RET_A };
	CHECK(!VALID(rsh32), "shift right by a constant 32");
	struct sock_filter negx[] = { S(BPF_ALU | BPF_NEG | BPF_X, 0), RET_A };
	CHECK(!VALID(negx), "NEG with the X bit");
	struct sock_filter arsh[] = { S(BPF_ALU | 0xc0 /* eBPF ARSH */, 1), RET_A };
	CHECK(!VALID(arsh), "an ALU op classic BPF lacks");
	struct sock_filter misc[] = { S(BPF_MISC | 0x10, 0), RET_A };
	CHECK(!VALID(misc), "an unknown MISC op");
}

static void test_alu(void)
{
	static const struct { uint16_t op; uint32_t a, v, want; } t[] = {
		{ BPF_ADD, 0xfffffff0, 0x20, 0x10 },          /* wraps at 32 bits */
		{ BPF_SUB, 5, 7, 0xfffffffe },
		{ BPF_MUL, 0x10000, 0x10001, 0x10000 },        /* low 32 bits */
		{ BPF_DIV, 100, 7, 14 },
		{ BPF_DIV, 0xffffffff, 2, 0x7fffffff },        /* unsigned */
		{ BPF_OR, 0xf0, 0x0f, 0xff },
		{ BPF_AND, 0xf0f0, 0xff00, 0xf000 },
		{ BPF_XOR, 0xff, 0x0f, 0xf0 },
		{ BPF_LSH, 1, 31, 0x80000000 },
		{ BPF_LSH, 3, 0, 3 },
		{ BPF_RSH, 0x80000000, 31, 1 },                /* logical */
		{ BPF_RSH, 0xf0, 4, 0xf },
	};
	for (unsigned i = 0; i < N(t); i++) {
		CHECK_EQ(alu_k(t[i].op, t[i].a, t[i].v), t[i].want);
		CHECK_EQ(alu_x(t[i].op, t[i].a, t[i].v), t[i].want);
	}
	struct sock_filter neg[] = { S(BPF_LD | BPF_IMM, 5), S(BPF_ALU | BPF_NEG, 0), RET_A };
	CHECK_EQ(RUN(neg), (uint32_t)-5);
	/* shifts by X of 32 or more: the count's low 5 bits, as the host does */
	CHECK_EQ(alu_x(BPF_LSH, 5, 32), 5);
	CHECK_EQ(alu_x(BPF_LSH, 5, 33), 10);
	CHECK_EQ(alu_x(BPF_RSH, 0x800, 33), 0x400);
	CHECK_EQ(alu_x(BPF_RSH, 0x800, 0xffffffff), 0);
	/* division by X = 0 ends the program with 0 (SECCOMP_RET_KILL_THREAD) */
	struct sock_filter divz[] = { S(BPF_LD | BPF_IMM, 7), S(BPF_LDX | BPF_IMM, 0), S(BPF_ALU | BPF_DIV | BPF_X, 0),
				      S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	CHECK_EQ(RUN(divz), SECCOMP_RET_KILL_THREAD);
}

static void test_loads(void)
{
	/* each word of seccomp_data */
	const uint32_t *w = (const uint32_t *)&data;
	for (uint32_t k = 0; k < sizeof data; k += 4) {
		struct sock_filter p[] = { S(BPF_LD | BPF_W | BPF_ABS, k), RET_A };
		CHECK_EQ(RUN(p), w[k / 4]);
	}
	struct sock_filter nr[] = { S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), RET_A };
	CHECK_EQ(RUN(nr), 39);
	struct sock_filter arch[] = { S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), RET_A };
	CHECK_EQ(RUN(arch), AUDIT_ARCH_X86_64);
	struct sock_filter iplo[] = { S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)), RET_A };
	CHECK_EQ(RUN(iplo), 0x9abcdef0);
	struct sock_filter iphi[] = { S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4), RET_A };
	CHECK_EQ(RUN(iphi), 0x12345678);
	for (int i = 0; i < 6; i++) {
		struct sock_filter lo[] = { S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i])), RET_A };
		struct sock_filter hi[] = { S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]) + 4), RET_A };
		CHECK_EQ(RUN(lo), (uint32_t)data.args[i]);
		CHECK_EQ(RUN(hi), (uint32_t)(data.args[i] >> 32));
	}
	struct sock_filter len[] = { S(BPF_LD | BPF_W | BPF_LEN, 0), RET_A };
	CHECK_EQ(RUN(len), sizeof(struct seccomp_data));
	struct sock_filter xlen[] = { S(BPF_LDX | BPF_W | BPF_LEN, 0), S(BPF_MISC | BPF_TXA, 0), RET_A };
	CHECK_EQ(RUN(xlen), 64);
	/* registers and scratch memory start at 0 */
	struct sock_filter a0[] = { RET_A };
	CHECK_EQ(RUN(a0), 0);
	struct sock_filter x0[] = { S(BPF_MISC | BPF_TXA, 0), RET_A };
	CHECK_EQ(RUN(x0), 0);
	struct sock_filter m0[] = { S(BPF_LD | BPF_IMM, 9), S(BPF_LD | BPF_MEM, 7), RET_A };
	CHECK_EQ(RUN(m0), 0);
	struct sock_filter mem[] = { S(BPF_LD | BPF_IMM, 11), S(BPF_ST, 3), S(BPF_LDX | BPF_IMM, 22), S(BPF_STX, 4),
				     S(BPF_LD | BPF_MEM, 4), S(BPF_LDX | BPF_MEM, 3), S(BPF_ALU | BPF_SUB | BPF_X, 0), RET_A };
	CHECK_EQ(RUN(mem), 11);
	struct sock_filter tax[] = { S(BPF_LD | BPF_IMM, 0x77), S(BPF_MISC | BPF_TAX, 0), S(BPF_LD | BPF_IMM, 0),
				     S(BPF_MISC | BPF_TXA, 0), RET_A };
	CHECK_EQ(RUN(tax), 0x77);
}

/* A = a, then the jump op against v (K or X): 1 if taken, 2 if not. */
static uint32_t jump(uint16_t op, int x, uint32_t a, uint32_t v)
{
	struct sock_filter p[] = { S(BPF_LD | BPF_IMM, a), S(BPF_LDX | BPF_IMM, x ? v : 0),
				   J(BPF_JMP | op | (x ? BPF_X : BPF_K), x ? 0 : v, 1, 0),
				   S(BPF_RET | BPF_K, 2), S(BPF_RET | BPF_K, 1) };
	return RUN(p);
}

static void test_jumps(void)
{
	for (int x = 0; x < 2; x++) {
		CHECK_EQ(jump(BPF_JEQ, x, 5, 5), 1);
		CHECK_EQ(jump(BPF_JEQ, x, 5, 6), 2);
		CHECK_EQ(jump(BPF_JGT, x, 6, 5), 1);
		CHECK_EQ(jump(BPF_JGT, x, 5, 5), 2);
		CHECK_EQ(jump(BPF_JGT, x, 0x80000000, 1), 1); /* unsigned */
		CHECK_EQ(jump(BPF_JGE, x, 5, 5), 1);
		CHECK_EQ(jump(BPF_JGE, x, 4, 5), 2);
		CHECK_EQ(jump(BPF_JSET, x, 6, 2), 1);
		CHECK_EQ(jump(BPF_JSET, x, 6, 9), 2);
	}
	struct sock_filter ja[] = { S(BPF_JMP | BPF_JA, 2), S(BPF_RET | BPF_K, 1), S(BPF_RET | BPF_K, 2),
				    S(BPF_RET | BPF_K, 3) };
	CHECK_EQ(RUN(ja), 3);
	/* jt and jf of 255 (the largest), past a block of loads */
	static struct sock_filter far[260];
	far[0] = (struct sock_filter)J(BPF_JMP | BPF_JEQ | BPF_K, 0, 255, 0);
	for (unsigned i = 1; i < N(far) - 1; i++)
		far[i] = (struct sock_filter)S(BPF_LD | BPF_IMM, i);
	far[N(far) - 1] = (struct sock_filter)RET_A;
	CHECK_EQ(RUN(far), N(far) - 2); /* jumps to 256, then loads 256..258 */
	far[0].jt = 0;
	far[0].jf = 255;
	far[0].k = 1; /* A (0) != 1: jf */
	CHECK_EQ(RUN(far), N(far) - 2);
}

static void test_returns(void)
{
	static const uint32_t rets[] = { SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD, SECCOMP_RET_TRAP | 7,
					 SECCOMP_RET_ERRNO | 1, SECCOMP_RET_ERRNO | 0xffff, SECCOMP_RET_USER_NOTIF,
					 SECCOMP_RET_TRACE | 3, SECCOMP_RET_LOG, SECCOMP_RET_ALLOW, 0x12345678 };
	for (unsigned i = 0; i < N(rets); i++) {
		struct sock_filter k[] = { S(BPF_RET | BPF_K, rets[i]) };
		CHECK_EQ(RUN(k), rets[i]); /* returned whole: the caller picks the action */
		struct sock_filter a[] = { S(BPF_LD | BPF_IMM, rets[i]), RET_A };
		CHECK_EQ(RUN(a), rets[i]);
	}
	/* a typical filter: allow getpid, ERRNO(EPERM) for the rest */
	struct sock_filter f[] = {
		S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		J(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		S(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		J(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
		S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
	};
	CHECK_EQ(RUN(f), SECCOMP_RET_ALLOW);
}

void unit_main(void)
{
	test_checker();
	test_alu();
	test_loads();
	test_jumps();
	test_returns();
}
