/* kiln engine: every kernel family's entry points and references.
 *
 * Each entry point validates dtypes and shapes, refuses what its kernel
 * cannot do with KE_ESHAPE or KE_EDTYPE (ke_last_error() says why), and
 * launches on the context stream under event timing. Each reference is a
 * plain double-precision CPU function with the same semantics. One header
 * per family; docs/kernels.md describes them side by side.
 */
#ifndef KILN_KERNELS_H
#define KILN_KERNELS_H

#include "kiln/engine.h"
#include "kiln/rmsnorm.h"
#include "kiln/rope.h"
#include "kiln/gemm.h"
#include "kiln/mxfp.h"
#include "kiln/paged_attention.h"
#include "kiln/softmax.h"
#include "kiln/swiglu.h"
#include "kiln/attention.h"

#endif
