/* The NCCL rank-to-GPU mapping (core/dist/dist_device.c) with faked device
 * counts and CUDA_VISIBLE_DEVICES values: plain mpirun shows every rank all
 * of a node's GPUs (rank r opens device r), a launcher's binding shows each
 * rank one (every rank opens its device 0), and anything else is refused
 * saying what to do; two ranks of one host on one GPU are refused naming
 * both, whatever the mapping was. */
#include <stdio.h>
#include <string.h>

#include "dist/dist_device.h"
#include "expect.h"

static void maps(int local_rank, int local_size, int visible, const char *env, int want) {
    char err[512] = "";
    int dev = -7;
    int rc = amp_dist_device_for_rank(local_rank, local_size, visible, env, &dev, err, sizeof err);
    EXPECT(rc == 0 && dev == want, "rank %d of %d, %d visible (%s): rc %d device %d, want %d (%s)",
           local_rank, local_size, visible, env ? env : "unset", rc, dev, want, err);
}

static void refused(int local_rank, int local_size, int visible, const char *env,
                    const char *says) {
    char err[512] = "";
    int dev = -7;
    int rc = amp_dist_device_for_rank(local_rank, local_size, visible, env, &dev, err, sizeof err);
    EXPECT(rc == -1 && strstr(err, says), "rank %d of %d, %d visible: rc %d, message '%s' lacks '%s'",
           local_rank, local_size, visible, rc, err, says);
}

static amp_dist_gpu_id gpu(const char *host, unsigned char tag) {
    amp_dist_gpu_id id;
    memset(&id, 0, sizeof id);
    snprintf(id.host, sizeof id.host, "%s", host);
    for (int i = 0; i < 16; i++) id.uuid[i] = (unsigned char)(tag + i);
    return id;
}

int main(void) {
    /* every rank sees the node's GPUs: rank r takes device r */
    maps(0, 2, 2, NULL, 0);
    maps(1, 2, 2, NULL, 1);
    maps(1, 2, 8, "0,1,2,3,4,5,6,7", 1);
    maps(3, 4, 4, NULL, 3);
    /* one GPU bound to each rank (SLURM, a wrapper): device 0 everywhere */
    maps(0, 2, 1, "0", 0);
    maps(1, 2, 1, "1", 0);
    maps(7, 8, 1, "GPU-5c1a", 0);
    /* one rank alone on a node */
    maps(0, 1, 1, NULL, 0);
    maps(0, 1, 4, NULL, 0);
    /* neither: refused, saying what to do */
    refused(0, 4, 2, "0,1", "4 ranks on this node, and local rank 0 sees 2 CUDA devices");
    refused(2, 4, 2, "0,1", "(CUDA_VISIBLE_DEVICES=0,1)");
    refused(2, 4, 3, NULL, "start at most 3 ranks on this node");
    refused(1, 2, 0, "", "local rank 1 of 2 sees no CUDA device");
    printf("ok  rank-to-device mapping: all visible, one bound per rank, refusals\n");

    char err[512] = "";
    amp_dist_gpu_id two_gpus[2] = {gpu("node1", 1), gpu("node1", 2)};
    EXPECT(amp_dist_devices_distinct(two_gpus, 2, err, sizeof err) == 0, "two GPUs refused: %s", err);
    amp_dist_gpu_id two_hosts[2] = {gpu("node1", 1), gpu("node2", 1)};
    EXPECT(amp_dist_devices_distinct(two_hosts, 2, err, sizeof err) == 0,
           "the same UUID on two hosts refused: %s", err);
    /* two ranks, each shown "device 0", but it is the same GPU */
    amp_dist_gpu_id shared[3] = {gpu("node1", 1), gpu("node1", 2), gpu("node1", 1)};
    err[0] = '\0';
    EXPECT(amp_dist_devices_distinct(shared, 3, err, sizeof err) == -1 &&
               strstr(err, "ranks 0 and 2 on host 'node1' opened the same GPU (UUID 0102") &&
               strstr(err, "a GPU of its own for every rank"),
           "two ranks on one GPU: '%s'", err);
    printf("ok  two ranks on one GPU are refused, naming both\n");
    return amp_test_failures ? 1 : 0;
}
