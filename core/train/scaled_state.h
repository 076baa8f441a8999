/* The host's side of the scaled GEMM operands (models/scaled.h): the
 * policy's scale_update wired in, the step's stats reduced across ranks
 * before the scale update, and the state written into and read back from
 * checkpoints, bit for bit. */
#ifndef AMP_CORE_SCALED_STATE_H
#define AMP_CORE_SCALED_STATE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "dist/dist.h"
#include "plugins/loader.h"
#include "formats/scaled.h"

/* s->update from the policy's scale_update (NULL when it has none or its
 * vtable predates ABI 1.2: the default rule). */
void amp_scaled_wire(amp_scaled *s, amp_plugin *precision);

/* The end of an optimizer step: every slot's step stats made common across
 * the ranks (amax: max; saturated, flushed, NaN counts: summed), then
 * amp_scaled_step_end. A failing or bad hook is an error naming the plugin.
 * 0, or -1 with err. */
int amp_scaled_end_step(amp_scaled *s, amp_dist *d, amp_plugin *precision, char *err,
                        size_t errlen);

/* The state as bytes (malloc'd, *len; NULL, 0 when there are no slots):
 * the step counter and per slot its layer, role, format, scaling, history
 * length, scale, head, count, kept, last step's stats and history.
 * 0, or -1 when out of memory. */
int amp_scaled_state_save(const amp_scaled *s, uint8_t **out, size_t *len);

/* Restores what amp_scaled_state_save wrote; a state whose slots differ
 * from s's (another policy, other keys) or is malformed is refused, naming
 * the first difference. `policy` names this run's policy in the message.
 * 0, or -1 with err. */
int amp_scaled_state_load(amp_scaled *s, const uint8_t *buf, size_t len, const char *policy,
                          char *err, size_t errlen);

/* `,"fp8":[{"layer":...,"role":...,"format":...,"amax":...,"scale":...,
 * "saturated":...,"flushed":...,"nan":...,"kept":...},...]`: the last
 * finished step's stats of every slot, for the metrics lines and
 * summary.json; nothing when there are no slots. `sep` goes before each
 * object ("" or "\n    "). */
void amp_scaled_json(FILE *f, const amp_scaled *s, const char *sep);

#endif
