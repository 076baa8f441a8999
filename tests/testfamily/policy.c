/* The precision policy that selects the INT8 test family (int8.c): FP32
 * everywhere, and every operand of every GEMM layer in the format
 * AMP_TEST_FORMAT_INT8 with CURRENT scaling. A host without that family
 * registered refuses it at config time (exit 2). */
#include <string.h>

#include "amptrain/plugin.h"
#include "int8.h"

typedef struct { const amp_host_api *host; unsigned classes[256]; int n; } state;
static state the_state;

static int i8_init(const amp_host_api *host, void **self) {
    state *s = &the_state;
    s->host = host;
    s->n = host->layer_count(host->ctx);
    for (int i = 0; i < s->n && i < 256; i++) s->classes[i] = host->layer_op_classes(host->ctx, i);
    *self = s;
    return 0;
}

static void i8_fini(void *self) { (void)self; }

static int i8_resolve(void *self, const char *layer, amp_layer_precision *out) {
    state *s = self;
    for (int c = 0; c < AMP_OP_COUNT; c++) out->compute[c] = AMP_DTYPE_F32;
    out->activation = out->param = AMP_DTYPE_F32;
    for (int i = 0; i < s->n && i < 256; i++) {
        if (strcmp(layer, s->host->layer_name(s->host->ctx, i)) != 0 ||
            !(s->classes[i] & (1u << AMP_OP_GEMM)))
            continue;
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            out->operand[r] = (amp_operand_format){AMP_TEST_FORMAT_INT8, AMP_SCALING_CURRENT, 0, 0};
    }
    return 0;
}

static const amp_precision_vtable i8_vtable = {(uint32_t)sizeof(amp_precision_vtable), i8_init,
                                               i8_fini, i8_resolve, NULL, NULL, NULL};

AMP_PLUGIN_DEFINE(AMP_PLUGIN_KIND_PRECISION, "int8test", "1.0.0",
                  "test: every GEMM operand in the INT8 test family", &i8_vtable);
