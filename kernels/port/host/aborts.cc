/* HIP-on-CPU aborts for a kernel's own mistakes (__trap, a bad shuffle
 * width), each naming the kernel it happened in, which launch.cc knows
 * (kemu__running_kernel).
 */
#include <stdio.h>
#include <stdlib.h>

#include "hip-on-host.h"
#include "hip-on-host-impl.h"

void kemu__trap() {
  const char *kernel = kemu__running_kernel();
  fflush(stdout);
  if (kernel)
    fprintf(stderr,
            "kiln host emulation: __trap() in kernel %s block (%u,%u,%u) "
            "thread (%u,%u,%u)\n",
            kernel, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
            threadIdx.y, threadIdx.z);
  else
    fprintf(stderr, "kiln host emulation: __trap() outside a kernel\n");
  abort();
}


void kemu__bad_width(const char *op, int width) {
  const char *kernel = kemu__running_kernel();
  fflush(stdout);
  fprintf(stderr,
          "kiln host emulation: %s with width %d in kernel %s: the width "
          "must be a power of two no larger than warpSize (%d)\n",
          op, width, kernel ? kernel : "(none)",
          kemu__warp_size_value);
  abort();
}
