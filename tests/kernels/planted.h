/* The planted bugs of a layer test (kernels/arch/kd.h, KD_PLANTED_NAMED): the
 * test is built once with every bug behind its bit, and `--planted NAME`
 * turns one on, so that the mutant's meson test (should_fail) runs the
 * same program as the clean one. Included by the test's one source file,
 * which calls kt_planted_args first thing in main with the names the
 * test's kernels can plant, and kt_planted_stop after each case. */
#ifndef KILN_TESTS_KERNELS_PLANTED_H
#define KILN_TESTS_KERNELS_PLANTED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/kd.h"

extern "C" {
unsigned kd_planted_named = 0;
}

static const struct {
  const char *name;
  unsigned bit;
  const char *what;
} kt_planted_table[] = {
    {"layer", KD_PLANT_LAYER,
     "the layers' own bugs (arch/mma.h fragments, arch/sm90.h strides)"},
    {"rs", KD_PLANT_RS, "P's A registers 1 and 2 swapped (arch/sm90.h)"},
    {"wait", KD_PLANT_WAIT,
     "a wgmma result used before its group is waited for"},
    {"pingpong", KD_PLANT_PINGPONG,
     "each consumer warpgroup arrives on its own barrier"},
    {"epi", KD_PLANT_EPI,
     "an epilogue buffer refilled while a TMA store reads it"},
    {"mx", KD_PLANT_MX, "MX W chunks written without the swizzle"},
};

/* Reads `--planted NAME` (at most once) from argv; NAME must be one of
 * allowed (a bit set of KD_PLANT_*). A usage error exits 2, naming the bad
 * value and the names this test takes. */
static void kt_planted_args(const char *prog, int argc, char **argv, unsigned allowed) {
  const int n = (int)(sizeof kt_planted_table / sizeof kt_planted_table[0]);
  for (int i = 1; i < argc; i++) {
    const char *name = NULL;
    if (!strcmp(argv[i], "--planted") && i + 1 < argc)
      name = argv[++i];
    else if (!strncmp(argv[i], "--planted=", 10))
      name = argv[i] + 10;
    int hit = -1;
    for (int k = 0; name && k < n; k++)
      if ((kt_planted_table[k].bit & allowed) && !strcmp(name, kt_planted_table[k].name)) hit = k;
    if (hit < 0 || kd_planted_named) {
      if (!name)
        fprintf(stderr, "%s: unknown argument '%s'\n", prog, argv[i]);
      else if (kd_planted_named)
        fprintf(stderr, "%s: --planted given twice ('%s')\n", prog, name);
      else
        fprintf(stderr, "%s: --planted: no planted bug '%s' in this test\n", prog, name);
      fprintf(stderr, "usage: %s [--planted NAME]; NAME one of:\n", prog);
      for (int k = 0; k < n; k++)
        if (kt_planted_table[k].bit & allowed)
          fprintf(stderr, "  %-9s %s\n", kt_planted_table[k].name, kt_planted_table[k].what);
      exit(2);
    }
    kd_planted_named = kt_planted_table[hit].bit;
    fprintf(stderr, "%s: planted bug '%s' on (%s): this run must fail\n", prog, name,
            kt_planted_table[hit].what);
  }
}

/* A planted run has only to show that the test catches its bug, so it
 * stops at its first failed case: called after each case with the test's
 * count of failures, this ends a planted run (exit 1, as a failed run
 * would) once that count is not 0. A clean run goes on through every
 * case. */
static inline void kt_planted_stop(const char *prog, int failures) {
  if (!kd_planted_named || failures == 0) return;
  fflush(stdout);
  fprintf(stderr, "%s: %d check(s) failed with the planted bug on; stopping at the first failed case\n",
          prog, failures);
  exit(1);
}

#endif
