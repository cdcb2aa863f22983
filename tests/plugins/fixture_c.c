/* tests/plugins/fixture_c.c - broken plugins written in plain C (FIXTURE_KIND):
 *   1 ABI_MAJOR   "abi_major": built for ABI 1.0; fills the table and returns INCOMPATIBLE_ABI
 *   2 NO_ENTRY    "no_entry": exports a misspelt entry point only
 *   3 UNRESOLVED  "unresolved": references a function nothing defines (fails under RTLD_NOW)
 */
#include "kiln/plugin.h"

#if FIXTURE_KIND == 1
static kiln_error* count(uint32_t* out) {
  *out = 1;
  return NULL;
}
static kiln_error* open_device(uint32_t index, kiln_device** out, const kiln_device_api** api) {
  (void)index;
  *out = NULL;
  *api = NULL;
  return NULL;
}
static const kiln_plugin_api table = {sizeof(kiln_plugin_api), 1u, 0u, "abi_major", "1.0.0", NULL, NULL, count,
                                      open_device, NULL, NULL};
KILN_EXPORT kiln_status kiln_plugin_entry(kiln_entry_args* args) {
  args->plugin = &table;
  return args->host_abi_major == 1u ? KILN_STATUS_OK : KILN_STATUS_INCOMPATIBLE_ABI;
}
#elif FIXTURE_KIND == 2
KILN_EXPORT int kiln_plugin_entri(void);
KILN_EXPORT int kiln_plugin_entri(void) { return 0; }
#elif FIXTURE_KIND == 3
void kiln_fixture_function_nobody_defines(void);
KILN_EXPORT kiln_status kiln_plugin_entry(kiln_entry_args* args) {
  kiln_fixture_function_nobody_defines();
  (void)args;
  return KILN_STATUS_INTERNAL;
}
#endif
