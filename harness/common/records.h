/* The protocol's record types as code (prefix kp_): one descriptor per
 * record type names its tag and its keys with their types, and the one
 * encoder and the one decoder (kp_encode, kp_decode) read it. The runner
 * writes every record through them and the parent reads every record
 * through them, so a record's layout lives here and nowhere else; the
 * report writes a record's numbers as numbers because the descriptor says
 * which keys hold numbers. docs/protocol.md lists the same keys for people.
 *
 * A new record type is a struct, a descriptor in records.c and a row in
 * KP_RESULT_RECORDS when children send it per test. A new key is a member
 * and a descriptor row: readers ignore keys they do not know.
 */
#ifndef KILN_RECORDS_H
#define KILN_RECORDS_H

#include <stddef.h>

#include "protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Descriptors ------------------------------------------------------- */

typedef enum {
  KP_STR,                   /* const char *; NULL: not sent */
  KP_INT,                   /* long long */
  KP_UINT,                  /* unsigned long long, no sign accepted */
  KP_DOUBLE,                /* double; nan, inf, -inf spelt so */
  KP_NUMS,                  /* const char *: numbers separated by commas
                               ("3,0.5,nan"); a report writes a sequence */
} kp_type;

/* An optional integer that is absent (and is not sent). */
#define KP_NONE (-0x7fffffffffffffffLL - 1)
#define KP_UNONE (~0ULL)        /* the same for an unsigned one */

typedef struct kp_key {
  const char *key;
  kp_type type;
  size_t offset;            /* of the member in the record's struct */
  int optional;             /* KP_NONE (KP_UNONE) means absent */
} kp_key;

typedef struct kp_rdesc {
  const char *tag;
  const kp_key *keys;
  int nkeys;
} kp_rdesc;

/* Writes rec (a struct described by d) as a record into out. */
void kp_encode(kp_record_out *out, const kp_rdesc *d, const void *rec);
/* Fills rec from fields (strings point into them): keys the descriptor does
 * not know are ignored, missing ones read as NULL, 0 or KP_NONE. Returns 0,
 * or -1 with why naming the key and its value when a number is malformed. */
int kp_decode(const kp_rdesc *d, const kp_field *fields, int nfields,
              void *rec, char *why, size_t nwhy);
/* The key's row in d, or NULL. */
const kp_key *kp_key_find(const kp_rdesc *d, const char *key);

/* ---- Records a child sends per test (docs/protocol.md, "Records") ------ */

typedef struct kp_test {
  const char *id;
  long long pid;
  unsigned long long seed;
} kp_test;

typedef struct kp_phase {
  const char *name;         /* token_wait, runtime_init, body, teardown, ... */
  double ms;
} kp_phase;

/* The device a context opened, a device `--devices` lists, or (with
 * physical and visible) a device in the parent's journal. */
typedef struct kp_device {
  const char *backend;
  long long index;
  const char *name, *arch;
  long long warp_size, multiprocessors;
  unsigned long long l2_bytes, total_bytes, free_bytes;
  const char *error;        /* --devices: this device cannot be queried */
  long long physical;       /* journal only (KP_NONE otherwise) */
  const char *visible;      /* journal only */
  long long slots, budget_bytes;   /* journal only (KP_NONE otherwise) */
} kp_device;

/* Device memory: `before` and `after` the body (free and total, as the
 * runtime says), and `peak`: the most bytes the test's contexts held
 * through the engine's ledger at once (bytes). */
typedef struct kp_memory {
  const char *when;         /* before, after, peak */
  unsigned long long free_bytes, total_bytes;
  unsigned long long bytes; /* peak only */
} kp_memory;

/* The relative-error histogram of a check: bin 0 holds the exact elements,
 * bin 1 those below 10^KP_HIST_LO, bin 2+k the decade [10^(LO+k),
 * 10^(LO+k+1)), the last bin everything from 10^KP_HIST_HI up. */
#define KP_HIST_LO (-10)
#define KP_HIST_HI 2
#define KP_HIST_BINS (KP_HIST_HI - KP_HIST_LO + 3)
/* Elements a check lists as its worst (worst_k_*). */
#define KP_WORST_K 5

typedef struct kp_check {
  const char *name, *dtype;
  long long n;
  double max_abs, max_rel, nmse;
  long long worst_index;
  double worst_actual, worst_expected;
  long long over, nan, inf, special_mismatch, guard_damaged;
  double atol, rtol, max_nmse;
  long long pass;
  /* The distribution of the relative error |a - e| / |e| over the rel_n
   * finite elements whose expected value is not zero: nearest-rank
   * quantiles (max_rel is the maximum) and a histogram in decades. */
  long long rel_n;
  double rel_p50, rel_p90, rel_p99, rel_p999;
  long long hist_lo;
  const char *hist;         /* KP_NUMS: KP_HIST_BINS counts */
  /* The worst elements by error / tolerance, worst first (KP_NUMS). */
  const char *worst_k_index, *worst_k_actual, *worst_k_expected;
  long long budget;         /* elements allowed over tolerance */
} kp_check;

typedef struct kp_kernel {
  const char *name;
  unsigned long long launches;
  double total_ms, min_ms, median_ms, max_ms;
} kp_kernel;

typedef struct kp_leak {
  unsigned long long bytes;
  const char *file;
  long long line;
  unsigned long long serial;
} kp_leak;

/* After a test's leak records: the exact totals of what it left allocated,
 * and how many of them the leak records list (a runner lists at most
 * KP_LEAKS_LISTED). */
typedef struct kp_leak_total {
  unsigned long long count, bytes, listed;
} kp_leak_total;
#define KP_LEAKS_LISTED 1000

typedef struct kp_note {
  const char *key, *value;
} kp_note;

typedef struct kp_metric {
  const char *name;
  double value;
  const char *unit;
} kp_metric;

typedef struct kp_result {
  const char *status;       /* pass, fail, error, skip */
  const char *message, *file;
  long long line;
} kp_result;

typedef struct kp_end {
  int unused;
} kp_end;

/* The device's clocks, temperature, power and throttle reasons, at the
 * test's `start` (after its context opened) and `end` (after its body).
 * source: nvml, sysfs, or none with error saying why there are none. */
typedef struct kp_clocks {
  const char *when;         /* start, end */
  long long device;         /* the context's device (visible index) */
  const char *source;
  long long sm_mhz, mem_mhz, sm_max_mhz, mem_max_mhz;   /* KP_NONE: unknown */
  double temp_c, power_w;   /* NAN: unknown */
  long long reasons;        /* KP_CLOCK_* bits; KP_NONE: unknown */
  const char *reason_names; /* the same, as words */
  long long throttled;      /* a slowdown reason was active; KP_NONE unknown */
  const char *error;
} kp_clocks;

/* Why a device slows down, as NVML names them (the bits are NVML's). */
#define KP_CLOCK_REASONS(X)                                                  \
  X(0x1ull, "gpu_idle", 0) X(0x2ull, "applications_clocks", 0)                \
  X(0x4ull, "sw_power_cap", 1) X(0x8ull, "hw_slowdown", 1)                   \
  X(0x10ull, "sync_boost", 0) X(0x20ull, "sw_thermal", 1)                    \
  X(0x40ull, "hw_thermal", 1) X(0x80ull, "hw_power_brake", 1)                \
  X(0x100ull, "display_clocks", 0) X(0x200ull, "board_limit", 1)             \
  X(0x400ull, "reliability", 1)
/* The reasons that mean the device ran slower than it could. */
unsigned long long kp_clock_slowdown_mask(void);
/* "sw_power_cap,hw_thermal" for the bits in reasons. */
void kp_clock_reason_names(unsigned long long reasons, char *out, size_t n);

/* A device fault the runner saw: a runtime error that leaves the context
 * unusable (an illegal address, a launch failure, a lost device). kiln
 * probes the device before it gives it another test. */
typedef struct kp_device_fault {
  long long device;         /* visible index */
  const char *status, *message;
} kp_device_fault;

/* A finding of a sanitizer (compute-sanitizer, AddressSanitizer, UBSan),
 * made by kiln from the tool's report of the test's process. */
typedef struct kp_sanitizer {
  const char *tool;         /* memcheck, racecheck, initcheck, synccheck,
                               address, undefined */
  const char *kind;         /* "Invalid __global__ write of size 4 bytes",
                               "heap-buffer-overflow", ... */
  const char *kernel, *address, *thread, *block, *where;
  const char *message;      /* the finding's first lines, as the tool wrote them */
} kp_sanitizer;

/* Sent instead of a record that did not fit in KP_MAX_LINE bytes. */
typedef struct kp_truncated {
  const char *tag;          /* the record's own tag */
  long long bytes;          /* how long it would have been */
} kp_truncated;

/* The one sentence that describes a check (the child's assertion message,
 * `kiln report show`, JUnit). */
void kp_check_sentence(const kp_check *c, char *out, size_t n);

extern const kp_rdesc kp_rec_test, kp_rec_phase, kp_rec_device, kp_rec_memory,
    kp_rec_check, kp_rec_kernel, kp_rec_leak, kp_rec_leak_total, kp_rec_note,
    kp_rec_metric, kp_rec_result, kp_rec_end, kp_rec_truncated, kp_rec_clocks,
    kp_rec_device_fault, kp_rec_sanitizer;

/* The per-test records, in the order docs/protocol.md lists them:
 * X(descriptor, struct). */
#define KP_RESULT_RECORDS(X)                                                 \
  X(kp_rec_test, kp_test) X(kp_rec_phase, kp_phase)                          \
  X(kp_rec_device, kp_device) X(kp_rec_memory, kp_memory)                    \
  X(kp_rec_check, kp_check) X(kp_rec_kernel, kp_kernel)                      \
  X(kp_rec_leak, kp_leak) X(kp_rec_leak_total, kp_leak_total)              \
  X(kp_rec_note, kp_note)                                                    \
  X(kp_rec_metric, kp_metric) X(kp_rec_clocks, kp_clocks)                    \
  X(kp_rec_device_fault, kp_device_fault) X(kp_rec_result, kp_result)        \
  X(kp_rec_end, kp_end) X(kp_rec_truncated, kp_truncated)                    \
  X(kp_rec_sanitizer, kp_sanitizer)

/* KP_NUMS text: the count of its numbers (0 for ""), or -1 when it is not
 * numbers separated by commas. kp_nums_get reads up to max of them. */
int kp_nums_count(const char *text);
int kp_nums_get(const char *text, double *out, int max);

/* The descriptor of a per-test record tag, or NULL. */
const kp_rdesc *kp_result_record(const char *tag);

/* ---- Warm children ------------------------------------------------------ */

/* A warm runner's first record: it started and opened its context. */
typedef struct kp_ready {
  const char *status;       /* ok, error */
  double runtime_init_ms;
} kp_ready;

/* The parent's assignment to a warm runner, on its stdin. */
typedef struct kp_assign {
  const char *id, *tmpdir;
  long long sem_id, sem_num, slots;   /* KP_NONE: no slot to take */
} kp_assign;

extern const kp_rdesc kp_rec_ready, kp_rec_assign;

/* ---- The runner's answers to --list and --devices ---------------------- */

/* One registered test (`test` on --list's stdout). */
typedef struct kp_listing {
  const char *id, *suite, *name, *tags;
  long long slots;          /* -1: the whole device */
  long long devices;        /* devices it needs at once (1 unless declared) */
  long long timeout_s, needs_gpu;
  const char *file;
  long long line;
} kp_listing;

typedef struct kp_backend {
  const char *name;
  long long devices;
  const char *error;        /* why there are none */
  const char *sanitizers;   /* what the runner was built with: "none",
                               "address,undefined" (meson's b_sanitize) */
} kp_backend;

/* The first record of a runner's answer to --list and --devices: the kiln
 * it was built against and the protocol it speaks, which kiln checks
 * before it reads anything else. */
typedef struct kp_runner {
  const char *kiln;         /* version, "0.2.0" */
  long long protocol;       /* KP_VERSION */
  const char *backend;
} kp_runner;

extern const kp_rdesc kp_rec_listing, kp_rec_backend, kp_rec_runner;

/* ---- Slots a runner takes itself ---------------------------------------- */

/* Devices one runner may take slots on at once. */
#define KP_MAX_TAKE 32

/* "SEM_ID:SEM_NUM:N[,SEM_NUM:N...]", the value of KILN_TAKE_SLOTS in a
 * runner's environment: N slots of each semaphore SEM_NUM of the System V
 * set SEM_ID, taken in one semop (all or none: a test of several devices
 * never holds one while it waits for another). */
typedef struct kp_take {
  long long sem_id;
  int n;
  long long sem_num[KP_MAX_TAKE], slots[KP_MAX_TAKE];
} kp_take;

/* 0, or -1 for text that is not that (non-negative integers, at least one
 * semaphore, at most KP_MAX_TAKE). */
int kp_slots_parse(const char *text, kp_take *out);
/* Takes the slots of t (on one device, or on each of several in one
 * semop: all or none, so a test of several devices never holds one while
 * it waits for another, and two such tests cannot deadlock), with SEM_UNDO
 * so the kernel returns them however the process ends, even after an
 * exec. 0, or -1 after saying why on stderr (who: the program). The
 * runner and `kiln __exec` both take their slots with it. */
int kp_slots_take(const kp_take *t, const char *who);

#ifdef __cplusplus
}
#endif
#endif
