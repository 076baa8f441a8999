/* amp_scaler_noentry.so: a valid shared object that exports a symbol, but
 * not amp_plugin_entry. */
#include "amptrain/plugin.h"

AMP_PLUGIN_EXPORT extern const int amp_plugin_entry_v0;
const int amp_plugin_entry_v0 = 1;
