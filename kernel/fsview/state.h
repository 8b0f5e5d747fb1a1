/* The view's exec state field (state.c), registered by main.c. */
#ifndef ZV_FSVIEW_STATE_H
#define ZV_FSVIEW_STATE_H
#include "sys/execstate.h"
zv_state_encoder zv_fsv_encode;
zv_state_decoder zv_fsv_decode;
static inline void zv_fsv_register(void) { zv_exec_state_field('V', zv_fsv_encode, zv_fsv_decode); }
#endif
