/* tests/abi/c99_check.c - the ABI headers are valid C99 (built with -std=c99 -pedantic -Werror). */
#include "kiln/lir.h"
#include "kiln/plugin.h"

/* A plugin table written in plain C, to prove the header is usable from C. */
static kiln_error* c99_device_count(uint32_t* out_count) {
  *out_count = 0;
  return NULL;
}

static kiln_error* c99_device_open(uint32_t index, kiln_device** out_device, const kiln_device_api** out_api) {
  (void)index;
  *out_device = NULL;
  *out_api = NULL;
  return NULL;
}

static const kiln_plugin_api c99_table = {sizeof(kiln_plugin_api), KILN_ABI_MAJOR, KILN_ABI_MINOR, "c99", "0.0.0", NULL,
                                          NULL, c99_device_count, c99_device_open, NULL, NULL};

const kiln_plugin_api* kiln_c99_table(void);
const kiln_plugin_api* kiln_c99_table(void) {
  kiln_lir_inst inst = {KILN_LIR_OP_ADD, KILN_LIR_ARG_NONE, 2, 0, {KILN_LIR_DTYPE_FLOAT32, KILN_LIR_ADDR_NONE, 1, 0}, 0, 0};
  (void)inst;
  return KILN_HAS(&c99_table, kiln_plugin_api, probe_with_options) ? &c99_table : NULL;
}
