/* A truncating matrix unit against the GEMM tolerance (a model, for
 * docs/kernels-gemm.md, GEMM, "The matrix units and this bound"; not part of
 * the engine).
 *
 * Each output is accumulated as the published models of NVIDIA's tensor
 * cores do it: g products (exact) are added to the f32 accumulator in one
 * step, and the step's result is rounded to f32 toward zero. Inputs are
 * bf16 values of a unit-variance, roughly normal distribution; M = N = 64.
 * It prints the worst error over all outputs as a fraction of
 * suites/gemm/gemm-check.c's gemm_tol for an f32 C (atol = 8 u sqrt(max sum of squared
 * partial sums) + 2 u max |sum|, rtol 1.3e-6), and the same for an
 * in-order f32 sum rounded to nearest (the bound's own model).
 *
 *   cc -O2 dev/mma-rounding-model.c -o mma-rounding-model -lm
 *   ./mma-rounding-model [K ...]          (default 1024 4096 16384 65536)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { M = 64, N = 64 };

static uint64_t g_state = 88172645463325252ull;

/* Sum of four uniforms, scaled to unit variance, rounded to bf16. */
static double draw(void) {
  double t = 0.0;
  for (int i = 0; i < 4; i++) {
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    t += (double)(g_state >> 11) / 9007199254740992.0 - 0.5;
  }
  float f = (float)(t * 1.7320508075688772);
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}

/* x rounded to f32 toward zero. */
static float to_f32_rz(double x) {
  float f = (float)x;
  if (fabs((double)f) > fabs(x)) f = nextafterf(f, 0.0f);
  return f;
}

/* Worst error / tolerance over the M x N outputs, with one rounding per g
 * products: toward zero (rz) or to nearest. */
static double worst_ratio(const double *a, const double *b, int k, int g,
                          int rz) {
  const double u = ldexp(1.0, -24);
  double walk_max = 0.0, sum_max = 0.0, worst = 0.0;
  static double err[M * N], ref[M * N];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double exact = 0.0, squares = 0.0;
      float acc = 0.0f;
      for (int q0 = 0; q0 < k; q0 += g) {
        double step = acc;
        for (int q = q0; q < q0 + g && q < k; q++) {
          const double p = a[i * k + q] * b[j * k + q];
          step += p;
          exact += p;
          squares += exact * exact;
        }
        acc = rz ? to_f32_rz(step) : (float)step;
      }
      if (squares > walk_max) walk_max = squares;
      if (fabs(exact) > sum_max) sum_max = fabs(exact);
      err[i * N + j] = fabs((double)acc - exact);
      ref[i * N + j] = exact;
    }
  const double atol = 8.0 * u * sqrt(walk_max) + 2.0 * u * sum_max;
  for (int i = 0; i < M * N; i++) {
    const double r = err[i] / (atol + 1.3e-6 * fabs(ref[i]));
    if (r > worst) worst = r;
  }
  return worst;
}

int main(int argc, char **argv) {
  static const int defaults[] = {1024, 4096, 16384, 65536};
  const int nk = argc > 1 ? argc - 1 : 4;
  printf("%8s %14s %14s %14s\n", "K", "RZ per 16", "RZ per 8", "RN per 1");
  for (int t = 0; t < nk; t++) {
    const int k = argc > 1 ? atoi(argv[1 + t]) : defaults[t];
    if (k < 1) {
      fprintf(stderr, "mma-rounding-model: K must be >= 1, got %s\n",
              argv[1 + t]);
      return 2;
    }
    double *a = malloc(sizeof *a * (size_t)M * (size_t)k);
    double *b = malloc(sizeof *b * (size_t)N * (size_t)k);
    if (!a || !b) {
      fprintf(stderr, "mma-rounding-model: out of memory for K = %d\n", k);
      return 1;
    }
    for (int i = 0; i < M * k; i++) a[i] = draw();
    for (int i = 0; i < N * k; i++) b[i] = draw();
    printf("%8d %14.3f %14.3f %14.3f\n", k, worst_ratio(a, b, k, 16, 1),
           worst_ratio(a, b, k, 8, 1), worst_ratio(a, b, k, 1, 0));
    free(a);
    free(b);
  }
  return 0;
}
