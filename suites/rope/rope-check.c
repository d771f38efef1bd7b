/* The RoPE suite's shared checks (rope-check.h): position id arrays on the
 * device, fresh random positions, one RoPE case and one position-id
 * generator case against the double references.
 */
#include "rope-check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Device id arrays -------------------------------------------------------
 * Allocated through kt_alloc (as f32 words of the same bytes) so that they
 * get guard zones and the leak check like every other test buffer. */


void ids_alloc(dev_ids *d, ke_pos_dtype dt, int64_t n) {
  int64_t words = dt == KE_POS_I64 ? 2 * n : n;
  kt_alloc(&d->buf, KE_F32, 1, &words);
  d->pos = (ke_positions){.dtype = dt, .count = n, .data = d->buf.data};
}

size_t ids_bytes(const dev_ids *d) {
  return (size_t)d->pos.count * (d->pos.dtype == KE_POS_I64 ? 8 : 4);
}

void ids_upload(dev_ids *d, const int64_t *v) {
  const int64_t n = d->pos.count;
  if (d->pos.dtype == KE_POS_I64) {
    kt_assert_ok(ke_copy_to_device(kt_ctx(), d->pos.data, v,
                                   (size_t)n * sizeof *v));
    return;
  }
  int32_t *host = malloc((size_t)n * sizeof *host);
  ck_assert_ptr_nonnull(host);
  for (int64_t i = 0; i < n; i++) host[i] = (int32_t)v[i];
  kt_assert_ok(ke_copy_to_device(kt_ctx(), d->pos.data, host,
                                 (size_t)n * sizeof *host));
  free(host);
}

int64_t *ids_download(const dev_ids *d) {
  const int64_t n = d->pos.count;
  void *host = malloc(ids_bytes(d));
  int64_t *v = malloc((size_t)n * sizeof *v);
  ck_assert_ptr_nonnull(host);
  ck_assert_ptr_nonnull(v);
  kt_assert_ok(ke_copy_to_host(kt_ctx(), host, d->pos.data, ids_bytes(d)));
  for (int64_t i = 0; i < n; i++)
    v[i] = d->pos.dtype == KE_POS_I64 ? ((int64_t *)host)[i]
                                      : ((int32_t *)host)[i];
  free(host);
  return v;
}

void ids_free(dev_ids *d) { kt_free(&d->buf); }

/* n fresh random positions in [0, max), drawn on the device. */
int64_t *random_positions(int64_t n, double max) {
  ke_tensor u;
  kt_alloc(&u, KE_F32, 1, &n);
  kt_fill_uniform(&u, 0.0f, 1.0f);
  double *ud = kt_to_doubles(&u);
  kt_free(&u);
  int64_t *p = malloc((size_t)n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  for (int64_t i = 0; i < n; i++) {
    p[i] = (int64_t)floor(ud[i] * max);
    if (p[i] >= (int64_t)max) p[i] = (int64_t)max - 1;
  }
  free(ud);
  return p;
}

/* ---- One RoPE check on packed tensors --------------------------------------- */


kt_tol rope_tol(ke_dtype out) { return kt_tol_default(out); }

/* Expands per-token positions to one per packed vector. */
int64_t *per_vector(const rope_case *c, const int64_t *pos) {
  const int64_t nvec = c->b * c->s * c->h;
  int64_t *v = malloc((size_t)nvec * sizeof *v);
  ck_assert_ptr_nonnull(v);
  for (int64_t b = 0; b < c->b; b++)
    for (int64_t h = 0; h < c->h; h++)
      for (int64_t s = 0; s < c->s; s++) {
        const int64_t vec = c->rank == 4 ? (b * c->h + h) * c->s + s
                                         : s * c->h + h;
        v[vec] = pos[c->per_batch ? b * c->s + s : s];
      }
  return v;
}

void check_rope(const rope_case *c) {
  const int64_t count = c->per_batch ? c->b * c->s : c->s;
  const int64_t nvec = c->b * c->s * c->h;
  int64_t shape4[4] = {c->b, c->h, c->s, c->d};
  int64_t shape3[3] = {c->s, c->h, c->d};
  const int64_t *shape = c->rank == 4 ? shape4 : shape3;
  ke_tensor x, y;
  kt_alloc(&x, c->in, c->rank, shape);
  kt_fill_normal(&x, 0.0f, 1.0f);
  if (c->in_place) {
    y = x;
  } else {
    kt_alloc(&y, c->out, c->rank, shape);
    kt_fill_uniform(&y, -1.0f, 1.0f); /* pass-through dims must be copied */
  }
  double *xd = kt_to_doubles(&x);

  int64_t *p0 = c->fixed ? NULL : random_positions(count, c->pos_max);
  int64_t *p1 = c->two_d ? random_positions(count, c->pos_max) : NULL;
  const int64_t *pos = c->fixed ? c->fixed : p0;
  dev_ids d0, d1;
  ids_alloc(&d0, c->pos_dtype, count);
  ids_upload(&d0, pos);
  if (c->two_d) {
    ids_alloc(&d1, c->pos_dtype, count);
    ids_upload(&d1, p1);
  }

  ke_rope_params p;
  ke_rope_params_init(&p);
  p.rot = c->rot;
  p.pairing = c->pairing;
  if (c->theta > 0.0) p.theta = c->theta;
  kt_assert_ok(ke_rope(kt_ctx(), &x, &y, &d0.pos, c->two_d ? &d1.pos : NULL,
                       &p));

  int64_t *v0 = per_vector(c, pos);
  int64_t *v1 = c->two_d ? per_vector(c, p1) : NULL;
  double *ref = malloc((size_t)(nvec * c->d) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_rope_ref(xd, ref, nvec, c->d, v0, v1, &p);
  char name[128];
  snprintf(name, sizeof name, "rope%s_%dd_b%lld_s%lld_h%lld_d%lld_r%lld_%s_"
           "%s_%s%s", c->two_d ? "2d" : "", c->rank, (long long)c->b,
           (long long)c->s, (long long)c->h, (long long)c->d,
           (long long)c->rot, c->pairing == KE_ROPE_INTERLEAVED ? "inter"
                                                                : "half",
           ke_dtype_name(c->in), ke_dtype_name(c->out),
           c->in_place ? "_inplace" : "");
  kt_assert_close(name, &y, ref, rope_tol(y.dtype));

  free(ref);
  free(v0);
  free(v1);
  free(p0);
  free(p1);
  free(xd);
  ids_free(&d0);
  if (c->two_d) ids_free(&d1);
  if (!c->in_place) kt_free(&y);
  kt_free(&x);
}

/* ---- Position ids ------------------------------------------------------------- */

void check_ids(const ke_position_ids_spec *s, int64_t count,
               ke_pos_dtype dt) {
  const int bidir = s->kind == KE_POSITION_IDS_BIDIRECTIONAL;
  dev_ids ids, blk;
  ids_alloc(&ids, dt, count);
  if (bidir) ids_alloc(&blk, dt == KE_POS_I32 ? KE_POS_I64 : KE_POS_I32,
                       count);
  kt_assert_ok(ke_position_ids(kt_ctx(), s, &ids.pos,
                               bidir ? &blk.pos : NULL));
  int64_t *want = malloc((size_t)count * sizeof *want);
  int64_t *want_blk = malloc((size_t)count * sizeof *want_blk);
  ck_assert_ptr_nonnull(want);
  ck_assert_ptr_nonnull(want_blk);
  ke_position_ids_ref(s, count, want, want_blk);
  int64_t *got = ids_download(&ids);
  for (int64_t i = 0; i < count; i++)
    ck_assert_msg(got[i] == want[i], "kind %d: id[%lld] = %lld, expected "
                  "%lld", (int)s->kind, (long long)i, (long long)got[i],
                  (long long)want[i]);
  free(got);
  if (bidir) {
    got = ids_download(&blk);
    for (int64_t i = 0; i < count; i++)
      ck_assert_msg(got[i] == want_blk[i], "block id[%lld] = %lld, expected "
                    "%lld", (long long)i, (long long)got[i],
                    (long long)want_blk[i]);
    free(got);
    ids_free(&blk);
  }
  free(want);
  free(want_blk);
  ids_free(&ids);
}

