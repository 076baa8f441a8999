/* Test helpers that build a session from "section.key=value" strings and
 * stop the test on the first setup failure (a broken setup is not a result). */
#ifndef AMP_TEST_SESSION_HELPERS_H
#define AMP_TEST_SESSION_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

#include "train/session.h"

/* base, then extra (either may be NULL); both NULL-terminated. */
static inline amp_config *make_config2(const char *const *base, const char *const *extra) {
    amp_config *cfg = amp_config_new_empty("test");
    char err[1024];
    for (int pass = 0; pass < 2; pass++) {
        const char *const *sets = pass ? extra : base;
        for (int i = 0; sets && sets[i]; i++)
            if (amp_config_set(cfg, sets[i], err, sizeof err) != 0) {
                fprintf(stderr, "config: %s\n", err);
                exit(1);
            }
    }
    return cfg;
}

static inline amp_config *make_config(const char *const *sets) { return make_config2(sets, NULL); }

static inline amp_session *open_or_die(amp_config *cfg) {
    amp_session *s = NULL;
    char err[2048];
    if (amp_session_open(&s, cfg, err, sizeof err) != 0) {
        fprintf(stderr, "session: %s\n", err);
        exit(1);
    }
    return s;
}

static inline void step_or_die(amp_session *s, amp_step_record *r) {
    char err[2048];
    if (amp_session_step(s, r, err, sizeof err) != 0) {
        fprintf(stderr, "step: %s\n", err);
        exit(1);
    }
}

#endif
