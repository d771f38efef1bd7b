/* libFuzzer target: kiln's config readers. Any bytes go through the YAML
 * run-profile reader (kh_config_parse) and the CTest resource-spec reader
 * (kh_resource_spec_parse); neither may crash, hang, leak or read out of
 * bounds, and a refusal must come with a message. Seeds: corpus/config/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kh_settings s;
  kh_err err;
  err.msg[0] = '\0';
  kh_settings_init(&s);
  if (kh_config_parse((const char *)data, size, "fuzz.yaml", &s, &err) != 0 &&
      err.msg[0] == '\0')
    abort();                /* every refusal names its reason */
  kh_settings_free(&s);

  kh_settings_init(&s);
  err.msg[0] = '\0';
  if (kh_resource_spec_parse((const char *)data, size, "fuzz.json", &s,
                             &err) != 0 &&
      err.msg[0] == '\0')
    abort();
  kh_settings_free(&s);
  return 0;
}
