/* The kit-only test model (tests/testmodel/kitnet.c: conv, batch norm,
 * ReLU, max pooling and a Linear, written with the layer kit alone): every
 * FP32 gradient, batch norm's included, against central finite differences
 * of the training-mode loss (batch statistics, as the backward sees them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"
#include "model.h"
#include "model_helpers.h"
#include "session_helpers.h"

extern const amp_model_ops amp_test_model_kitnet;

enum { ROWS = 6, FEATURES = 16, CLASSES = 3 };

/* The mean loss of a training forward (BatchNorm on the batch's statistics). */
static double training_loss(amp_model *m) {
    amp_forward_args fa = {ROWS, 1, 1.0f};
    if (m->be->ops->zero(m->be, m->stats, amp_model_stats_bytes(m->desc.nlayers)) ||
        m->ops->cast_weights(m) || m->ops->forward(m, &fa)) {
        fprintf(stderr, "forward: %s\n", m->be->err);
        exit(1);
    }
    return m->stats->loss_sum / ROWS;
}

int main(void) {
    char err[1024];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be || amp_model_register(&amp_test_model_kitnet) != 0) {
        fprintf(stderr, "test_kitnet: %s\n", be ? "cannot register kitnet" : err);
        return 1;
    }
    amp_config *cfg = make_config((const char *const[]){"model.channels=3", NULL});
    amp_model_input in = {.batch = ROWS, .features = FEATURES, .classes = CLASSES, .targets = 1};
    amp_model *m = model_f32_or_die("kitnet", be, cfg, &in);
    float x[ROWS * FEATURES];
    int32_t y[ROWS] = {0, 2, 1, 1, 0, 2};
    for (int i = 0; i < ROWS * FEATURES; i++) x[i] = (float)sin(0.37 * i * i + 0.3) * 1.5f;
    memcpy(m->x, x, sizeof x);
    memcpy(m->y, y, sizeof y);
    model_backward_or_die(m, ROWS);
    size_t n = m->desc.nparams;
    float *grad = malloc(n * sizeof(float));
    memcpy(grad, m->grads, n * sizeof(float));
    int bad = 0, checked = 0;
    double worst = 0.0;
    for (int t = 0; t < m->desc.nparam_tensors; t++) {
        const amp_param_desc *p = &m->desc.params[t];
        for (size_t j = 0; j < p->numel; j++) {
            size_t i = p->offset + j;
            float keep = m->master[i];
            double h = 1e-3; /* past 1e-2 a step crosses a ReLU or pooling kink */
            m->master[i] = keep + (float)h;
            double up = training_loss(m);
            m->master[i] = keep - (float)h;
            double down = training_loss(m);
            m->master[i] = keep;
            /* float32 losses differenced over 2h: O(h^2) truncation and
             * ~1e-7/h rounding, so 2e-3 absolute + 2% relative */
            double fd = (up - down) / (2.0 * h), diff = fabs(fd - grad[i]);
            worst = fmax(worst, diff);
            checked++;
            if (diff > 2e-3 + 2e-2 * fabs(fd) && bad++ < 5)
                fprintf(stderr, "  %s[%zu]: backward %.6g, finite differences %.6g\n", p->name, j,
                        grad[i], fd);
        }
    }
    EXPECT(bad == 0, "kitnet: %d of %d gradients differ from finite differences", bad, checked);
    if (!bad)
        printf("ok  kitnet (conv-bn-relu-pool-linear) %d values vs finite differences, worst |diff| "
               "%.2e\n", checked, worst);
    free(grad);
    amp_model_free(m);
    amp_config_free(cfg);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}
