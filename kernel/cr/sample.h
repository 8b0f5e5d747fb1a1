/* A cheap estimate of what compressing a file would save (cr/sample.c). */
#ifndef ZV_CR_SAMPLE_H
#define ZV_CR_SAMPLE_H
#include <stdint.h>
int zv_cr_sample_saving(const char *path, uint64_t size); /* percent of a sample's bytes found repeated */
#endif
