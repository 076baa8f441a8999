/* A precision policy that gives every GEMM layer an NVFP4 operand choice
 * the host must refuse (exit 2), chosen by its key `misuse`:
 *   delayed          the NVFP4 format with DELAYED scaling
 *   fp8_nvfp4_scaling E4M3 with the NVFP4_1D scaling
 *   tiles_input      16x16 tiles on the input
 *   flag_bits        an unknown flag bit
 *   flags_fp8        the stochastic flag on an E4M3 operand
 *   hadamard_weight  the Hadamard flag on the weight
 *   hadamard_one     the Hadamard flag on the input only */
#include <string.h>

#include "amptrain/plugin.h"

typedef struct { const amp_host_api *host; unsigned classes[256]; int n; const char *misuse; } state;
static state the_state;

static int bn_init(const amp_host_api *host, void **self)
{
    state *s = &the_state;
    s->host = host;
    s->n = host->layer_count(host->ctx);
    for (int i = 0; i < s->n && i < 256; i++) s->classes[i] = host->layer_op_classes(host->ctx, i);
    s->misuse = "delayed";
    if (host->get_string(host->ctx, "misuse", &s->misuse) < 0) return -1;
    *self = s;
    return 0;
}

static void bn_fini(void *self) { (void)self; }

static int bn_resolve(void *self, const char *layer, amp_layer_precision *out)
{
    state *s = self;
    for (int c = 0; c < AMP_OP_COUNT; c++) out->compute[c] = AMP_DTYPE_F32;
    out->activation = out->param = AMP_DTYPE_F32;
    for (int i = 0; i < s->n && i < 256; i++) {
        if (strcmp(layer, s->host->layer_name(s->host->ctx, i)) != 0 ||
            !(s->classes[i] & (1u << AMP_OP_GEMM)))
            continue;
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            out->operand[r] = (amp_operand_format){AMP_FORMAT_NVFP4, AMP_SCALING_NVFP4_1D, 0, 0};
        const char *m = s->misuse;
        if (!strcmp(m, "delayed")) out->operand[AMP_ROLE_WEIGHT].scaling = AMP_SCALING_DELAYED;
        if (!strcmp(m, "fp8_nvfp4_scaling")) out->operand[AMP_ROLE_WEIGHT].format = AMP_FORMAT_F8_E4M3;
        if (!strcmp(m, "tiles_input")) out->operand[AMP_ROLE_INPUT].scaling = AMP_SCALING_NVFP4_2D;
        if (!strcmp(m, "flag_bits")) out->operand_flags[AMP_ROLE_GRAD_OUTPUT] = 1u << 7;
        if (!strcmp(m, "flags_fp8")) {
            out->operand[AMP_ROLE_INPUT] = (amp_operand_format){AMP_FORMAT_F8_E4M3, AMP_SCALING_CURRENT, 0, 0};
            out->operand_flags[AMP_ROLE_INPUT] = AMP_OPERAND_STOCHASTIC;
        }
        if (!strcmp(m, "hadamard_weight")) out->operand_flags[AMP_ROLE_WEIGHT] = AMP_OPERAND_HADAMARD;
        if (!strcmp(m, "hadamard_one")) out->operand_flags[AMP_ROLE_INPUT] = AMP_OPERAND_HADAMARD;
    }
    return 0;
}

static const amp_precision_vtable bn_vtable = {(uint32_t)sizeof(amp_precision_vtable), bn_init,
                                               bn_fini, bn_resolve, NULL, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "badnvfp4", "1.0.0",
                  "test: NVFP4 operand choices the host refuses", &bn_vtable);
