/* Precision policy "fp32": everything in FP32, the reference every other
 * policy is compared against. Key `tf32` (0/1, default 0) lets FP32 GEMMs use
 * TF32 tensor cores on the GPU. */
#include "amptrain/plugin.h"
#include "policy_common.h"

static int fp32_init(const amp_host_api *host, void **self)
{
    int64_t tf32 = 0;
    /* Read tf32 first so it is never reported as unread when op.* fails. */
    int rc = host->get_int(host->ctx, "tf32", &tf32);
    amp_policy *p;
    if (amp_policy_create(host, AMP_DTYPE_F32, &p))
        return -1;
    if (rc < 0) {
        amp_policy_destroy(p);
        return -1;
    }
    if (tf32 != 0 && tf32 != 1) {
        host->key_error(host->ctx, "tf32", "got %lld; must be 0 or 1", (long long)tf32);
        amp_policy_destroy(p);
        return -1;
    }
    p->tf32 = (int)tf32;
    p->requires_scaler = 0;
    *self = p;
    return 0;
}

static const amp_precision_vtable fp32_vtable = {
    (uint32_t)sizeof(amp_precision_vtable), fp32_init, amp_policy_vt_fini, amp_policy_vt_resolve,
    amp_policy_vt_requires_scaler, amp_policy_vt_allow_tf32, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "fp32", "1.0.0",
                  "FP32 everywhere (the reference); optional TF32 GEMMs", &fp32_vtable);
