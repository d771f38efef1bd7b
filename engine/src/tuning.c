/* The context's tuning knobs (kiln/test-tuning.h) at their defaults. Each
 * family keeps its knobs, their defaults and their checks in its own file
 * (decode.c, attention.c); this is the one place the core context reaches
 * them, so that context.c names no family. The environment is not read
 * here: the runner turns it into knob values (harness/child/tuning.c).
 */
#include "engine-impl.h"

void ke__tuning_defaults(ke_context *ctx) {
  ke__decode_tuning_defaults(&ctx->decode_tuning);
  ke__attention_tuning_defaults(&ctx->attention_tuning);
}
