/* Precision policy "fp16": GEMM/conv/attention and activations in FP16 with
 * FP32 accumulation; softmax, loss, norms, reductions in FP32 (PyTorch
 * autocast). FP16's narrow range needs a loss scaler. */
#include "amptrain/plugin.h"
#include "policy_common.h"

static int fp16_init(const amp_host_api *host, void **self)
{
    amp_policy *p;
    if (amp_policy_create(host, AMP_DTYPE_F16, &p))
        return -1;
    p->requires_scaler = 1;
    *self = p;
    return 0;
}

static const amp_precision_vtable fp16_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), fp16_init, amp_policy_vt_fini, amp_policy_vt_resolve,
    amp_policy_vt_requires_scaler, amp_policy_vt_allow_tf32, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "fp16", "1.0.0",
                  "FP16 autocast (FP32 softmax/loss/norm/reduce); needs a loss scaler",
                  &fp16_vtable);
