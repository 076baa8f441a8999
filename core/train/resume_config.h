/* The config of a run being resumed: what its checkpoint stored (the
 * resolved config, every key with where it came from), and which --set
 * keys a resume may change. `amptrain train --resume DIR` needs no CONFIG:
 * the run's own config comes back from its newest checkpoint, with the
 * same origins, so its config.ini ends as the uninterrupted run's. */
#ifndef AMP_RESUME_CONFIG_H
#define AMP_RESUME_CONFIG_H

#include <stddef.h>

#include "io/config.h"

/* One "key = value  ; origin" line of a resolved config. */
typedef struct amp_conf_entry {
    const char *section, *key, *value, *origin; /* origin: "" when the line had none */
} amp_conf_entry;

/* Splits text (a resolved config, modified in place) into its entries;
 * *n of them (malloc'd, the caller frees), NULL when out of memory. */
amp_conf_entry *amp_conf_parse(char *text, size_t *n);

/* The config stored in the newest checkpoint of DIR/checkpoints that loads:
 * every key the run set (defaults stay defaults) with its origin, labelled
 * as the run's config file was. NULL with err: 2 in *code when there is no
 * checkpoint (a usage error), 1 when none loads. */
amp_config *amp_resume_config_load(const char *dir, int *code, char *err, size_t errlen);

/* Whether a --set "section.key=value" may be given on a resume that takes
 * the run's config from its checkpoint (`stored`, amp_resume_config_load):
 * the keys that change what is printed, saved or checked, [train] steps (to
 * run longer), the batch split (checked on restore), and any key set to the
 * value the run has. 0, or -1 with "cannot change [s] k on a resume: ..."
 * in err. (With a CONFIG, the config and its --set's must agree with the
 * checkpoint: session_ckpt.c names each key that differs.) */
int amp_resume_set_allowed(amp_config *stored, const char *assignment, char *err, size_t errlen);

/* The keys free to differ between a checkpoint and the config resuming it
 * (printing, saving, checking, the device): section, key. */
int amp_resume_key_free(const char *section, const char *key);

/* The command that continues the run in dir ("amptrain train --resume
 * DIR", under "mpirun -np N" for several ranks), dir quoted for a shell
 * where it needs to be: it works as printed. */
void amp_resume_command(char *out, size_t outlen, int world, const char *dir);

#endif
