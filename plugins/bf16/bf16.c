/* Precision policy "bf16": like fp16 but in BF16, whose FP32-sized exponent
 * range makes a loss scaler unnecessary. */
#include "amptrain/plugin.h"
#include "policy_common.h"

static int bf16_init(const amp_host_api *host, void **self)
{
    amp_policy *p;
    if (amp_policy_create(host, AMP_DTYPE_BF16, &p))
        return -1;
    p->requires_scaler = 0;
    *self = p;
    return 0;
}

static const amp_precision_vtable bf16_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), bf16_init, amp_policy_vt_fini, amp_policy_vt_resolve,
    amp_policy_vt_requires_scaler, amp_policy_vt_allow_tf32, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "bf16", "1.0.0",
                  "BF16 autocast (FP32 softmax/loss/norm/reduce); no loss scaler needed",
                  &bf16_vtable);
