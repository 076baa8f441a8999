/* The rank-to-GPU mapping and the one-GPU-per-rank check (dist_device.h). */
#include "dist/dist_device.h"

#include <stdio.h>
#include <string.h>

int amp_dist_device_for_rank(int local_rank, int local_size, int visible,
                             const char *cuda_visible_devices, int *device, char *err,
                             size_t errlen) {
    char env[128] = "";
    if (cuda_visible_devices)
        snprintf(env, sizeof env, " (CUDA_VISIBLE_DEVICES=%.100s)", cuda_visible_devices);
    if (visible <= 0) {
        snprintf(err, errlen,
                 "local rank %d of %d sees no CUDA device%s: NCCL needs a GPU for every rank "
                 "(check the launcher's GPU binding, or use [run] device = cpu)",
                 local_rank, local_size, env);
        return -1;
    }
    if (visible >= local_size) { /* every rank sees the node's GPUs: one each */
        *device = local_rank;
        return 0;
    }
    if (visible == 1) { /* the launcher bound one GPU to each rank */
        *device = 0;
        return 0;
    }
    snprintf(err, errlen,
             "%d ranks on this node, and local rank %d sees %d CUDA devices%s: neither one GPU "
             "per rank (set CUDA_VISIBLE_DEVICES to one device per rank, as SLURM's "
             "--gpus-per-task=1 does) nor every rank all of them (at least %d); start at most %d "
             "ranks on this node",
             local_size, local_rank, visible, env, local_size, visible);
    return -1;
}

static void uuid_text(char *out, const unsigned char *u) {
    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", u[i]);
}

int amp_dist_devices_distinct(const amp_dist_gpu_id *ids, int world, char *err, size_t errlen) {
    for (int a = 0; a < world; a++)
        for (int b = a + 1; b < world; b++) {
            if (strncmp(ids[a].host, ids[b].host, sizeof ids[a].host) != 0 ||
                memcmp(ids[a].uuid, ids[b].uuid, sizeof ids[a].uuid) != 0)
                continue;
            char u[33];
            uuid_text(u, ids[a].uuid);
            snprintf(err, errlen,
                     "ranks %d and %d on host '%.64s' opened the same GPU (UUID %s): NCCL needs a "
                     "GPU of its own for every rank; give each rank its own device "
                     "(CUDA_VISIBLE_DEVICES per rank, or no binding so rank r takes device r) or "
                     "start as many ranks per node as it has GPUs",
                     a, b, ids[a].host, u);
            return -1;
        }
    return 0;
}
