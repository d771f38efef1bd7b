/* libFuzzer target: kiln's config readers. Any bytes go through the YAML
 * run-profile reader (kcli_config_parse) and the CTest resource-spec reader
 * (kcli_spec_parse, JSON through libyaml); neither may crash, hang, leak or
 * read out of bounds, and a refusal must come with a message. Seeds:
 * corpus/config/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  krun_settings s;
  kh_err err;
  err.msg[0] = '\0';
  krun_settings_init(&s);
  if (kcli_config_parse((const char *)data, size, "fuzz.yaml", &s, &err) != 0 &&
      err.msg[0] == '\0')
    abort();                /* every refusal names its reason */
  krun_settings_free(&s);

  krun_settings_init(&s);
  err.msg[0] = '\0';
  if (kcli_spec_parse((const char *)data, size, "fuzz.json", &s, &err) != 0 &&
      err.msg[0] == '\0')
    abort();
  krun_settings_free(&s);
  return 0;
}
