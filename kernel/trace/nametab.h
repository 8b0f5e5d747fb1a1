/* The tables of names (trace/names_*.c): TABLE(name, entries...) defines
 * zv_n_name (trace/names.h); E(NAME, value) is an entry named as its
 * constant. */
#ifndef ZV_TRACE_NAMETAB_H
#define ZV_TRACE_NAMETAB_H
#include "trace/names.h"

#define TABLE(name, ...) \
	static const struct zv_name name##_v[] = { __VA_ARGS__ }; \
	const struct zv_names zv_n_##name = { name##_v, sizeof name##_v / sizeof name##_v[0] }
#define E(x, v) { v, #x }
#endif
