/* AMP_HD marks per-element math compiled twice: by the C compiler for the CPU
 * loops and by nvcc (as __host__ __device__) for the CUDA kernels, so CPU
 * tests exercise the very math the GPU runs. */
#ifndef AMP_KERNELS_AMP_HD_H
#define AMP_KERNELS_AMP_HD_H

#ifdef __CUDACC__
#define AMP_HD __host__ __device__
#else
#define AMP_HD
#endif

#endif
