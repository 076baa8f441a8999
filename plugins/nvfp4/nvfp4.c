/* Precision policy "nvfp4": the bf16 policy, plus NVFP4 operands (FP4 E2M1
 * elements, an E4M3 scale per block of 16, an FP32 scale per tensor) on
 * every GEMM and conv layer (the host refuses it on a conv: keep those out
 * with layer.<glob>), with NVIDIA's pretraining recipe (arXiv 2509.25149;
 * Transformer Engine's NVFP4BlockScaling), one key per part:
 *   weight_blocks = 2d   16x16 weight tiles (W and W^T quantize alike); 1d: 1x16
 *   hadamard = 1         the random Hadamard transform on both inputs of the
 *                        weight-gradient GEMM
 *   stochastic_rounding = 1   gradients (grad_output) rounded stochastically;
 *                        weights and activations round to nearest even
 *   layer.<glob> = bf16  layers kept out of NVFP4 (the paper: the last
 *                        blocks and the head) */
#include "amptrain/plugin.h"
#include "policy_common.h"

#define NVFP4_KEYS                                                                            \
    "weight_blocks=2d/1d hadamard=1 (0/1) stochastic_rounding=1 (0/1) op.<class>=f32/f16/bf16 " \
    "layer.<glob>=f32/f16/bf16 (no nvfp4 on that layer)"

static const char *const block_names[] = {"2d", "1d"};

static int nvfp4_init(const amp_host_api *host, void **self)
{
    amp_policy *p;
    if (amp_policy_create(host, AMP_DTYPE_BF16, &p))
        return -1;
    int blocks = 0;
    int64_t hadamard = 1, sr = 1;
    /* every key is read before failing, so one run reports them all */
    int bad = amp_policy_choice(host, "weight_blocks", block_names, 2, &blocks) != 0;
    bad |= amp_policy_integer(host, "hadamard", 0, 1, &hadamard) != 0;
    bad |= amp_policy_integer(host, "stochastic_rounding", 0, 1, &sr) != 0;
    if (!bad) {
        amp_operand_format op[AMP_ROLE_COUNT];
        uint32_t flags[AMP_ROLE_COUNT] = {0};
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            op[r] = (amp_operand_format){AMP_FORMAT_NVFP4, AMP_SCALING_NVFP4_1D, 0, 0};
        if (blocks == 0)
            op[AMP_ROLE_WEIGHT].scaling = AMP_SCALING_NVFP4_2D;
        if (hadamard) {
            flags[AMP_ROLE_INPUT] |= AMP_OPERAND_HADAMARD;
            flags[AMP_ROLE_GRAD_OUTPUT] |= AMP_OPERAND_HADAMARD;
        }
        if (sr)
            flags[AMP_ROLE_GRAD_OUTPUT] |= AMP_OPERAND_STOCHASTIC;
        bad = amp_policy_set_operands(p, op, flags) != 0;
    }
    if (bad) {
        amp_policy_destroy(p);
        return -1;
    }
    *self = p;
    return 0;
}

static const amp_precision_vtable nvfp4_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), nvfp4_init, amp_policy_vt_fini, amp_policy_vt_resolve,
    amp_policy_vt_requires_scaler, NULL, NULL};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, "nvfp4", "1.0.0",
                            "NVFP4 GEMM operands (E2M1, E4M3 scale per 16, FP32 tensor scale; "
                            "2-D weight tiles, Hadamard on the weight gradient, stochastic "
                            "gradients) over BF16 autocast",
                            NVFP4_KEYS, &nvfp4_vtable);
