/* The operand formats a policy gives a layer, checked (operand_check.h). */
#include "operand_check.h"

#include <stdio.h>

#include "formats/family.h"

static const char *const role_names[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};

int amp_operands_check(const char *policy, const char *layer, unsigned classes,
                       const amp_layer_precision *p, char *err, size_t errlen) {
    const unsigned known = AMP_OPERAND_STOCHASTIC | AMP_OPERAND_HADAMARD;
    for (int r = 0; r < AMP_ROLE_COUNT; r++) {
        const amp_operand_format *f = &p->operand[r];
        if (f->format == AMP_FORMAT_DTYPE) continue;
        const char *why = NULL;
        char buf[256];
        int nv = f->format == AMP_FORMAT_NVFP4;
        int nv_scaling = f->scaling == AMP_SCALING_NVFP4_1D || f->scaling == AMP_SCALING_NVFP4_2D;
        /* the transform is undone only when both weight-GEMM operands have it */
        int other = r == AMP_ROLE_INPUT ? AMP_ROLE_GRAD_OUTPUT : AMP_ROLE_INPUT;
        uint32_t flags = p->operand_flags[r];
        const amp_format_family *fam = amp_format_family_of(f);
        if (f->format >= AMP_FORMAT_COUNT && !fam)
            why = "an unknown format (no number-format family serves it)";
        else if (f->scaling >= AMP_SCALING_COUNT && !fam)
            why = "an unknown scaling (no number-format family serves it)";
        else if (nv != nv_scaling)
            why = nv ? "the NVFP4 format with a scaling that is not NVFP4_1D or NVFP4_2D"
                     : "an NVFP4 scaling with a format that is not NVFP4";
        else if (f->scaling == AMP_SCALING_NVFP4_2D && r != AMP_ROLE_WEIGHT)
            why = "16x16 NVFP4 blocks (NVFP4_2D), which are for the weight role only";
        else if (flags & ~known) {
            snprintf(buf, sizeof buf, "unknown operand flags 0x%x", (unsigned)(flags & ~known));
            why = buf;
        } else if (flags && !nv)
            why = "operand flags on a format that is not NVFP4";
        else if ((flags & AMP_OPERAND_HADAMARD) && r == AMP_ROLE_WEIGHT)
            why = "the Hadamard flag on the weight (it belongs on the input and grad_output, "
                  "the weight-gradient GEMM's operands)";
        else if ((flags & AMP_OPERAND_HADAMARD) &&
                 (p->operand[other].format != AMP_FORMAT_NVFP4 ||
                  !(p->operand_flags[other] & AMP_OPERAND_HADAMARD)))
            why = "the Hadamard flag on one of the weight-gradient GEMM's operands only (it "
                  "must be on both input and grad_output)";
        else if (f->scaling == AMP_SCALING_DELAYED &&
                 (f->history_len < 1 || f->history_len > AMP_AMAX_HISTORY_MAX)) {
            snprintf(buf, sizeof buf, "an amax history of %u values (1..%u)", f->history_len,
                     AMP_AMAX_HISTORY_MAX);
            why = buf;
        } else if (!(classes & ((1u << AMP_OP_GEMM) | (1u << AMP_OP_CONV))))
            why = "a scaled format on a layer that runs no GEMM or convolution";
        else if (nv && (classes & (1u << AMP_OP_CONV))) {
            /* NVFP4's blocks and transform follow a Linear's GEMMs; a conv's
             * im2col GEMMs lay their reduction dimensions the other way (the
             * forward's input would take the weight-gradient transform) */
            snprintf(buf, sizeof buf, "NVFP4 on a convolution: amptrain runs NVFP4 on Linear "
                     "layers only; keep the convolutions out of it (layer.%s = bf16)", layer);
            why = buf;
        } else if (!fam)
            why = "a format and scaling that no number-format family serves";
        if (why) {
            snprintf(err, errlen, "precision plugin '%s' gives layer '%s' (%s operand) %s", policy,
                     layer, role_names[r], why);
            return -1;
        }
    }
    return 0;
}

