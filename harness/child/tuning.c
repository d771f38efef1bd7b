/* The kernel settings of the environment, read in one place: the runner
 * turns KILN_HOPPER_ATTN and KILN_FA3_V16 (docs/knobs.md) into the engine's
 * per-context tuning knobs (kiln/test-tuning.h) on every context it opens,
 * so that the kernels' launchers read the context and never the
 * environment. Read once per process, as the launchers once did.
 */
#include <stdlib.h>
#include <string.h>

#include "child-impl.h"
#include "kiln/test-tuning.h"

static int env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}

int kt__tuning_apply(ke_context *ctx) {
  static ke__attention_tuning attn;
  static int known;
  if (!known) {
    ke__attention_tuning_defaults(&attn);
    /* Only "0" turns the Hopper kernel off; only "0" and "1" pin V's copy:
     * any other value leaves the engine's choice, as before. */
    if (env_is("KILN_HOPPER_ATTN", "0")) attn.hopper = 0;
    if (env_is("KILN_FA3_V16", "0")) attn.v16 = 0;
    if (env_is("KILN_FA3_V16", "1")) attn.v16 = 1;
    known = 1;
  }
  return ke__attention_tuning_set(ctx, &attn);
}
