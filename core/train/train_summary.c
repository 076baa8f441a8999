#include "train_summary.h"

#include <stdlib.h>

#include "plugins/base_policy.h"
#include "scaled_state.h"

#include "io/json.h"
#include "process/peak_rss.h"

/* {"name","version","path"}, and "base" likewise for a precision plugin
 * built on another (host->base_policy). */
static void write_plugin(FILE *f, const amp_plugin *p) {
    fputs("{\"name\":", f);
    amp_json_str(f, p->entry->name);
    fputs(",\"version\":", f);
    amp_json_str(f, p->entry->version);
    fputs(",\"path\":", f);
    amp_json_str(f, p->path);
    if (p->host.base) {
        fputs(",\"base\":", f);
        write_plugin(f, &p->host.base->plugin);
    }
    fputc('}', f);
}

/* What the backend ran (instruction-set path, threads, GEMM kernels per
 * input dtype), when it reports it. */
static void write_backend_info(FILE *f, const amp_backend_info *in) {
    if (!in->isa[0]) return;
    fputs(", \"isa\": ", f);
    amp_json_str(f, in->isa);
    fputs(", \"isa_available\": ", f);
    amp_json_str(f, in->isa_available);
    fprintf(f, ", \"threads\": %d, \"gemm\": {", in->threads);
    static const char *const names[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};
    int first = 1;
    for (int d = 0; d < AMP_DTYPE_COUNT; d++) {
        if (!in->gemm[d][0]) continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", names[d]);
        amp_json_str(f, in->gemm[d]);
        first = 0;
    }
    fputc('}', f);
    if (in->gemm_path[0]) {
        fputs(", \"gemm_path\": ", f);
        amp_json_str(f, in->gemm_path);
    }
    if (in->n_gemm_choices > 0) fputs(",\n    \"gemm_paths\": [", f);
    /* each shape's path: the same in a resumed run as in one left alone (the
     * candidates' times are the cache file's and the log's) */
    for (int i = 0; i < in->n_gemm_choices; i++) {
        const amp_gemm_choice *c = &in->gemm_choices[i];
        fputs(i ? ",\n      {\"shape\": " : "\n      {\"shape\": ", f);
        amp_json_str(f, c->key);
        fputs(", \"path\": ", f);
        amp_json_str(f, c->path);
        fputc('}', f);
    }
    if (in->n_gemm_choices > 0) fputs("]", f);
}

void amp_train_write_summary(FILE *f, const amp_session *s, const amp_train_result *r) {
    const amp_model *m = s->model;
    fputs("{\n  \"name\": ", f);
    amp_json_str(f, s->set.name);
    fputs(",\n  \"model\": ", f);
    amp_json_str(f, m->ops->name);
    fputs(",\n  \"plugins\": {\"precision\": ", f);
    write_plugin(f, &s->precision);
    fputs(", \"scaler\": ", f);
    write_plugin(f, &s->scaler);
    fputs("},\n  \"device\": ", f);
    amp_json_str(f, s->be->ops->name);
    /* the round trips first: every backend reports them */
    fputs(",\n  \"backend\": {\"name\": ", f);
    amp_json_str(f, s->be->ops->name);
    amp_host_trips_json(f, s->trips);
    write_backend_info(f, &s->be->info);
    fputc('}', f);
    fprintf(f, ",\n  \"seed\": %llu,\n  \"steps\": %lld,\n  \"skipped_steps\": %lld,\n",
            (unsigned long long)s->set.seed, (long long)s->step, (long long)s->skipped);
    fputs("  \"final_train_loss\": ", f);
    amp_json_num(f, r->final_loss);
    fputs(",\n  \"test_loss\": ", f);
    amp_json_num(f, r->test_loss);
    fputs(",\n  \"test_acc\": ", f);
    amp_json_num(f, r->test_acc);
    if (s->data_ops->eval_is_validation) { /* text: the evaluation split is the validation 10% */
        fputs(",\n  \"val_loss\": ", f);
        amp_json_num(f, r->test_loss);
    }
    fputs(",\n  \"final_scale\": ", f);
    amp_json_num(f, amp_plugin_scaler(&s->scaler)->get_scale(s->scaler.self));
    fputs(",\n  \"wall_seconds\": ", f);
    amp_json_num(f, r->wall_s);
    fputs(",\n  \"median_step_ms\": ", f);
    amp_json_num(f, r->median_ms);
    fputs(",\n  \"median_cpu_ms\": ", f);
    amp_json_num(f, r->median_cpu_ms);
    fputs(",\n  \"load_avg_start\": ", f);
    amp_json_num(f, r->load_start);
    fputs(",\n  \"load_avg_end\": ", f);
    amp_json_num(f, r->load_end);
    fprintf(f, ",\n  \"world_size\": %d,\n  \"dist_transport\": ", s->world);
    amp_json_str(f, amp_dist_grads_transport(s->grads));
    fputs(",\n  \"median_comm_ms\": ", f);
    amp_json_num(f, r->median_comm_ms);
    /* [dist] shard: elements of the masters, moments and update per rank (padded) */
    fprintf(f, ",\n  \"dist_shard\": \"%s\",\n  \"dist_shard_elements\": %zu",
            !s->shard ? "none" : s->set.dist_shard == 2 ? "gradients" : "optimizer",
            s->shard ? s->shard : m->desc.nparams);
    if (r->per_rank) { /* rank by rank: arena bytes, and what the last applied step sent */
        fputs(",\n  \"ranks\": [", f);
        for (int k = 0; k < s->world; k++) {
            const uint64_t *row = r->per_rank + (size_t)k * AMP_RANK_ROW;
            fprintf(f, "%s\n    {\"rank\": %d, \"memory_bytes\": {", k ? "," : "", k);
            for (int c = 0; c < AMP_MEM_COUNT; c++)
                fprintf(f, "%s\"%s\": %llu", c ? ", " : "", amp_mem_category_names[c],
                        (unsigned long long)row[c]);
            fprintf(f, "}, \"sent_bytes_per_step\": {\"gradients\": %llu, \"weights\": %llu, "
                    "\"total\": %llu}}", (unsigned long long)row[AMP_MEM_COUNT],
                    (unsigned long long)row[AMP_MEM_COUNT + 1],
                    (unsigned long long)(row[AMP_MEM_COUNT] + row[AMP_MEM_COUNT + 1]));
        }
        fputs("\n  ]", f);
    }
    /* the bf16 send buffer, outside the model's memory categories */
    fprintf(f, ",\n  \"dist_buffer_bytes\": %zu", amp_dist_grads_bytes(s->grads));
    /* the whole process, arenas and all the rest (libraries, stacks) */
    fprintf(f, ",\n  \"peak_rss_bytes\": %zu", amp_peak_rss_bytes());
    fprintf(f, ",\n  \"params\": %zu,\n  \"memory_peak_bytes\": {", m->desc.nparams);
    size_t total = 0;
    for (int c = 0; c < AMP_MEM_COUNT; c++) {
        fprintf(f, "%s\"%s\": %zu", c ? ", " : "", amp_mem_category_names[c], m->mem[c].size);
        total += m->mem[c].size;
    }
    /* memory the backend holds for GEMMs (widened operands, library scratch) */
    fprintf(f, ", \"backend_scratch\": %zu", s->be->info.scratch_bytes);
    total += s->be->info.scratch_bytes;
    fprintf(f, ", \"total\": %zu, \"device_used\": %zu},\n  \"layers\": [", total, r->device_peak);
    unsigned long long tu = 0, to = 0, tn = 0;
    for (int l = 0; l < m->desc.nlayers; l++) {
        const amp_round_count *fw = &s->totals[2 * l + AMP_ROUND_FWD];
        const amp_round_count *gr = &s->totals[2 * l + AMP_ROUND_GRAD];
        fprintf(f, "%s\n    {\"name\": ", l ? "," : "");
        amp_json_str(f, m->desc.layers[l].name);
        fprintf(f,
                ", \"forward\": {\"underflow\": %llu, \"overflow\": %llu, \"rounded\": %llu}, "
                "\"grad\": {\"underflow\": %llu, \"overflow\": %llu, \"rounded\": %llu}}",
                fw->underflow, fw->overflow, fw->nonzero, gr->underflow, gr->overflow, gr->nonzero);
        tu += fw->underflow + gr->underflow;
        to += fw->overflow + gr->overflow;
        tn += fw->nonzero + gr->nonzero;
    }
    fprintf(f, "\n  ],\n  \"underflow\": %llu,\n  \"overflow\": %llu,\n  \"rounded\": %llu", tu,
            to, tn);
    amp_scaled_json(f, s->scaled, "\n    "); /* the last step's scaled operands */
    fputs("\n}\n", f);
}

int amp_train_gather_ranks(const amp_session *s, amp_train_result *r, const uint64_t sent[2],
                           char *err, size_t errlen) {
    if (s->world == 1) return 0;
    r->per_rank = calloc((size_t)s->world * AMP_RANK_ROW, sizeof *r->per_rank);
    if (!r->per_rank) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    uint64_t *row = r->per_rank + (size_t)s->rank * AMP_RANK_ROW;
    for (int c = 0; c < AMP_MEM_COUNT; c++) row[c] = s->model->mem[c].size;
    row[AMP_MEM_COUNT] = sent[0];
    row[AMP_MEM_COUNT + 1] = sent[1];
    return amp_dist_allgather(s->dist, r->per_rank, AMP_RANK_ROW * sizeof *row, err, errlen);
}
