/* Precision policy "mxfp8": the bf16 policy, plus MXFP8 operands (OCP MX
 * v1.0: FP8 elements, one E8M0 scale per block of 32 along the GEMM's
 * reduction dimension) on every GEMM/CONV layer. No history, no hook. */
#include "amptrain/plugin.h"
#include "policy_common.h"

#define MXFP8_KEYS                                                                      \
    "format=e4m3|hybrid op.<class>=f32|f16|bf16 layer.<glob>=f32|f16|bf16 (no mxfp8 on " \
    "that layer)"

static const char *const format_names[] = {"e4m3", "hybrid"};

static int mxfp8_init(const amp_host_api *host, void **self)
{
    amp_policy *p;
    if (amp_policy_create(host, AMP_DTYPE_BF16, &p))
        return -1;
    int format = 0;
    if (amp_policy_choice(host, "format", format_names, 2, &format) != 0 ||
        amp_policy_set_scaled(p, format == 0 ? AMP_FORMAT_F8_E4M3 : AMP_FORMAT_F8_E5M2,
                              AMP_SCALING_MX32, 0) != 0) {
        amp_policy_destroy(p);
        return -1;
    }
    *self = p;
    return 0;
}

static const amp_precision_vtable mxfp8_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), mxfp8_init, amp_policy_vt_fini, amp_policy_vt_resolve,
    amp_policy_vt_requires_scaler, NULL, NULL};

AMP_PLUGIN_DEFINE_WITH_KEYS(AMP_PLUGIN_KIND_PRECISION, "mxfp8", "1.0.0",
                            "MXFP8 GEMM operands (E4M3 elements, E8M0 scale per 32) over BF16 "
                            "autocast",
                            MXFP8_KEYS, &mxfp8_vtable);
