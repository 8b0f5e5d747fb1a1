/* futex as strace prints it (decode.h): which of the last three arguments
 * are shown, and how, depends on the operation. */
#include "zvisor.h"
#include "trace/decode.h"

static void bitset(struct zv_tb *b, uint32_t v)
{
	if (v == 0xffffffff)
		tb_puts(b, ", FUTEX_BITSET_MATCH_ANY");
	else
		tb_printf(b, v ? ", 0x%x" : ", %u", v);
}

/* FUTEX_WAKE_OP's operation: FUTEX_OP_SET<<28|0<<12|FUTEX_OP_CMP_GT<<24|0x1 */
static void wake_op(struct zv_tb *b, uint32_t v)
{
	static const char *const ops[] = { "SET", "ADD", "OR", "ANDN", "XOR" };
	static const char *const cmps[] = { "EQ", "NE", "LT", "LE", "GT", "GE" };
	uint32_t op = v >> 28 & 7, cmp = v >> 24 & 15, oparg = v >> 12 & 0xfff, cmparg = v & 0xfff;
	if (v >> 31)
		tb_puts(b, "FUTEX_OP_OPARG_SHIFT|");
	if (op < 5)
		tb_printf(b, "FUTEX_OP_%s<<28", ops[op]);
	else
		tb_printf(b, "%u<<28", op);
	tb_printf(b, oparg ? "|0x%x<<12" : "|%u<<12", oparg);
	if (cmp < 6)
		tb_printf(b, "|FUTEX_OP_CMP_%s<<24", cmps[cmp]);
	else
		tb_printf(b, "|%u<<24", cmp);
	tb_printf(b, cmparg ? "|0x%x" : "|%u", cmparg);
}

/* futex(uaddr, op, val, timeout or val2, uaddr2, val3): which of the last
 * three strace shows depends on the operation */
void zv_dec_futex(struct zv_tb *b, const struct zv_tcall *c)
{
	int op = (int)c->a[1], cmd = op & 127;
	tb_ptr(b, (uint64_t)c->a[0]);
	SEP(b);
	tb_enum(b, (uint64_t)cmd, &zv_n_futex_ops, "%d");
	if (op & 128)
		tb_puts(b, "_PRIVATE");
	if (op & 256)
		tb_puts(b, "|FUTEX_CLOCK_REALTIME");
	switch (cmd) {
	case 6: case 13: /* LOCK_PI, LOCK_PI2: the timeout only */
		SEP(b);
		tb_timespec(b, (uint64_t)c->a[3]);
		return;
	case 7: case 8: /* UNLOCK_PI, TRYLOCK_PI */
		return;
	}
	tb_printf(b, ", %d", (int)c->a[2]);
	switch (cmd) {
	case 0: /* WAIT */
		SEP(b);
		tb_timespec(b, (uint64_t)c->a[3]);
		break;
	case 9: /* WAIT_BITSET */
		SEP(b);
		tb_timespec(b, (uint64_t)c->a[3]);
		bitset(b, (uint32_t)c->a[5]);
		break;
	case 10: /* WAKE_BITSET */
		bitset(b, (uint32_t)c->a[5]);
		break;
	case 3: case 4: case 12: /* REQUEUE, CMP_REQUEUE, CMP_REQUEUE_PI */
		tb_printf(b, ", %u, ", (unsigned)c->a[3]);
		tb_ptr(b, (uint64_t)c->a[4]);
		if (cmd != 3)
			tb_printf(b, ", %u", (unsigned)c->a[5]);
		break;
	case 5: /* WAKE_OP */
		tb_printf(b, ", %u, ", (unsigned)c->a[3]);
		tb_ptr(b, (uint64_t)c->a[4]);
		SEP(b);
		wake_op(b, (uint32_t)c->a[5]);
		break;
	case 11: /* WAIT_REQUEUE_PI */
		SEP(b);
		tb_timespec(b, (uint64_t)c->a[3]);
		SEP(b);
		tb_ptr(b, (uint64_t)c->a[4]);
		break;
	case 1: case 2: /* WAKE, FD */
		break;
	default:
		tb_printf(b, ", 0x%lx, 0x%lx, %d", c->a[3], c->a[4], (int)c->a[5]);
	}
}
