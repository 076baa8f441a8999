/* Templates of `amptrain new-plugin` kept out of cmd_new_plugin.c; @NAME@
 * is replaced by the plugin name. */
#ifndef AMP_CLI_NEW_PLUGIN_TEMPLATES_H
#define AMP_CLI_NEW_PLUGIN_TEMPLATES_H

/* --template fp8: NAME.c's first line and the rest, the task both INI files
 * train (a tiny GPT), NAME.ini's head and [precision]/[scaler], baseline.ini's head
 * and [precision]/[scaler] (bf16, no scaler). */
extern const char amp_new_plugin_fp8_title[];
extern const char amp_new_plugin_fp8_c[];
extern const char amp_new_plugin_fp8_task[];
extern const char amp_new_plugin_fp8_ini_head[];
extern const char amp_new_plugin_fp8_ini_tail[];
extern const char amp_new_plugin_fp8_baseline_head[];
extern const char amp_new_plugin_fp8_baseline_tail[];

#endif
