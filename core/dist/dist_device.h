/* Which GPU each rank opens under NCCL, decided from what the process sees
 * (plain C, no CUDA: tested on any machine with faked device counts).
 *
 * A launcher either shows every rank all of a node's GPUs (plain mpirun) or
 * gives each rank its own through CUDA_VISIBLE_DEVICES (SLURM's GPU
 * binding, wrapper scripts). In the first case local rank r opens device r;
 * in the second every rank opens its device 0. After opening, the ranks
 * compare what they opened (host and device UUID), so two ranks on one GPU
 * are refused whatever the launcher did. */
#ifndef AMP_DIST_DEVICE_H
#define AMP_DIST_DEVICE_H

#include <stddef.h>

/* The device local rank `local_rank` of `local_size` opens, of `visible`
 * devices it sees (cuda_visible_devices: that variable's value or NULL,
 * for the message). 0 with *device set, or -1 with err saying what to do. */
int amp_dist_device_for_rank(int local_rank, int local_size, int visible,
                             const char *cuda_visible_devices, int *device, char *err,
                             size_t errlen);

/* What a rank opened: its host name and the device's UUID. */
typedef struct amp_dist_gpu_id {
    char host[64];
    unsigned char uuid[16];
} amp_dist_gpu_id;

/* ids[world], every rank's: 0 when no two ranks of one host opened the same
 * device, else -1 with err naming both ranks and the host. */
int amp_dist_devices_distinct(const amp_dist_gpu_id *ids, int world, char *err, size_t errlen);

#endif
