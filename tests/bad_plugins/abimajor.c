/* amp_scaler_abimajor.so: an entry from a future ABI major. The host must
 * refuse it from abi_major alone, before reading anything else. */
#include "amptrain/plugin.h"

AMP_PLUGIN_EXPORT extern const amp_plugin_info amp_plugin_entry;
const amp_plugin_info amp_plugin_entry = {AMP_PLUGIN_ABI_MAJOR + 1, 0,
                                          (uint32_t)sizeof(amp_plugin_info),
                                          AMP_PLUGIN_KIND_SCALER, "abimajor", "9.0.0",
                                          "test: built for the next ABI major", NULL};
