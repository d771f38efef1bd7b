/* Sanitizers as a mode (`kiln run --sanitize memcheck|racecheck|initcheck|
 * synccheck`, config `sanitize:`). On the cuda backend every runner runs
 * under NVIDIA's compute-sanitizer with that tool, its report in a file of
 * its own beside the test's log; on the host and hip backends memcheck
 * means a runner built with AddressSanitizer (and UBSan), whose reports
 * are in the test's log. Either way kiln reads the report after the test
 * and turns each finding into a `sanitizer` record of the test (kind,
 * kernel, address, thread, block, where) and the test's outcome into a
 * failure that names the first one. A tool that is not there is a clear
 * refusal before any test starts.
 */
#include "run-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* compute-sanitizer: $KILN_COMPUTE_SANITIZER (which also applies it on a
 * backend other than cuda: kiln's tests plant a stand-in that way), the
 * PATH, $CUDA_PATH/bin, /usr/local/cuda/bin. */
static char *find_compute_sanitizer(int *forced, kh_buf *tried) {
  const char *env = getenv("KILN_COMPUTE_SANITIZER");
  *forced = env && *env;
  if (*forced) return access(env, X_OK) == 0 ? kh_strdup(env) : (kh_buf_addf(tried, "%s", env), NULL);
  const char *path = getenv("PATH"), *cuda = getenv("CUDA_PATH");
  kh_buf dirs = {0};
  kh_buf_addf(&dirs, "%s:%s%s/usr/local/cuda/bin", path ? path : "", cuda ? cuda : "",
              cuda ? "/bin:" : "");
  char *found = NULL;
  for (const char *p = dirs.data; *p && !found;) {
    size_t len = strcspn(p, ":");
    if (len) {
      char *cand = kh_asprintf("%.*s/compute-sanitizer", (int)len, p);
      if (access(cand, X_OK) == 0) found = cand;
      else free(cand);
    }
    p += len + (p[len] == ':');
  }
  kh_buf_addf(tried, "the PATH, %s/usr/local/cuda/bin", cuda ? "$CUDA_PATH/bin, " : "");
  kh_buf_free(&dirs);
  return found;
}

int krun__sanitize_setup(krun__run *R) {
  int tool = R->s->sanitize;
  if (!tool) return 0;
  const char *name = krun_sanitize_names[tool];
  const krun_backend_info *bi = R->o->bi;
  kh_buf tried = {0};
  int forced;
  char *cs = find_compute_sanitizer(&forced, &tried);
  if (bi->backend == KRUN_BACKEND_CUDA || forced) {
    if (!cs) {
      fprintf(stderr, "kiln: --sanitize %s needs NVIDIA's compute-sanitizer (the CUDA "
                      "toolkit's); not found in %s\n", name, tried.data);
      kh_buf_free(&tried);
      return KH_EXIT_INFRA;
    }
    R->sanitizer = cs;
    kh_buf_free(&tried);
    return 0;
  }
  free(cs);
  kh_buf_free(&tried);
  if (tool != 1) {
    fprintf(stderr, "kiln: --sanitize %s is compute-sanitizer's, on the cuda backend; on "
                    "the %s backend only memcheck is offered (an AddressSanitizer build)\n",
            name, krun_backend_names[bi->backend]);
    return KH_EXIT_USAGE;
  }
  if (!strstr(bi->sanitizers, "address")) {
    fprintf(stderr, "kiln: --sanitize memcheck on the %s backend needs a runner built with "
                    "AddressSanitizer, and %s is not (sanitizers: %s): meson setup build-asan "
                    "-Db_sanitize=address,undefined -Db_lundef=false, then --runner-dir "
                    "build-asan/suites\n", krun_backend_names[bi->backend], bi->runner,
            bi->sanitizers);
    return KH_EXIT_USAGE;
  }
  return 0;
}

int krun__sanitize_argv(const krun__run *R, char **argv, const char *log) {
  if (!R->sanitizer) return 0;
  int n = 0;
  argv[n++] = kh_strdup(R->sanitizer);
  argv[n++] = kh_strdup("--tool");
  argv[n++] = kh_strdup(krun_sanitize_names[R->s->sanitize]);
  argv[n++] = kh_asprintf("--log-file=%s", log);
  /* API errors are the test's business (a test may provoke one). */
  argv[n++] = kh_strdup("--report-api-errors=no");
  argv[n++] = kh_strdup("--print-limit=20");
  return n;
}

/* ---- Reading reports -------------------------------------------------------------------- */

#define MAX_FINDINGS 20

typedef struct finding {
  char tool[16], kind[160], kernel[160], address[40], thread[40], block[40], where[200];
  kh_buf message;
} finding;

typedef struct findings {
  finding f[MAX_FINDINGS];
  int n, more;
} findings;

static finding *add(findings *fs, const char *tool) {
  if (fs->n == MAX_FINDINGS) return fs->more++, NULL;
  finding *f = &fs->f[fs->n++];
  memset(f, 0, sizeof *f);
  snprintf(f->tool, sizeof f->tool, "%s", tool);
  return f;
}

/* Copies the text after `key` up to one of the bytes in `stop`. */
static void after(const char *line, const char *key, const char *stop, char *out, size_t n) {
  const char *p = strstr(line, key);
  if (!p || *out) return;
  p += strlen(key);
  snprintf(out, n, "%.*s", (int)strcspn(p, stop), p);
}

static void note_line(finding *f, const char *line) {
  if (f->message.len < 600)
    kh_buf_addf(&f->message, "%s%s", f->message.len ? "; " : "", line);
}

/* "KERNEL+0x70 in FILE:LINE" (compute-sanitizer since CUDA 11.x). */
static void location(finding *f, const char *text) {
  const char *at = strstr(text, " at ");
  if (strncmp(text, "at ", 3) == 0) at = text - 1;
  if (!at) return;
  at += 4;
  /* The kernel's signature may hold spaces: it ends at its offset. */
  const char *end = strstr(at, "+0x");
  if (!end) end = strstr(at, " in ");
  if (!end) end = at + strlen(at);
  if (!*f->kernel) snprintf(f->kernel, sizeof f->kernel, "%.*s", (int)(end - at), at);
  after(end, " in ", " ", f->where, sizeof f->where);
}

/* Copies text's first line into buf (cut to fit) and returns the text
 * after it. */
static const char *next_line(const char *text, char *buf, size_t cap) {
  size_t len = strcspn(text, "\n");
  snprintf(buf, cap, "%.*s", (int)(len < cap - 1 ? len : cap - 1), text);
  return text + len + (text[len] == '\n');
}

/* compute-sanitizer's text report: a finding is a line after the prefix
 * that is not indented, its details the indented lines below it. */
static void parse_cs(const char *text, const char *tool, findings *fs) {
  finding *f = NULL;
  for (const char *line = text; *line;) {
    char buf[1024];
    line = next_line(line, buf, sizeof buf);
    if (strncmp(buf, "=========", 9) != 0) continue;
    const char *body = buf + 9;
    int indented = strncmp(body, "  ", 2) == 0;
    while (*body == ' ') body++;
    if (!*body) continue;
    if (!indented) {
      if (!strncmp(body, "COMPUTE-SANITIZER", 17) || !strncmp(body, "ERROR SUMMARY", 13) ||
          !strncmp(body, "LEAK SUMMARY", 12) || !strncmp(body, "RACECHECK SUMMARY", 17) ||
          !strncmp(body, "Target application", 18) || !strncmp(body, "Program hit", 11)) {
        f = NULL;
        continue;
      }
      if (!(f = add(fs, tool))) continue;
      /* The kind ends where its location starts, or at its full stop. */
      const char *at = strstr(body, " at "), *stop = strstr(body, ". ");
      size_t klen = strlen(body);
      if (at && (size_t)(at - body) < klen) klen = (size_t)(at - body);
      if (stop && (size_t)(stop - body) < klen) klen = (size_t)(stop - body);
      if (klen && body[klen - 1] == '.') klen--;
      snprintf(f->kind, sizeof f->kind, "%.*s", (int)klen, body);
      location(f, body);
      note_line(f, body);
      continue;
    }
    if (!f || !strncmp(body, "Saved host backtrace", 20) || !strncmp(body, "Host Frame", 10) ||
        !strncmp(body, "in ", 3) || !strncmp(body, "Device Frame", 12))
      continue;
    location(f, body);
    after(body, "by thread ", " ", f->thread, sizeof f->thread);
    after(body, " in block ", " ", f->block, sizeof f->block);
    /* memcheck says "Access to ADDR is out of bounds"; initcheck "Address ADDR". */
    after(body, "Address ", " ", f->address, sizeof f->address);
    after(body, "Access to ", " ", f->address, sizeof f->address);
    note_line(f, body);
  }
}

/* AddressSanitizer's and UBSan's reports in the test's output, and the
 * host emulation's line naming the kernel, block and thread. */
static void parse_asan(const char *text, findings *fs) {
  finding *f = NULL;
  for (const char *line = text; *line;) {
    char buf[1024];
    line = next_line(line, buf, sizeof buf);
    const char *p;
    if ((p = strstr(buf, "ERROR: AddressSanitizer: ")) && (f = add(fs, "address"))) {
      p += 25;
      snprintf(f->kind, sizeof f->kind, "%.*s", (int)strcspn(p, " "), p);
      after(p, " on address ", " ", f->address, sizeof f->address);
      note_line(f, p);
    } else if ((p = strstr(buf, ": runtime error: ")) && (f = add(fs, "undefined"))) {
      snprintf(f->kind, sizeof f->kind, "runtime error: %.*s", (int)strcspn(p + 17, ":"),
               p + 17);
      snprintf(f->where, sizeof f->where, "%.*s", (int)(p - buf), buf);
      note_line(f, buf);
    } else if (f && !strcmp(f->tool, "address") && (strstr(buf, "READ of size") ||
                                                     strstr(buf, "WRITE of size"))) {
      const char *rw = strstr(buf, "READ of size") ? strstr(buf, "READ") : strstr(buf, "WRITE");
      size_t k = strlen(f->kind);
      snprintf(f->kind + k, sizeof f->kind - k, ": %.*s", (int)(strstr(rw, " at ") ?
               strstr(rw, " at ") - rw : (long)strlen(rw)), rw);
      note_line(f, rw);
    } else if (f && !strcmp(f->tool, "address") && !*f->where && (p = strstr(buf, "#0 0x"))) {
      after(p, " in ", "(", f->kernel, sizeof f->kernel);
      const char *sp = strrchr(p, ' ');
      if (sp) snprintf(f->where, sizeof f->where, "%s", sp + 1);
    } else if (f && (p = strstr(buf, "report above is from kernel "))) {
      snprintf(f->kernel, sizeof f->kernel, "%.*s", (int)strcspn(p + 28, " "), p + 28);
      after(p, " block ", " ", f->block, sizeof f->block);
      after(p, " thread ", " ", f->thread, sizeof f->thread);
    }
  }
}

static char *slurp(const char *path) {
  char *text = NULL;
  if (!path || kh_read_file(path, 4u << 20, &text, NULL) != 0) return NULL;
  return text;
}

void krun__sanitize_findings(krun__run *R, krep_test *t, const char *cs_log,
                             const char *test_log) {
  if (!R->s->sanitize) return;
  findings fs = {0};
  char *text = slurp(R->sanitizer ? cs_log : test_log);
  if (text) {
    if (R->sanitizer) parse_cs(text, krun_sanitize_names[R->s->sanitize], &fs);
    else parse_asan(text, &fs);
  }
  free(text);
  for (int i = 0; i < fs.n; i++) {
    finding *f = &fs.f[i];
    kp_sanitizer s = {f->tool, f->kind, *f->kernel ? f->kernel : NULL,
                      *f->address ? f->address : NULL, *f->thread ? f->thread : NULL,
                      *f->block ? f->block : NULL, *f->where ? f->where : NULL,
                      f->message.data ? f->message.data : ""};
    kp_record_out out;
    kp_encode(&out, &kp_rec_sanitizer, &s);
    out.buf[out.len] = '\0';
    kp_record rec;
    if (!out.overflow && kp_parse(out.buf, &rec, NULL) == 0)
      krep_test_keep(&R->rep, t, rec.tag, rec.fields, rec.nfields);
  }
  if (fs.n && t->outcome != KREP_TIMEOUT && t->outcome != KREP_SKIP) {
    const finding *f = &fs.f[0];
    char *msg = kh_asprintf("%s found %d error%s: %s%s%s%s%s%s%s%s%s (was: %s)",
                            R->sanitizer ? "compute-sanitizer" : "AddressSanitizer/UBSan",
                            fs.n + fs.more, fs.n + fs.more == 1 ? "" : "s", f->kind,
                            *f->kernel ? " in " : "", f->kernel, *f->block ? " block " : "",
                            f->block, *f->thread ? " thread " : "", f->thread,
                            *f->where ? " at " : "", f->where,
                            krep_outcome_name(t->outcome));
    t->outcome = KREP_FAIL;
    t->message = krep_str(&R->rep, msg);
    free(msg);
  }
  for (int i = 0; i < fs.n; i++) kh_buf_free(&fs.f[i].message);
}
