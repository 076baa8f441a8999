#include "lines.h"

#include "io/json.h"
#include "train/scaled_state.h"

const char *const amp_metrics_columns[] = {"step",      "epoch",     "loss",     "lr",
                                           "scale",     "skipped",   "grad_norm", "underflow",
                                           "overflow",  "step_ms",   "cpu_ms",   "test_loss",
                                           "test_acc",  NULL};

void amp_metrics_step_line(FILE *f, const amp_step_record *r, double cpu_ms,
                           const amp_scaled *scaled) {
    fprintf(f, "{\"step\":%lld,\"epoch\":%lld,\"loss\":", (long long)r->step, (long long)r->epoch);
    amp_json_num(f, r->loss);
    fputs(",\"lr\":", f);
    amp_json_num(f, r->lr);
    fputs(",\"scale\":", f);
    amp_json_num(f, r->scale);
    fprintf(f, ",\"skipped\":%s,\"grad_norm\":", r->skipped ? "true" : "false");
    amp_json_num(f, r->grad_norm);
    fprintf(f, ",\"underflow\":%llu,\"overflow\":%llu,\"step_ms\":%.4f,\"cpu_ms\":%.4f",
            (unsigned long long)r->underflow, (unsigned long long)r->overflow, r->step_ms, cpu_ms);
    amp_scaled_json(f, scaled, ""); /* the scaled operands after this step */
    fputs("}\n", f);
}

void amp_metrics_eval_line(FILE *f, int64_t step, int64_t epoch, double loss, double acc) {
    fprintf(f, "{\"step\":%lld,\"epoch\":%lld,\"test_loss\":", (long long)step, (long long)epoch);
    amp_json_num(f, loss);
    fputs(",\"test_acc\":", f);
    amp_json_num(f, acc);
    fputs("}\n", f);
}
