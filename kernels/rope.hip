/* Rotary position embedding (1-D and GLM 2-D) and position-id generators.
 *
 * Two RoPE kernels, chosen per launch:
 *
 * Vector kernel (every head row of x and y starts on a 16-byte boundary and
 * a section's pairs come in whole chunks of 8, i.e. rot % 16 == 0 in 1-D,
 * rot % 32 == 0 in 2-D, with at most KE_ROPE_VEC_MAX_SEC pairs per section;
 * the usual case). The work is (head group, token, chunk) items walked
 * grid-stride, chunk fastest; a chunk is 8 pairs: for rotate-half 8
 * elements of a section's first half and the matching 8 of its second half,
 * for interleaved 16 consecutive elements. An item computes the chunk's 8
 * (cos, sin) once, then applies them to the chunk in every head of its
 * group, KE_ROPE_VEC_UNROLL heads' loads in flight at a time (16-byte
 * accesses: two per chunk for 16-bit, four for f32). The launcher sizes head
 * groups so that big tensors share the angles over many heads and small ones
 * still spread over the whole GPU. Pass-through dimensions (rot < D, out of
 * place) are copied in a last sweep, 8 elements at a time; in place they are
 * not touched.
 *
 * Token kernel (anything else). A block owns tokens (grid-stride over the
 * B * S tokens) and works through the rotary pairs in chunks of
 * KE_ROPE_CHUNK. Per chunk it first computes the inverse frequencies
 * theta^(-2j/w) in double into shared memory (once per block, not per
 * token); then per token one thread per pair turns position * inv_freq into
 * (cos, sin) in shared memory, and the block applies that table to the pair
 * in every head, so a token's angles are computed once for all its heads.
 * Pass-through dimensions (rot < D, out of place) are copied in a last
 * sweep. Any D, any rot, any number of tokens; heads up to
 * KE__ROPE_MAX_HEADS so that heads * chunk indexes fit in 32 bits.
 *
 * Angle precision (both kernels): the angle is formed and reduced modulo
 * 2 pi in double (two-constant Cody-Waite with fma), and only the reduced
 * angle, |r| <= pi, is rounded to f32 for sinf/cosf. Error: about 2e-7 rad
 * from that rounding plus |position| * 2^-52 from the double product, so
 * positions to 2^31 are good to 1e-6 rad. An f32 product position *
 * inv_freq would already be off by half an ulp of 65536, 4e-3 rad, at
 * position 65536.
 *
 * Each pair is read and written by one thread, so in place is safe. Math is
 * f32 whatever the storage type.
 */
#include "arch/kd.h"

#define KE_ROPE_BLOCK 128
#define KE_ROPE_CHUNK 256

__device__ __forceinline__ int64_t ke_rope_load_pos(const void *p, int i64,
                                                    int64_t i) {
  return i64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* cos and sin of position * inv_freq, reduced in double (see above);
 * approximate cos and sin of the reduced angle for 16-bit outputs
 * (kd_is16). */
template <typename Ty>
__device__ __forceinline__ void ke_rope_sincos(int64_t pos, double inv_freq,
                                               float *c, float *s) {
  if (KD_PLANTED) {
    /* Planted bug (arch/kd.h): the naive f32 angle, which the large-position
     * tests must catch. */
    const float a = (float)pos * (float)inv_freq;
    *c = cosf(a);
    *s = sinf(a);
    return;
  }
  const double two_pi_hi = 6.283185307179586232;     /* double nearest 2 pi */
  const double two_pi_lo = 2.4492935982947064e-16;   /* 2 pi - two_pi_hi */
  const double inv_two_pi = 0.15915494309189533577;
  const double a = (double)pos * inv_freq;
  const double k = rint(a * inv_two_pi);
  const double r = fma(-k, two_pi_lo, fma(-k, two_pi_hi, a));
  const float rf = (float)r;
  if constexpr (kd_is16<Ty>::v) { /* absolute error about 2^-21 on [-pi, pi] */
    *c = __cosf(rf);
    *s = __sinf(rf);
  } else {
    *c = cosf(rf);
    *s = sinf(rf);
  }
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
        ke_rope_sincos<Ty>(g0 + k < a.sec_pairs ? p0 : p1, inv_freq[k],
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

/* ---- Vector kernel ------------------------------------------------------- */

#define KE_ROPE_VEC_BLOCK 256
#define KE_ROPE_VEC_MAX_SEC 512 /* pairs per section: a 4 KiB inv_freq table */
#define KE_ROPE_VEC_ITEMS ((int64_t)1 << 19) /* items a launch aims for */
/* Two blocks per SM at least: up to 128 registers a thread on sm_90, which
 * the 16-bit kernels use; 16 warps of 8 loads in flight each is plenty to
 * cover memory latency. */
#define KE_ROPE_VEC_MIN_BLOCKS 2

/* Heads in flight per thread and step: 4 when x and y are 16-bit (two
 * 16-byte loads a chunk, 8 in flight), else 2 (f32 x: four loads a chunk,
 * 8 in flight; 16-bit x into f32 y: 4, which keeps it within 128 registers
 * on sm_90 without spills). */
template <typename Tx, typename Ty> struct ke_rope_vec_unroll {
  enum { n = sizeof(Tx) == 4 || sizeof(Ty) == 4 ? 2 : 4 };
};

__device__ __forceinline__ void ke_rope_turn(float *a, float *b, float c,
                                             float s) {
  const float x1 = *a, x2 = *b;
  *a = x1 * c - x2 * s;
  *b = x2 * c + x1 * s;
}

/* Turns the 8 pairs of a chunk: rotate-half pairs are (v0[k], v1[k]);
 * interleaved pairs are consecutive, 4 in v0 and then 4 in v1. */
template <bool Inter>
__device__ __forceinline__ void ke_rope_turn_chunk(float *v0, float *v1,
                                                   const float *c,
                                                   const float *s) {
  if (Inter) {
    KD_UNROLL
    for (int k = 0; k < KD_VEC / 2; k++) {
      ke_rope_turn(&v0[2 * k], &v0[2 * k + 1], c[k], s[k]);
      ke_rope_turn(&v1[2 * k], &v1[2 * k + 1], c[k + KD_VEC / 2],
                   s[k + KD_VEC / 2]);
    }
  } else {
    KD_UNROLL
    for (int k = 0; k < KD_VEC; k++) ke_rope_turn(&v0[k], &v1[k], c[k], s[k]);
  }
}

template <typename Tx, typename Ty, bool Inter>
__global__ void __launch_bounds__(KE_ROPE_VEC_BLOCK, KE_ROPE_VEC_MIN_BLOCKS)
ke_rope_vec(ke__rope_args a, int64_t group) {
  constexpr int U = ke_rope_vec_unroll<Tx, Ty>::n;
  __shared__ double inv_freq[KE_ROPE_VEC_MAX_SEC];
  const int64_t width = 2 * a.sec_pairs; /* one section's rotary dims */
  for (int j = threadIdx.x; j < a.sec_pairs; j += blockDim.x)
    inv_freq[j] = pow(a.theta, -(double)(2 * j) / (double)width);
  __syncthreads();

  const Tx *x = (const Tx *)a.x;
  Ty *y = (Ty *)a.y;
  const int64_t ntok = a.batch * a.seq;
  const int64_t nchunk = a.rot / (2 * KD_VEC);
  const int64_t items = (a.heads + group - 1) / group * ntok * nchunk;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < items; i += step) {
    const int64_t q = i % nchunk, r = i / nchunk;
    const int64_t t = r % ntok, h0 = r / ntok * group;
    const int64_t b = t / a.seq, s = t - b * a.seq;
    /* The chunk's pairs g0 .. g0 + 7 lie in one section (sec_pairs % 8). */
    const int64_t g0 = q * KD_VEC;
    const int sec = g0 >= a.sec_pairs;
    const int64_t j0 = g0 - sec * a.sec_pairs;
    const int64_t p = ke_rope_load_pos(sec ? a.pos2 : a.pos, a.pos_i64,
                                       b * a.pos_batch_stride + s);
    float c[KD_VEC], sn[KD_VEC]; /* computed once the first loads are out */

    const int64_t d0 = Inter ? 2 * g0 : sec * width + j0;
    const int64_t d1 = Inter ? d0 + KD_VEC : d0 + a.sec_pairs;
    const Tx *xt = x + b * a.x_stride[0] + s * a.x_stride[1];
    Ty *yt = y + b * a.y_stride[0] + s * a.y_stride[1];
    const int64_t h1 = h0 + group < a.heads ? h0 + group : a.heads;
    for (int64_t h = h0; h < h1; h += U) {
      float v0[U][KD_VEC], v1[U][KD_VEC];
      KD_UNROLL
      for (int k = 0; k < U; k++)
        if (h + k < h1) {
          const Tx *xh = xt + (h + k) * a.x_stride[2];
          kd_load_vec(xh + d0, v0[k]);
          kd_load_vec(xh + d1, v1[k]);
        }
      if (h == h0) {
        /* The angles after the first heads' loads are issued, so their
         * math overlaps the loads' latency: 80 -> 83 % of copy for 16-bit,
         * 94 -> 96 % for f32 on the H100. */
        KD_UNROLL
        for (int k = 0; k < KD_VEC; k++)
          ke_rope_sincos<Ty>(p, inv_freq[j0 + k], &c[k], &sn[k]);
      }
      KD_UNROLL
      for (int k = 0; k < U; k++)
        if (h + k < h1) {
          ke_rope_turn_chunk<Inter>(v0[k], v1[k], c, sn);
          Ty *yh = yt + (h + k) * a.y_stride[2];
          kd_store_vec(yh + d0, v0[k]);
          kd_store_vec(yh + d1, v1[k]);
        }
    }
  }

  if (!a.copy_rest) return;
  /* Pass-through dims rot..dim-1 (rot % 16 == 0, so aligned chunks), then
   * the last (dim - rot) % 8 of each head one element at a time. */
  const int64_t rows = ntok * a.heads, rest = a.dim - a.rot;
  const int64_t nv = rest / KD_VEC, tail = rest - nv * KD_VEC;
  for (int64_t i = first; i < rows * nv; i += step) {
    const int64_t r = i / nv, d = a.rot + (i - r * nv) * KD_VEC;
    const int64_t t = r / a.heads, h = r - t * a.heads;
    const int64_t b = t / a.seq, s = t - b * a.seq;
    float v[KD_VEC];
    kd_load_vec(x + b * a.x_stride[0] + s * a.x_stride[1] +
                    h * a.x_stride[2] + d, v);
    kd_store_vec(y + b * a.y_stride[0] + s * a.y_stride[1] +
                     h * a.y_stride[2] + d, v);
  }
  for (int64_t i = first; i < rows * tail; i += step) {
    const int64_t r = i / tail, d = a.rot + nv * KD_VEC + (i - r * tail);
    const int64_t t = r / a.heads, h = r - t * a.heads;
    const int64_t b = t / a.seq, s = t - b * a.seq;
    y[b * a.y_stride[0] + s * a.y_stride[1] + h * a.y_stride[2] + d] =
        kd_from_float<Ty>(kd_to_float(
            x[b * a.x_stride[0] + s * a.x_stride[1] + h * a.x_stride[2] + d]));
  }
}

/* Every head row of a [batch, seq, heads] grid of rows (strides in
 * elements) starts on a 16-byte boundary. */
static bool ke_rope_rows_vec_ok(const void *p, const int64_t stride[3],
                                const int64_t extent[3], size_t elem) {
  for (int d = 0; d < 3; d++)
    if (!kd_rows_vec_ok(p, extent[d], stride[d], elem)) return false;
  return true;
}

/* Heads per item: all of them (angles shared the most) until the items
 * would fall below KE_ROPE_VEC_ITEMS, down to one head for small launches;
 * a whole number of unrolled steps when more than one. */
static int64_t ke_rope_vec_group(const ke__rope_args *a, int unroll) {
  const int64_t chunks = a->batch * a->seq * (a->rot / (2 * KD_VEC));
  int64_t g = (chunks * a->heads + KE_ROPE_VEC_ITEMS - 1) / KE_ROPE_VEC_ITEMS;
  if (g > 1) g = (g + unroll - 1) / unroll * unroll;
  return g < a->heads ? g : a->heads;
}

/* Whether the vector kernel takes this launch (see the top of the file). */
template <typename Tx, typename Ty>
static bool ke_rope_vec_fits(const ke__rope_args *a) {
  const int64_t extent[3] = {a->batch, a->seq, a->heads};
  return a->sec_pairs % KD_VEC == 0 && a->sec_pairs <= KE_ROPE_VEC_MAX_SEC &&
         ke_rope_rows_vec_ok(a->x, a->x_stride, extent, sizeof(Tx)) &&
         ke_rope_rows_vec_ok(a->y, a->y_stride, extent, sizeof(Ty));
}

template <typename Tx, typename Ty>
static int ke_rope_launch_vec(hipStream_t s, const ke__rope_args *a) {
  const int64_t group = ke_rope_vec_group(a, ke_rope_vec_unroll<Tx, Ty>::n);
  const int64_t ntok = a->batch * a->seq;
  const int64_t items =
      (a->heads + group - 1) / group * ntok * (a->rot / (2 * KD_VEC));
  const int64_t copies =
      a->copy_rest ? ntok * a->heads * ((a->dim - a->rot) / KD_VEC) : 0;
  const int64_t work = items > copies ? items : copies;
  const int64_t max_grid = (int64_t)1 << 16;
  int64_t blocks = (work + KE_ROPE_VEC_BLOCK - 1) / KE_ROPE_VEC_BLOCK;
  if (blocks > max_grid) blocks = max_grid;
  if (a->interleaved)
    hipLaunchKernelGGL((ke_rope_vec<Tx, Ty, true>), dim3((unsigned)blocks),
                       dim3(KE_ROPE_VEC_BLOCK), 0, s, *a, group);
  else
    hipLaunchKernelGGL((ke_rope_vec<Tx, Ty, false>), dim3((unsigned)blocks),
                       dim3(KE_ROPE_VEC_BLOCK), 0, s, *a, group);
  return (int)hipGetLastError();
}

/* ---- Launcher ------------------------------------------------------------ */

template <typename Tx, typename Ty>
static int ke_rope_launch_typed(hipStream_t s, const ke__rope_args *a) {
  if (ke_rope_vec_fits<Tx, Ty>(a)) return ke_rope_launch_vec<Tx, Ty>(s, a);
  const int64_t ntok = a->batch * a->seq;
  const int64_t max_grid = 4096; /* enough to fill a GPU; more would only
                                    recompute the frequency table */
  dim3 grid((unsigned)(ntok < max_grid ? ntok : max_grid));
  hipLaunchKernelGGL((ke_rope_tokens<Tx, Ty>), grid, dim3(KE_ROPE_BLOCK), 0, s,
                     *a);
  return (int)hipGetLastError();
}

extern "C" int ke__rope_launch(void *stream, const ke__rope_args *args) {
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(args->x_dtype, Tx,
    KD_DISPATCH_IN(args->y_dtype, Ty,
      return ke_rope_launch_typed<Tx, Ty>(s, args)))
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
