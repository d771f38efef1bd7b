/* What the RoPE suite's files share (rope-check.c): position id arrays on
 * the device, fresh random positions, one RoPE case on packed tensors and
 * one position-id generator case against the double references.
 */
#ifndef KILN_SUITES_ROPE_CHECK_H
#define KILN_SUITES_ROPE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* Device id arrays, allocated through kt_alloc (as f32 words of the same
 * bytes) so that they get guard zones and the leak check like every other
 * test buffer. */
typedef struct dev_ids {
  ke_tensor buf;
  ke_positions pos;
} dev_ids;
void ids_alloc(dev_ids *d, ke_pos_dtype dt, int64_t n);
size_t ids_bytes(const dev_ids *d);
void ids_upload(dev_ids *d, const int64_t *v);
/* The ids read back as int64 (caller frees). */
int64_t *ids_download(const dev_ids *d);
void ids_free(dev_ids *d);
/* n fresh random positions in [0, max), drawn on the device. */
int64_t *random_positions(int64_t n, double max);

typedef struct rope_case {
  int rank;                 /* 3: [S, H, D]; 4: [B, H, S, D] */
  int64_t b, s, h, d;
  int64_t rot;              /* 0: D */
  ke_rope_pairing pairing;
  ke_dtype in, out;
  int in_place;
  int two_d;                /* GLM: second position stream */
  int per_batch;            /* B * S positions instead of S */
  ke_pos_dtype pos_dtype;
  double pos_max;           /* random positions in [0, pos_max) */
  const int64_t *fixed;     /* or these (count of them), when set */
  double theta;             /* 0: default */
} rope_case;
kt_tol rope_tol(ke_dtype out);
/* Expands per-token positions to one per packed vector (caller frees). */
int64_t *per_vector(const rope_case *c, const int64_t *pos);
/* Fresh inputs (and positions unless fixed), ke_rope, the reference. */
void check_rope(const rope_case *c);

/* ke_position_ids against ke_position_ids_ref, ids of dtype dt. */
void check_ids(const ke_position_ids_spec *s, int64_t count,
               ke_pos_dtype dt);

#endif
