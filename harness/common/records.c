/* Record descriptors and the encoder and decoder that read them; see
 * records.h. */
#include "records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>

#define KEY(s, name, type) {#name, type, offsetof(s, name), 0}
#define OPT(s, name, type) {#name, type, offsetof(s, name), 1}
#define DESC(var, tag, keys) \
  const kp_rdesc var = {tag, keys, (int)(sizeof keys / sizeof keys[0])}

/* ---- The per-test records ------------------------------------------------ */

static const kp_key test_keys[] = {
    KEY(kp_test, id, KP_STR), KEY(kp_test, pid, KP_INT),
    KEY(kp_test, seed, KP_UINT)};
DESC(kp_rec_test, "test", test_keys);

static const kp_key phase_keys[] = {KEY(kp_phase, name, KP_STR),
                                    KEY(kp_phase, ms, KP_DOUBLE)};
DESC(kp_rec_phase, "phase", phase_keys);

static const kp_key device_keys[] = {
    KEY(kp_device, backend, KP_STR), KEY(kp_device, index, KP_INT),
    KEY(kp_device, name, KP_STR), KEY(kp_device, arch, KP_STR),
    KEY(kp_device, warp_size, KP_INT), KEY(kp_device, multiprocessors, KP_INT),
    KEY(kp_device, l2_bytes, KP_UINT), KEY(kp_device, total_bytes, KP_UINT),
    KEY(kp_device, free_bytes, KP_UINT), KEY(kp_device, error, KP_STR),
    OPT(kp_device, physical, KP_INT), KEY(kp_device, visible, KP_STR),
    OPT(kp_device, slots, KP_INT), OPT(kp_device, budget_bytes, KP_INT)};
DESC(kp_rec_device, "device", device_keys);

/* A peak record carries only bytes; before and after only free and total. */
static const kp_key memory_keys[] = {
    KEY(kp_memory, when, KP_STR), OPT(kp_memory, free_bytes, KP_UINT),
    OPT(kp_memory, total_bytes, KP_UINT), OPT(kp_memory, bytes, KP_UINT)};
DESC(kp_rec_memory, "memory", memory_keys);

static const kp_key check_keys[] = {
    KEY(kp_check, name, KP_STR), KEY(kp_check, dtype, KP_STR),
    KEY(kp_check, n, KP_INT), KEY(kp_check, max_abs, KP_DOUBLE),
    KEY(kp_check, max_rel, KP_DOUBLE), KEY(kp_check, nmse, KP_DOUBLE),
    KEY(kp_check, worst_index, KP_INT), KEY(kp_check, worst_actual, KP_DOUBLE),
    KEY(kp_check, worst_expected, KP_DOUBLE), KEY(kp_check, over, KP_INT),
    KEY(kp_check, nan, KP_INT), KEY(kp_check, inf, KP_INT),
    KEY(kp_check, special_mismatch, KP_INT),
    KEY(kp_check, guard_damaged, KP_INT), KEY(kp_check, atol, KP_DOUBLE),
    KEY(kp_check, rtol, KP_DOUBLE), KEY(kp_check, max_nmse, KP_DOUBLE),
    KEY(kp_check, pass, KP_INT), KEY(kp_check, rel_n, KP_INT),
    KEY(kp_check, rel_p50, KP_DOUBLE), KEY(kp_check, rel_p90, KP_DOUBLE),
    KEY(kp_check, rel_p99, KP_DOUBLE), KEY(kp_check, rel_p999, KP_DOUBLE),
    KEY(kp_check, hist_lo, KP_INT), KEY(kp_check, hist, KP_NUMS),
    KEY(kp_check, worst_k_index, KP_NUMS), KEY(kp_check, worst_k_actual, KP_NUMS),
    KEY(kp_check, worst_k_expected, KP_NUMS), KEY(kp_check, budget, KP_INT)};
DESC(kp_rec_check, "check", check_keys);

static const kp_key kernel_keys[] = {
    KEY(kp_kernel, name, KP_STR), KEY(kp_kernel, launches, KP_UINT),
    KEY(kp_kernel, total_ms, KP_DOUBLE), KEY(kp_kernel, min_ms, KP_DOUBLE),
    KEY(kp_kernel, median_ms, KP_DOUBLE), KEY(kp_kernel, max_ms, KP_DOUBLE)};
DESC(kp_rec_kernel, "kernel", kernel_keys);

static const kp_key leak_keys[] = {
    KEY(kp_leak, bytes, KP_UINT), KEY(kp_leak, file, KP_STR),
    KEY(kp_leak, line, KP_INT), KEY(kp_leak, serial, KP_UINT)};
DESC(kp_rec_leak, "leak", leak_keys);

static const kp_key leak_total_keys[] = {KEY(kp_leak_total, count, KP_UINT),
                                         KEY(kp_leak_total, bytes, KP_UINT),
                                         KEY(kp_leak_total, listed, KP_UINT)};
DESC(kp_rec_leak_total, "leak_total", leak_total_keys);

static const kp_key note_keys[] = {KEY(kp_note, key, KP_STR),
                                   KEY(kp_note, value, KP_STR)};
DESC(kp_rec_note, "note", note_keys);

static const kp_key metric_keys[] = {KEY(kp_metric, name, KP_STR),
                                     KEY(kp_metric, value, KP_DOUBLE),
                                     KEY(kp_metric, unit, KP_STR)};
DESC(kp_rec_metric, "metric", metric_keys);

static const kp_key result_keys[] = {
    KEY(kp_result, status, KP_STR), KEY(kp_result, message, KP_STR),
    KEY(kp_result, file, KP_STR), KEY(kp_result, line, KP_INT)};
DESC(kp_rec_result, "result", result_keys);

const kp_rdesc kp_rec_end = {"end", NULL, 0};

static const kp_key clocks_keys[] = {
    KEY(kp_clocks, when, KP_STR), KEY(kp_clocks, device, KP_INT),
    KEY(kp_clocks, source, KP_STR), OPT(kp_clocks, sm_mhz, KP_INT),
    OPT(kp_clocks, mem_mhz, KP_INT), OPT(kp_clocks, sm_max_mhz, KP_INT),
    OPT(kp_clocks, mem_max_mhz, KP_INT), KEY(kp_clocks, temp_c, KP_DOUBLE),
    KEY(kp_clocks, power_w, KP_DOUBLE), OPT(kp_clocks, reasons, KP_INT),
    KEY(kp_clocks, reason_names, KP_STR), OPT(kp_clocks, throttled, KP_INT),
    KEY(kp_clocks, error, KP_STR)};
DESC(kp_rec_clocks, "clocks", clocks_keys);

static const kp_key device_fault_keys[] = {KEY(kp_device_fault, device, KP_INT),
                                           KEY(kp_device_fault, status, KP_STR),
                                           KEY(kp_device_fault, message, KP_STR)};
DESC(kp_rec_device_fault, "device_fault", device_fault_keys);

static const kp_key sanitizer_keys[] = {
    KEY(kp_sanitizer, tool, KP_STR), KEY(kp_sanitizer, kind, KP_STR),
    KEY(kp_sanitizer, kernel, KP_STR), KEY(kp_sanitizer, address, KP_STR),
    KEY(kp_sanitizer, thread, KP_STR), KEY(kp_sanitizer, block, KP_STR),
    KEY(kp_sanitizer, where, KP_STR), KEY(kp_sanitizer, message, KP_STR)};
DESC(kp_rec_sanitizer, "sanitizer", sanitizer_keys);

static const kp_key truncated_keys[] = {KEY(kp_truncated, tag, KP_STR),
                                        KEY(kp_truncated, bytes, KP_INT)};
DESC(kp_rec_truncated, "truncated", truncated_keys);

/* ---- Warm children, --list, --devices ------------------------------------ */

static const kp_key ready_keys[] = {KEY(kp_ready, status, KP_STR),
                                    KEY(kp_ready, runtime_init_ms, KP_DOUBLE)};
DESC(kp_rec_ready, "ready", ready_keys);

static const kp_key assign_keys[] = {
    KEY(kp_assign, id, KP_STR), KEY(kp_assign, tmpdir, KP_STR),
    OPT(kp_assign, sem_id, KP_INT), OPT(kp_assign, sem_num, KP_INT),
    OPT(kp_assign, slots, KP_INT)};
DESC(kp_rec_assign, "assign", assign_keys);

static const kp_key listing_keys[] = {
    KEY(kp_listing, id, KP_STR), KEY(kp_listing, suite, KP_STR),
    KEY(kp_listing, name, KP_STR), KEY(kp_listing, tags, KP_STR),
    KEY(kp_listing, slots, KP_INT), KEY(kp_listing, devices, KP_INT),
    KEY(kp_listing, timeout_s, KP_INT),
    KEY(kp_listing, needs_gpu, KP_INT), KEY(kp_listing, file, KP_STR),
    KEY(kp_listing, line, KP_INT)};
DESC(kp_rec_listing, "test", listing_keys);

static const kp_key backend_keys[] = {KEY(kp_backend, name, KP_STR),
                                      KEY(kp_backend, devices, KP_INT),
                                      KEY(kp_backend, error, KP_STR),
                                      KEY(kp_backend, sanitizers, KP_STR)};
DESC(kp_rec_backend, "backend", backend_keys);

static const kp_key runner_keys[] = {KEY(kp_runner, kiln, KP_STR),
                                     KEY(kp_runner, protocol, KP_INT),
                                     KEY(kp_runner, backend, KP_STR)};
DESC(kp_rec_runner, "runner", runner_keys);

const kp_rdesc *kp_result_record(const char *tag) {
#define ROW(desc, type) &desc,
  static const kp_rdesc *const all[] = {KP_RESULT_RECORDS(ROW)};
#undef ROW
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(all[i]->tag, tag) == 0) return all[i];
  return NULL;
}

/* ---- Encoding and decoding --------------------------------------------------- */

void kp_encode(kp_record_out *out, const kp_rdesc *d, const void *rec) {
  kp_begin(out, d->tag);
  const char *base = rec;
  for (int i = 0; i < d->nkeys; i++) {
    const kp_key *k = &d->keys[i];
    const void *p = base + k->offset;
    switch (k->type) {
    case KP_STR:
    case KP_NUMS:
      if (*(const char *const *)p) kp_add_str(out, k->key, *(const char *const *)p);
      break;
    case KP_INT:
      if (!k->optional || *(const long long *)p != KP_NONE)
        kp_add_int(out, k->key, *(const long long *)p);
      break;
    case KP_UINT:
      if (!k->optional || *(const unsigned long long *)p != KP_UNONE)
        kp_add_uint(out, k->key, *(const unsigned long long *)p);
      break;
    case KP_DOUBLE: kp_add_double(out, k->key, *(const double *)p); break;
    }
  }
}

const kp_key *kp_key_find(const kp_rdesc *d, const char *key) {
  for (int i = 0; i < d->nkeys; i++)
    if (strcmp(d->keys[i].key, key) == 0) return &d->keys[i];
  return NULL;
}

/* Parses v as k's type into p; 0, or -1 when it is not one. */
static int parse_value(const kp_key *k, const char *v, void *p) {
  char *end;
  errno = 0;
  switch (k->type) {
  case KP_STR: *(const char **)p = v; return 0;
  case KP_NUMS:
    if (kp_nums_count(v) < 0) return -1;
    *(const char **)p = v;
    return 0;
  case KP_INT: {
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno) return -1;
    *(long long *)p = x;
    return 0;
  }
  case KP_UINT: {
    if (*v < '0' || *v > '9') return -1;   /* strtoull would take "-1" */
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno) return -1;
    *(unsigned long long *)p = x;
    return 0;
  }
  case KP_DOUBLE: {
    double x = strtod(v, &end);
    if (!*v || *end || (errno && errno != ERANGE)) return -1;
    *(double *)p = x;
    return 0;
  }
  }
  return -1;
}

static void set_defaults(const kp_rdesc *d, void *rec) {
  char *base = rec;
  for (int i = 0; i < d->nkeys; i++) {
    const kp_key *k = &d->keys[i];
    void *p = base + k->offset;
    switch (k->type) {
    case KP_STR: case KP_NUMS: *(const char **)p = NULL; break;
    case KP_INT: *(long long *)p = k->optional ? KP_NONE : 0; break;
    case KP_UINT: *(unsigned long long *)p = k->optional ? KP_UNONE : 0; break;
    case KP_DOUBLE: *(double *)p = 0.0; break;
    }
  }
}

int kp_decode(const kp_rdesc *d, const kp_field *fields, int nfields,
              void *rec, char *why, size_t nwhy) {
  set_defaults(d, rec);
  char *base = rec;
  for (int i = 0; i < nfields; i++) {
    const kp_key *k = kp_key_find(d, fields[i].key);
    if (!k) continue;
    if (parse_value(k, fields[i].value, base + k->offset) != 0) {
      if (why)
        snprintf(why, nwhy, "%s record: '%s' is not %s: '%.60s'", d->tag, k->key,
                 k->type == KP_DOUBLE ? "a number"
                 : k->type == KP_NUMS ? "numbers separated by commas"
                 : k->type == KP_UINT ? "a count from 0 up"
                                      : "an integer",
                 fields[i].value);
      return -1;
    }
  }
  return 0;
}

int kp_nums_count(const char *text) {
  int n = 0;
  for (const char *p = text; *p;) {
    char *end;
    errno = 0;
    (void)strtod(p, &end);
    if (end == p || (errno && errno != ERANGE) || (*end && *end != ',')) return -1;
    n++;
    p = *end ? end + 1 : end;
    if (*end && !*p) return -1;   /* a trailing comma */
  }
  return n;
}

int kp_nums_get(const char *text, double *out, int max) {
  int n = 0;
  for (const char *p = text; p && *p && n < max;) {
    char *end;
    out[n++] = strtod(p, &end);
    if (end == p) return n - 1;
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

unsigned long long kp_clock_slowdown_mask(void) {
  unsigned long long m = 0;
#define SLOW(bit, name, slow) m |= (slow) ? (bit) : 0;
  KP_CLOCK_REASONS(SLOW)
#undef SLOW
  return m;
}

void kp_clock_reason_names(unsigned long long reasons, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
#define NAME(bit, name, slow)                                                  \
  if ((reasons & (bit)) && len < n)                                          \
    len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", name);
  KP_CLOCK_REASONS(NAME)
#undef NAME
}

/* A decimal number from 0 at *p followed by the byte end ('\0': the end
 * of the text, or ','); *p moves past it. */
static int take_number(const char **p, char end, long long *out) {
  char *stop;
  if (**p < '0' || **p > '9') return -1;
  errno = 0;
  *out = strtoll(*p, &stop, 10);
  if (errno || (*stop != end && !(end == '\0' && *stop == ','))) return -1;
  *p = *stop ? stop + 1 : stop;
  return 0;
}

int kp_slots_parse(const char *text, kp_take *out) {
  const char *p = text;
  out->n = 0;
  if (take_number(&p, ':', &out->sem_id) != 0) return -1;
  while (out->n < KP_MAX_TAKE) {
    if (take_number(&p, ':', &out->sem_num[out->n]) != 0 ||
        take_number(&p, '\0', &out->slots[out->n]) != 0)
      return -1;
    out->n++;
    if (!*p) return p[-1] == ',' ? -1 : 0;
  }
  return -1;
}

int kp_slots_take(const kp_take *t, const char *who) {
  struct sembuf ops[KP_MAX_TAKE];
  for (int i = 0; i < t->n; i++) {
    if (t->sem_id < 0 || t->sem_id > 0x7fffffff || t->sem_num[i] < 0 ||
        t->sem_num[i] > 65535 || t->slots[i] < 1 || t->slots[i] > 32767) {
      fprintf(stderr, "%s: slots to take out of range: set %lld, semaphore %lld, %lld slot(s)\n",
              who, t->sem_id, t->sem_num[i], t->slots[i]);
      return -1;
    }
    ops[i] = (struct sembuf){(unsigned short)t->sem_num[i], (short)-t->slots[i], SEM_UNDO};
  }
  int r;
  do r = semop((int)t->sem_id, ops, (size_t)t->n);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    fprintf(stderr, "%s: taking %lld slot(s) from semaphore %lld of set %lld%s: %s\n", who,
            t->slots[0], t->sem_num[0], t->sem_id, t->n > 1 ? " (and others)" : "",
            strerror(errno));
    return -1;
  }
  return 0;
}

/* The one sentence for a check: the child's assertion message, the
 * parent's `report show`, JUnit and the console all print this. */
void kp_check_sentence(const kp_check *c, char *out, size_t n) {
  char budget[64] = "";
  if (c->budget > 0) snprintf(budget, sizeof budget, ", budget %lld", c->budget);
  int len = snprintf(out, n,
           "check %s (%s, %lld elements): %lld over tolerance (atol %g, "
           "rtol %g%s)%s; worst [%lld] = %.9g, expected %.9g; max abs %.3g, "
           "max rel %.3g, nmse %.3g, %lld NaN, %lld Inf",
           c->name ? c->name : "?", c->dtype ? c->dtype : "?", c->n, c->over,
           c->atol, c->rtol, budget, c->guard_damaged ? "; GUARD BYTES OVERWRITTEN" : "",
           c->worst_index, c->worst_actual, c->worst_expected, c->max_abs,
           c->max_rel, c->nmse, c->nan, c->inf);
  if (c->rel_n > 0 && len > 0 && (size_t)len < n)
    snprintf(out + len, n - (size_t)len, "; rel. error median %.3g, p99 %.3g",
             c->rel_p50, c->rel_p99);
}
