/* Rotary position embedding (1-D and GLM 2-D) and position-id generators.
 *
 * Algorithm: a block owns tokens (grid-stride over the B * S tokens) and
 * works through the rotary pairs in chunks of KE_ROPE_CHUNK. Per chunk it
 * first computes the inverse frequencies theta^(-2j/w) in double into
 * shared memory (once per block, not per token); then per token one thread
 * per pair turns position * inv_freq into (cos, sin) in shared memory, and
 * the block applies that table to the pair in every head, so a token's
 * angles are computed once for all its heads. Pass-through dimensions
 * (rot < D, out of place) are copied in a last sweep. Any D, any rot, any
 * number of tokens; heads up to KE__ROPE_MAX_HEADS so that heads * chunk
 * indexes fit in 32 bits.
 *
 * Angle precision: the angle is formed and reduced modulo 2 pi in double
 * (two-constant Cody-Waite with fma), and only the reduced angle, |r| <= pi,
 * is rounded to f32 for sinf/cosf. Error: about 2e-7 rad from that rounding
 * plus |position| * 2^-52 from the double product, so positions to 2^31 are
 * good to 1e-6 rad. An f32 product position * inv_freq would already be off
 * by half an ulp of 65536, 4e-3 rad, at position 65536.
 *
 * Each pair is read and written by one thread, so in place is safe. Math is
 * f32 whatever the storage type.
 */
#include "kd.h"

#define KE_ROPE_BLOCK 128
#define KE_ROPE_CHUNK 256

__device__ __forceinline__ int64_t ke_rope_load_pos(const void *p, int i64,
                                                    int64_t i) {
  return i64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* cos and sin of position * inv_freq, reduced in double (see above). */
__device__ __forceinline__ void ke_rope_sincos(int64_t pos, double inv_freq,
                                               float *c, float *s) {
#if defined(KE_PLANTED_BUG)
  /* Planted bug (mutant build only): the naive f32 angle, which the
   * large-position tests must catch. */
  const float a = (float)pos * (float)inv_freq;
  *c = cosf(a);
  *s = sinf(a);
#else
  const double two_pi_hi = 6.283185307179586232;     /* double nearest 2 pi */
  const double two_pi_lo = 2.4492935982947064e-16;   /* 2 pi - two_pi_hi */
  const double inv_two_pi = 0.15915494309189533577;
  const double a = (double)pos * inv_freq;
  const double k = rint(a * inv_two_pi);
  const double r = fma(-k, two_pi_lo, fma(-k, two_pi_hi, a));
  const float rf = (float)r;
  *c = cosf(rf);
  *s = sinf(rf);
#endif
}

template <typename Tx, typename Ty>
__global__ void __launch_bounds__(KE_ROPE_BLOCK)
ke_rope_tokens(ke__rope_args a) {
  __shared__ double inv_freq[KE_ROPE_CHUNK];
  __shared__ float cos_t[KE_ROPE_CHUNK];
  __shared__ float sin_t[KE_ROPE_CHUNK];
  const Tx *x = (const Tx *)a.x;
  Ty *y = (Ty *)a.y;
  const int64_t ntok = a.batch * a.seq;
  const int64_t npairs = a.rot / 2;
  const int64_t width = 2 * a.sec_pairs; /* one section's rotary dims */

  for (int64_t g0 = 0; g0 < npairs; g0 += KE_ROPE_CHUNK) {
    const int n = (int)(npairs - g0 < KE_ROPE_CHUNK ? npairs - g0
                                                     : KE_ROPE_CHUNK);
    __syncthreads(); /* the previous chunk's tables are no longer read */
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
      const int64_t j = (g0 + k) % a.sec_pairs;
      inv_freq[k] = pow(a.theta, -(double)(2 * j) / (double)width);
    }
    __syncthreads();
    for (int64_t t = blockIdx.x; t < ntok; t += gridDim.x) {
      const int64_t b = t / a.seq, s = t - b * a.seq;
      const int64_t pi = b * a.pos_batch_stride + s;
      const int64_t p0 = ke_rope_load_pos(a.pos, a.pos_i64, pi);
      const int64_t p1 = ke_rope_load_pos(a.pos2, a.pos_i64, pi);
      for (int k = threadIdx.x; k < n; k += blockDim.x)
        ke_rope_sincos(g0 + k < a.sec_pairs ? p0 : p1, inv_freq[k],
                       &cos_t[k], &sin_t[k]);
      __syncthreads();

      const Tx *xt = x + b * a.x_stride[0] + s * a.x_stride[1];
      Ty *yt = y + b * a.y_stride[0] + s * a.y_stride[1];
      const unsigned total = (unsigned)(a.heads * n);
      for (unsigned e = threadIdx.x; e < total; e += blockDim.x) {
        const unsigned h = e / (unsigned)n, k = e - h * (unsigned)n;
        const int64_t g = g0 + k;
        const int64_t sec = g / a.sec_pairs, j = g - sec * a.sec_pairs;
        const int64_t d1 = a.interleaved ? 2 * g : sec * width + j;
        const int64_t d2 = a.interleaved ? d1 + 1 : d1 + a.sec_pairs;
        const Tx *xh = xt + h * a.x_stride[2];
        Ty *yh = yt + h * a.y_stride[2];
        const float x1 = kd_to_float(xh[d1]), x2 = kd_to_float(xh[d2]);
        const float c = cos_t[k], sn = sin_t[k];
        yh[d1] = kd_from_float<Ty>(x1 * c - x2 * sn);
        yh[d2] = kd_from_float<Ty>(x2 * c + x1 * sn);
      }
      __syncthreads(); /* before the next token overwrites cos_t/sin_t */
    }
  }

  if (!a.copy_rest) return;
  const int64_t rest = a.dim - a.rot;
  for (int64_t t = blockIdx.x; t < ntok; t += gridDim.x) {
    const int64_t b = t / a.seq, s = t - b * a.seq;
    const Tx *xt = x + b * a.x_stride[0] + s * a.x_stride[1];
    Ty *yt = y + b * a.y_stride[0] + s * a.y_stride[1];
    for (int64_t e = threadIdx.x; e < a.heads * rest; e += blockDim.x) {
      const int64_t h = e / rest, d = a.rot + (e - h * rest);
      yt[h * a.y_stride[2] + d] =
          kd_from_float<Ty>(kd_to_float(xt[h * a.x_stride[2] + d]));
    }
  }
}

extern "C" int ke__rope_launch(void *stream, const ke__rope_args *args) {
  const int64_t ntok = args->batch * args->seq;
  const int64_t max_grid = 4096; /* enough to fill a GPU; more would only
                                    recompute the frequency table */
  dim3 grid((unsigned)(ntok < max_grid ? ntok : max_grid));
  dim3 block(KE_ROPE_BLOCK);
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(args->x_dtype, Tx,
    KD_DISPATCH_IN(args->y_dtype, Ty,
      hipLaunchKernelGGL((ke_rope_tokens<Tx, Ty>), grid, block, 0, s, *args);
      return (int)hipGetLastError()))
  return (int)hipErrorInvalidValue;
}

/* ---- Position ids ---------------------------------------------------------- */

__global__ void __launch_bounds__(256)
ke_position_ids_fill(ke__position_ids_args a) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
       i < a.count; i += step) {
    const int64_t p = a.start + i % a.seq_len;
    int64_t id = p, block_id = 0;
    switch (a.kind) {
    case KE_POSITION_IDS_BIDIRECTIONAL:
      if (p >= a.prefix_len) {
        id = a.mask_pos;
        block_id = p - a.prefix_len + 1;
      }
      break;
    case KE_POSITION_IDS_LOCAL:
      id = p % a.window;
      break;
    case KE_POSITION_IDS_GLOBAL_LOCAL:
      if (p >= a.n_global) id = a.n_global + (p - a.n_global) % a.window;
      break;
    case KE_POSITION_IDS_CAUSAL:
      break;
    }
    if (a.ids_i64) ((int64_t *)a.ids)[i] = id;
    else ((int32_t *)a.ids)[i] = (int32_t)id;
    if (a.block_ids) {
      if (a.block_ids_i64) ((int64_t *)a.block_ids)[i] = block_id;
      else ((int32_t *)a.block_ids)[i] = (int32_t)block_id;
    }
  }
}

extern "C" int ke__position_ids_launch(void *stream,
                                       const ke__position_ids_args *args) {
  const int64_t threads = 256, max_grid = 4096;
  const int64_t blocks = (args->count + threads - 1) / threads;
  dim3 grid((unsigned)(blocks < max_grid ? blocks : max_grid));
  hipLaunchKernelGGL(ke_position_ids_fill, grid, dim3(threads), 0,
                     (hipStream_t)stream, *args);
  return (int)hipGetLastError();
}
