/* The decoders and flag tables that the rows' trace column names by id
 * (sys/sysdesc.h): the table is data, trace implements each id here. */
#include "trace/decode.h"
#include "trace/names.h"

#define DECODER(n) [ZV_DEC_##n] = zv_dec_##n,
zv_decoder *const zv_decoders[ZV_DEC_COUNT] = {
	ZV_DECODERS(DECODER)
	ZV_RESULT_DECODERS(DECODER)
};

#define NAMES(n) extern const struct zv_names zv_n_##n;
ZV_FLAG_TABLES(NAMES)
#define TABLE(n) [ZV_NAMES_##n] = &zv_n_##n,
const struct zv_names *const zv_flag_tables[ZV_NAMES_COUNT] = {
	ZV_FLAG_TABLES(TABLE)
};
