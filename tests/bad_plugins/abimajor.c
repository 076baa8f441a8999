/* amp_scaler_abimajor.so: an entry from a future ABI major (or, built with
 * -DABI_MAJOR_DELTA=-1 as amp_scaler_abipast.so, a past one). The host must
 * refuse it from abi_major alone, before reading anything else. */
#include "amptrain/plugin.h"

#ifndef ABI_MAJOR_DELTA
#define ABI_MAJOR_DELTA 1
#endif

AMP_PLUGIN_EXPORT extern const amp_plugin_info amp_plugin_entry;
const amp_plugin_info amp_plugin_entry = {AMP_PLUGIN_ABI_MAJOR + ABI_MAJOR_DELTA, 0,
                                          (uint32_t)sizeof(amp_plugin_info),
                                          AMP_PLUGIN_KIND_SCALER, "abimajor", "9.0.0",
                                          "test: built for the next ABI major", NULL, NULL};
