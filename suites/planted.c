/* The mutant runners: the host runner's own objects plus this file, which
 * switches one planted bug on before main. KILN_PLANTED_MUTANT: every
 * kernel's planted bug (kernels/arch/kd.h); KILN_PLANTED_ONE_ELEMENT: one wrong
 * element in each large GEMM and attention output (engine/src/faults.c).
 * tests/planted-bug.sh asserts that the suites fail on them.
 */
#if defined(KILN_PLANTED_MUTANT)
extern int kd_planted_bug;
#define KILN_PLANTED_FLAG kd_planted_bug
#elif defined(KILN_PLANTED_ONE_ELEMENT)
extern int ke__planted_one_element_on;
#define KILN_PLANTED_FLAG ke__planted_one_element_on
#else
#error "define KILN_PLANTED_MUTANT or KILN_PLANTED_ONE_ELEMENT"
#endif

__attribute__((constructor)) static void kiln_planted_on(void) { KILN_PLANTED_FLAG = 1; }
