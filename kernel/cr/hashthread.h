/* The pages' hash on a second host thread (cr/hashthread.c), so that it
 * runs beside their write instead of before it (docs/DESIGN.md, "What a
 * checkpoint spends its time on"). */
#ifndef ZV_CR_HASHTHREAD_H
#define ZV_CR_HASHTHREAD_H
#include <stdint.h>
#include "cr/stream.h"

struct zv_cr_hashq;
/* The thread's memory (its state, queue and stack): mapped by the caller,
 * aligned to its size, and the checkpoint's own (zv_cr_scratch). */
#define ZV_CR_HASHQ_BLOCK (128UL << 10)
/* A thread on block that goes on hashing from state *from (copied):
 * ranges are queued to it in the stream's order. NULL when none can be
 * made (the caller hashes in line). */
struct zv_cr_hashq *zv_cr_hashq_start(void *block, const struct zv_cr_hasher *from);
/* Queues [p, p + len), which must not change until zv_cr_hashq_join. */
void zv_cr_hashq_add(struct zv_cr_hashq *q, const void *p, uint64_t len);
/* Returns once everything queued is hashed (before memory it reads is
 * made unreadable again). */
void zv_cr_hashq_drain(struct zv_cr_hashq *q);
/* Ends the thread once it hashed everything: *to gets the state, and
 * its block is free again. */
void zv_cr_hashq_join(struct zv_cr_hashq *q, struct zv_cr_hasher *to);
#endif
