/* The help texts (help.c). */
#ifndef ZV_HELP_H
#define ZV_HELP_H
extern const char zv_usage_text[], zv_run_help[], zv_trace_help[], zv_main_help[];
#endif
