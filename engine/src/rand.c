/* Seeded random inputs on the device: Philox4x32-10 through hiprand (cuRAND
 * on the cuda backend, kiln's own Philox on the host backend), turned into
 * the requested range and dtype by a small kernel. Tests draw fresh inputs
 * this way so that a kernel is checked on data it has never seen before.
 */
#include "engine-impl.h"
#include "contract/launch.h"

static int ke__rng(ke_context *ctx, uint64_t seed) {
  if (!ctx->rng_ready) {
    KE__CHECK_RAND(
        hiprandCreateGenerator(&ctx->rng, HIPRAND_RNG_PSEUDO_PHILOX4_32_10));
    ctx->rng_ready = 1;
    KE__CHECK_RAND(hiprandSetStream(ctx->rng, ctx->stream));
  }
  KE__CHECK_RAND(hiprandSetPseudoRandomGeneratorSeed(ctx->rng, seed));
  /* A generator continues its sequence across calls; restart it so that a
   * seed always names the same draws. */
  KE__CHECK_RAND(hiprandSetGeneratorOffset(ctx->rng, 0));
  return KE_OK;
}

/* Draws f32 values into a scratch buffer (n rounded up to even, as the
 * normal generators require), then converts into t. */
static int ke__rand_fill(ke_context *ctx, ke_tensor *t, uint64_t seed,
                         int normal, float p0, float p1) {
  if (!ctx || !t || !t->data)
    return ke__fail(KE_EINVAL, "random fill: NULL argument");
  if (ke_dtype_size(t->dtype) == 0)
    return ke__fail(KE_EDTYPE, "random fill: dtype %d is not f32, f16 or bf16",
                    (int)t->dtype);
  if (!ke_tensor_is_contiguous(t))
    return ke__fail(KE_ESHAPE, "random fill: tensor must be contiguous");
  int64_t n = ke_tensor_numel(t);
  size_t draws = (size_t)(n + (n & 1));
  float *scratch = NULL;
  KE__TRY(ke__use(ctx));
  KE__TRY(ke__rng(ctx, seed));
  KE__TRY(ke_malloc(ctx, (void **)&scratch, draws * sizeof(float)));
  int st = KE_OK;
  hiprandStatus_t rs =
      normal ? hiprandGenerateNormal(ctx->rng, scratch, draws, p0, p1)
             : hiprandGenerateUniform(ctx->rng, scratch, draws);
  if (rs != HIPRAND_STATUS_SUCCESS) {
    st = ke__rand_error((int)rs, normal ? "hiprandGenerateNormal"
                                        : "hiprandGenerateUniform",
                        __func__, __FILE__, __LINE__);
  } else {
    /* Uniform draws are in (0, 1]: map to (lo, hi]. */
    float a = normal ? 1.0f : p1 - p0;
    float b = normal ? 0.0f : p0;
    ke__pending_launch slot;
    st = ke__launch_begin(ctx, &slot);
    if (st == KE_OK) {
      hipError_t err = (hipError_t)ke__affine_convert_launch(
          ctx->stream, scratch, t->dtype, t->data, n, a, b);
      st = ke__launch_end(ctx, &slot, "affine_convert", err,
                          "ke__affine_convert_launch", __FILE__, __LINE__);
    }
  }
  int fst = ke_free(ctx, scratch);
  return st != KE_OK ? st : fst;
}

int ke_rand_uniform(ke_context *ctx, ke_tensor *t, uint64_t seed, float lo,
                    float hi) {
  if (!(lo < hi))
    return ke__fail(KE_EINVAL, "ke_rand_uniform: need lo < hi, got %g, %g",
                    (double)lo, (double)hi);
  return ke__rand_fill(ctx, t, seed, 0, lo, hi);
}

int ke_rand_normal(ke_context *ctx, ke_tensor *t, uint64_t seed, float mean,
                   float stddev) {
  if (!(stddev > 0.0f))
    return ke__fail(KE_EINVAL, "ke_rand_normal: stddev must be > 0, got %g",
                    (double)stddev);
  return ke__rand_fill(ctx, t, seed, 1, mean, stddev);
}
