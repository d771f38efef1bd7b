/* Tensor layout checks shared by entry points that take strided views:
 * negative strides, elements that share memory, byte ranges that meet.
 * Internal to engine/src.
 */
#ifndef KILN_ENGINE_LAYOUT_H
#define KILN_ENGINE_LAYOUT_H

#include "kiln/engine.h"

/* 1 when some dimension of extent > 1 has a negative stride. */
int ke__has_negative_stride(const ke_tensor *t);
/* 1 when no two elements of t can share memory. Sufficient test: with the
 * dimensions of extent > 1 sorted by stride, each stride is at least the
 * span of the dimensions before it. Needs non-negative strides. */
int ke__no_self_overlap(const ke_tensor *t);
/* 1 when the byte ranges [first element, last element] of a and b meet.
 * Conservative: interleaved but disjoint views count as meeting. */
int ke__ranges_meet(const ke_tensor *a, const ke_tensor *b);

#endif
