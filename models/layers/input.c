/* The input batch as the first Linear's operand: rounded into its GEMM
 * dtype once per micro-batch, on the upload where the backend can (no FP32
 * copy of the batch on the device, m->x_dtype), else here; counted into
 * that Linear's forward slot. */
#include "kit_state.h"

void amp_input_init(amp_model *m, amp_input *in, int layer) {
    amp_dtype gemm = m->prec[layer].compute[AMP_OP_GEMM];
    in->layer = layer;
    in->vals = gemm;
    if (gemm != AMP_DTYPE_F32 && amp_backend_supports(m->be, "upload_round")) {
        m->x_dtype = gemm;
        m->x_round_layer = layer;
    }
    /* rounded here: into what the GEMM reads (FP32 values where it is fed FP32) */
    in->store = m->x_dtype != AMP_DTYPE_F32 ? gemm : amp_format_feed(m, gemm);
}

void amp_input_layout(amp_model *m, amp_input *in) {
    size_t n = (size_t)m->input.batch * (size_t)m->input.features;
    in->x = in->store == AMP_DTYPE_F32 || m->x_dtype != AMP_DTYPE_F32
                ? m->x
                : amp_kit_take(m, AMP_MEM_ACTIVATIONS, n, in->store);
}

int amp_input_forward(amp_model *m, const amp_input *in, int rows) {
    if (m->x_dtype != AMP_DTYPE_F32) return 0; /* the upload rounded it */
    amp_backend *be = m->be;
    amp_round_count *cnt = amp_model_rounds(m, in->layer, AMP_ROUND_FWD);
    size_t n = (size_t)rows * (size_t)m->input.features;
    if (in->store == AMP_DTYPE_F32) return be->ops->quantize(be, in->x, m->x, n, in->vals, cnt, 0);
    return be->ops->round(be, in->x, in->vals, m->x, n, cnt);
}
