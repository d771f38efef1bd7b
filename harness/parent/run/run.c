/* `kiln run` from start to end: the queue of test runs, device slots (the
 * host-wide token set), the warm pool's size, signals on a signalfd, the
 * report's metadata and journal; then the loop (loop.c); then the report,
 * JUnit and the exit status. Also two facts the report records: the
 * source's git revision and whether kiln's own process stayed GPU-clean.
 */
#include "run-impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <wordexp.h>

#include "kiln-config.h"

/* ---- Facts for the report ------------------------------------------------------------ */

int krun_gpu_clean(char *why, size_t n) {
  static const char *const files[] = {"/dev/nvidia", "/dev/kfd", "/dev/dri/"};
  static const char *const libs[] = {"libcuda", "libamdhip64", "libhsa-runtime",
                                     "libnvidia", "/dev/nvidia", "/dev/kfd", "/dev/dri/"};
  why[0] = '\0';
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char link[300], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
      if (strncmp(target, files[i], strlen(files[i])) == 0)
        snprintf(why, n, "open file %s", target);
  }
  if (d) closedir(d);
  char *maps = NULL;
  if (kh_read_file("/proc/self/maps", 64u << 20, &maps, NULL) == 0) {
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
      char *hit = strstr(maps, libs[i]);
      if (!hit) continue;
      char *eol = strchr(hit, '\n');
      snprintf(why, n, "mapped %.*s", (int)(eol ? eol - hit : 80), hit);
    }
    free(maps);
  }
  return why[0] == '\0';
}

char *krun_git_rev(void) {
  const char *env = getenv("KILN_GIT_REV");
  if (env) return kh_strdup(env);
  char *argv[] = {"git", "-C", KILN_SOURCE_DIR, "rev-parse", "--short=12", "HEAD", NULL};
  char *out = NULL;
  if (krun_capture(argv, 256, 5, &out, NULL, NULL) != 0) {
    free(out);
    return kh_strdup("");
  }
  out[strcspn(out, "\n")] = '\0';
  return out;
}

/* ---- Setting up ---------------------------------------------------------------------------- */

static void add_setting(const char *key, const char *value, void *rep) {
  krep_add_setting(rep, key, value);
}

static void fill_meta(krun__run *R) {
  const krun_opts *o = R->o;
  krep_report *rep = &R->rep;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char *git = krun_git_rev();
  rep->kiln_version = krep_str(rep, KILN_VERSION);
  rep->git = krep_str(rep, git);
  free(git);
  rep->host = krep_str(rep, host);
  rep->backend = krep_str(rep, krun_backend_names[o->bi->backend]);
  rep->config = krep_str(rep, o->config_path);
  rep->out_dir = krep_str(rep, o->out_dir);
  rep->token_key = krep_str(rep, R->use_tokens ? o->token_key : NULL);
  rep->command = krep_str(rep, o->command);
  rep->kiln_pid = R->ct.self;
  rep->containment = krep_str(rep, krun_contain_names[R->ct.mode]);
  rep->allot_source = krep_str(rep, o->s->allot_source);
  rep->slots_from = krep_str(rep, o->peaks_from);
  if (o->durations && o->s->isolation != KRUN_ISO_NONE)
    rep->durations_from = krep_str(rep, o->durations_from);
  if (o->shard && o->shard->count)
    rep->shard = (krep_shard){o->shard->index, o->shard->count, o->shard->selected,
                              o->shard->total, krep_str(rep, o->shard->method),
                              krep_str(rep, o->shard->source)};
  rep->start_s = kh_wall_s();
  for (int i = 0; i < o->bi->ndevices; i++) {
    const krun_device *d = &o->bi->dev[i];
    krep_device x = {d->index, d->physical, d->visible, d->name, d->arch, d->warp_size,
                     d->total_bytes, d->free_bytes, R->cap[i],
                     o->s->slots == KRUN_SLOTS_AUTO ? krun__budget(R, i) : -1};
    krep_add_device(rep, &x);
  }
  krun_settings_each(o->s, add_setting, rep);
  for (int i = 0; i < o->nselection; i++) krep_add_selector(rep, o->selection[i]);
}

static void fill_queue(krun__run *R) {
  const krun_registry *reg = R->o->reg;
  for (int rep = 1; rep <= R->s->repeat; rep++)
    for (int i = 0; i < reg->n; i++) {
      if (!R->o->chosen[i]) continue;
      if (R->qlen == R->qcap) {
        R->qcap = R->qcap ? 2 * R->qcap : 64;
        R->queue = kh_xrealloc(R->queue, (size_t)R->qcap * sizeof *R->queue);
      }
      R->queue[R->qlen++] = (krun__item){i, rep, 1, 0};
      R->qwarm += krun__source_warm_fits(&reg->tests[i]);
    }
}

/* A device that a config, resource spec or scheduler lists but the runner
 * does not see gets no slots: say so, since its tests will run elsewhere
 * or not. */
static void warn_unseen(krun__run *R) {
  const krun_backend_info *bi = R->o->bi;
  const char *from = R->s->allot_source ? R->s->allot_source : "config or --resource-spec";
  for (int i = 0; i < R->s->ndevices; i++) {
    const krun_dev_slots *d = &R->s->devices[i];
    int seen = 0;
    for (int k = 0; k < bi->ndevices; k++) seen |= d->id >= 0 && bi->dev[k].physical == d->id;
    if (d->id < 0)
      krun__console_note(&R->con, "kiln: warning: gpu '%s' (%s) is not a device index, so "
                         "not a device kiln numbers (0 to %d, as the runner sees them); it "
                         "gets no tests", d->name, from, KRUN_MAX_DEVICES - 1);
    else if (!seen)
      krun__console_note(&R->con, "kiln: warning: device %d is listed (%s) but the %s runner "
                         "does not see it; it gets no tests", d->id, from,
                         krun_backend_names[bi->backend]);
  }
}

/* The run's slots on each device. Under an outer scheduler's allotment
 * they are what it gave, and the host-wide token set is not used (the
 * scheduler decides who holds what); otherwise the token set's capacity is
 * made what this run wants, and the run says when that changes it. */
static int setup_tokens(krun__run *R, kh_err *err) {
  const krun_backend_info *bi = R->o->bi;
  warn_unseen(R);
  krun_device_caps(R->s, bi, R->cap);
  if (bi->ndevices == 0 || R->s->allot_source) return 0;
  if (krun_tokens_open(&R->tok, R->o->token_key, 1, err) != 0) return -1;
  R->use_tokens = 1;
  for (int d = 0; d < bi->ndevices; d++) {
    if (R->cap[d] <= 0) continue;
    int phys = bi->dev[d].physical;
    int old = krun_tokens_capacity(&R->tok, phys);
    int cap = krun_tokens_ensure(&R->tok, phys, R->cap[d], err);
    if (cap < 0) return -1;
    if (err->msg[0]) krun__console_note(&R->con, "kiln: warning: %s", err->msg);
    if (cap != old)
      krun__console_note(&R->con, "kiln: slot capacity of device %d: %d -> %d (host-wide: "
                         "every kiln using %s)", phys, old, cap, R->o->token_key);
    R->cap[d] = cap;
  }
  return 0;
}

/* Warm children per device: off for --isolation none and with no device;
 * `warm: auto` gives KRUN_WARM_PER_SLOT per slot. */
static void setup_warm(krun__run *R) {
  const krun_settings *s = R->s;
  int total = 0;
  for (int d = 0; d < R->o->bi->ndevices; d++) {
    int max = s->warm >= 0 ? s->warm : R->cap[d] * KRUN_WARM_PER_SLOT;
    /* --slots auto counts hundredths of a device, not tests: auto then
     * means as many warm children as tests at once. */
    if (s->warm < 0 && s->slots == KRUN_SLOTS_AUTO) max = R->maxrun;
    R->warm_max[d] = R->cap[d] > 0 ? max : 0;
    total += R->warm_max[d];
  }
  /* compute-sanitizer's report file is named at the spawn, for a test
   * known then: no warm children under it. */
  R->warm_on = total > 0 && R->o->bi->ndevices > 0 && s->isolation == KRUN_ISO_PROCESS && !R->sanitizer;
  /* Room in the job table for the pool, for retired children still on
   * their way out, and for a health probe per device. */
  R->maxjobs = R->maxrun + (R->warm_on ? 2 * total : 0) +
               (s->isolation != KRUN_ISO_NONE ? R->o->bi->ndevices : 0);
  free(R->jobs);
  R->jobs = kh_xcalloc((size_t)R->maxjobs, sizeof *R->jobs);
}

static int setup_signals(krun__run *R, sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < 4; i++) sigaddset(&set, sigs[i]);
  sigprocmask(SIG_BLOCK, &set, old);
  signal(SIGPIPE, SIG_IGN);
  R->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  return R->sigfd < 0 ? -1 : 0;
}

static int parse_wrap(krun__run *R) {
  if (!R->s->wrap || !*R->s->wrap) return 0;
  wordexp_t we;
  if (wordexp(R->s->wrap, &we, WRDE_NOCMD) != 0 || we.we_wordc == 0) {
    fprintf(stderr, "kiln: --wrap: cannot split '%s' into words (no $(...) or unbalanced "
                    "quotes, please)\n", R->s->wrap);
    return -1;
  }
  R->wrap = kh_xcalloc(we.we_wordc, sizeof *R->wrap);
  for (size_t i = 0; i < we.we_wordc; i++) R->wrap[i] = kh_strdup(we.we_wordv[i]);
  R->nwrap = (int)we.we_wordc;
  wordfree(&we);
  return 0;
}

/* ---- The run folder ------------------------------------------------------------------ */

/* One kiln per run folder: an flock on DIR/lock, held until kiln exits (the
 * kernel drops it however kiln ends). A second kiln given the folder
 * refuses before it runs anything: two would write one journal, and the
 * report and logs would be whichever wrote last. */
static int lock_run_dir(krun__run *R) {
  const char *dir = R->o->out_dir;
  char *path = kh_asprintf("%s/lock", dir);
  int fd;
  do fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    fprintf(stderr, "kiln: run folder %s: cannot create %s: %s\n", dir, path, strerror(errno));
    free(path);
    return -1;
  }
  int rc;
  do rc = flock(fd, LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int e = errno;
    char holder[32] = "";
    ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
    holder[n > 0 ? n : 0] = '\0';
    holder[strcspn(holder, "\n")] = '\0';
    if (e == EWOULDBLOCK)
      fprintf(stderr, "kiln: run folder %s is in use by another kiln (pid %s, which holds "
              "%s): two runs in one folder would write one journal, and the report and "
              "logs would be whichever wrote last; give this run a folder of its own (-o)\n",
              dir, *holder ? holder : "?", path);
    else
      fprintf(stderr, "kiln: run folder %s: cannot lock %s: %s\n", dir, path, strerror(e));
    close(fd);
    free(path);
    return -1;
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  /* Without its pid the lock still holds; another kiln's refusal lacks it. */
  if (ftruncate(fd, 0) == 0) (void)kh_write_all(fd, pid, (size_t)len);
  free(path);
  R->lock_fd = fd;
  return 0;
}

static void human(long long bytes, char *out, size_t n) {
  if (bytes < (1 << 20)) snprintf(out, n, "%.0f KiB", bytes / 1024.0);
  else if (bytes < (1ll << 30)) snprintf(out, n, "%.1f MiB", bytes / 1048576.0);
  else snprintf(out, n, "%.1f GiB", bytes / 1073741824.0);
}

/* Room for the run before any test starts: refused with the numbers when
 * the folder's file system has less than KRUN__MIN_FREE (a journal and a
 * report cannot be kept), a warning when the logs of every planned run
 * could fill what is free. */
#define KRUN__MIN_FREE (256ll << 10)

static int check_room(krun__run *R) {
  const char *dir = R->o->out_dir;
  struct statvfs fs;
  int rc;
  do rc = statvfs(dir, &fs);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) return 0;    /* unknown: the journal's header write tells */
  long long avail = (long long)fs.f_bavail * (long long)fs.f_frsize;
  long long size = (long long)fs.f_blocks * (long long)fs.f_frsize;
  long long need = (long long)R->qlen * krun__log_max_bytes();
  char a[32], t[32], w[32];
  human(avail, a, sizeof a), human(size, t, sizeof t), human(need, w, sizeof w);
  if (avail < KRUN__MIN_FREE) {
    fprintf(stderr, "kiln: run folder %s: its file system has %s free (of %s), too little "
            "to keep the run's journal and report (at least %lld KiB); free some space or "
            "give another folder (-o). No test was run\n", dir, a, t, KRUN__MIN_FREE >> 10);
    return -1;
  }
  if (avail < need)
    krun__console_note(&R->con, "kiln: warning: run folder %s: its file system has %s free "
                       "(of %s); the logs of %d test run%s may take up to %s (%lld KiB "
                       "each at most)", dir, a, t, R->qlen, R->qlen == 1 ? "" : "s", w,
                       krun__log_max_bytes() >> 10);
  return 0;
}

/* A report.yaml left by an earlier run in this folder would stand for
 * this run until this one writes its own, or for ever if it is killed. */
static int clear_old_report(krun__run *R) {
  char *path = kh_asprintf("%s/report.yaml", R->o->out_dir);
  int rc = unlink(path) == 0 || errno == ENOENT ? 0 : -1;
  if (rc != 0)
    fprintf(stderr, "kiln: run folder %s: cannot remove the earlier run's %s: %s\n",
            R->o->out_dir, path, strerror(errno));
  free(path);
  return rc;
}

/* ---- Writing out -------------------------------------------------------------------------------- */

/* This process's peak RSS in KiB: VmHWM of its own memory. (getrusage's
 * ru_maxrss also counts the memory of whatever process exec'd kiln, when
 * that one made it with vfork or fork.) */
static long long peak_rss_kb(void) {
  char *status = NULL;
  long long kb = -1;
  if (kh_read_file("/proc/self/status", 1 << 16, &status, NULL) == 0) {
    const char *hwm = strstr(status, "VmHWM:");
    if (hwm) kb = strtoll(hwm + 6, NULL, 10);
    free(status);
  }
  return kb;
}

/* Why the run tested nothing, or NULL: its backend was asked for and has
 * no device, or every selected test was skipped. Such a run is not green
 * unless the user says it may be (--allow-empty). */
static const char *nothing_tested(krun__run *R, char *buf, size_t n) {
  const krun_backend_info *bi = R->o->bi;
  if (R->s->allow_empty || R->rep.interrupted) return NULL;
  if (bi->ndevices == 0 && R->s->backend != KRUN_BACKEND_AUTO) {
    snprintf(buf, n, "the %s runner found no device%s%s", krun_backend_names[bi->backend],
             *bi->error ? ": " : "", bi->error);
    return buf;
  }
  int counts[KREP_NOUTCOMES];
  int total = krep_count(&R->rep, counts);
  if (total > 0 && counts[KREP_SKIP] == total) {
    snprintf(buf, n, "every selected test was skipped (%d skipped)", total);
    return buf;
  }
  return NULL;
}

/* The run's status. A test's own verdict (fail, crash, timeout, leak,
 * lost) comes first: no later trouble (a harness error, a report that
 * could not be written) may hide it behind another status. */
static int exit_status(krun__run *R) {
  if (R->rep.interrupted) return KH_EXIT_INTERRUPTED;
  int verdict = 0, errors = 0;
  for (int i = 0; i < R->rep.ntests; i++) {
    const krep_test *t = R->rep.tests[i];
    if (!t->final || !krep_outcome_failed(t->outcome)) continue;
    if (t->outcome == KREP_ERROR) errors++;
    else verdict++;
  }
  /* Processes the end-of-run sweep killed: no test could be named, but the
   * run left them, and a run that leaves processes is not clean. */
  if (verdict || R->rep.nprocs) return KH_EXIT_FAIL;
  if (R->infra || R->rep.nothing_tested) return KH_EXIT_INFRA;
  return errors ? KH_EXIT_FAIL : KH_EXIT_OK;
}

/* A test may delete the run folder (KILN_RUN_DIR) or part of it: the
 * report must not point at logs that are gone, and the run is not clean.
 * Returns how many logs (and the journal) are missing. */
static int run_dir_damage(krun__run *R) {
  krep_report *rep = &R->rep;
  int missing = 0;
  for (int i = 0; i < rep->ntests; i++) {
    krep_test *t = rep->tests[i];
    if (!t->log_path) continue;
    char *p = kh_asprintf("%s/%s", R->o->out_dir, t->log_path);
    if (access(p, F_OK) != 0) {
      t->log_path = NULL;
      missing++;
    }
    free(p);
  }
  char *j = kh_asprintf("%s/journal", R->o->out_dir);
  int journal = access(j, F_OK) == 0;
  free(j);
  if (missing || !journal)
    krun__console_note(&R->con, "kiln: warning: the run folder %s lost %d test log%s%s "
                       "during the run (did a test delete KILN_RUN_DIR?); the report names "
                       "no log that is gone, and the run fails", R->o->out_dir, missing,
                       missing == 1 ? "" : "s", journal ? "" : " and its journal");
  return missing + !journal;
}

static int finish(krun__run *R) {
  krep_report *rep = &R->rep;
  int damaged = run_dir_damage(R);
  if (damaged) kh_mkdir_p(R->o->out_dir, 0755);
  rep->end_s = kh_wall_s();
  rep->not_run = R->qlen - R->qhead;
  char why[512];
  rep->parent_gpu_clean = krun_gpu_clean(why, sizeof why);
  if (!rep->parent_gpu_clean) krun__console_note(&R->con, "kiln: parent is not GPU-clean: %s", why);
  rep->peak_rss_kb = peak_rss_kb();
  char empty[640];
  rep->nothing_tested = krep_str(rep, nothing_tested(R, empty, sizeof empty));
  int jfailed = krep_journal_close(R->journal, rep);
  R->journal = NULL;
  char *path = kh_asprintf("%s/report.yaml", R->o->out_dir);
  rep->path = krep_str(rep, path);
  kh_err err;
  int status = exit_status(R);
  if (damaged && status == KH_EXIT_OK) status = KH_EXIT_INFRA;
  if (jfailed)
    krun__console_note(&R->con, "kiln: the journal %s/journal is incomplete: a write failed "
                       "(%s), so `kiln report rebuild` would not give this run", R->o->out_dir,
                       strerror(jfailed));
  if (R->logs_failed)
    krun__console_note(&R->con, "kiln: %d test log%s in %s/logs could not be written (%s)",
                       R->logs_failed, R->logs_failed == 1 ? "" : "s", R->o->out_dir,
                       strerror(R->logs_errno));
  int main_written = krep_write(rep, path, &err) == 0;
  int wrote = main_written &&
              (!R->o->report_copy || krep_write(rep, R->o->report_copy, &err) == 0);
  if (wrote && R->o->junit && krep_junit_write(rep, R->o->junit, &err) != 0) wrote = 0;
  if (!wrote) krun__console_note(&R->con, "kiln: %s", err.msg);
  if ((!wrote || jfailed || R->logs_failed) && status == KH_EXIT_OK) status = KH_EXIT_INFRA;
  /* The summary names the report only when it is there. */
  krun__console_summary(&R->con, rep, main_written ? path : NULL);
  if (rep->nprocs)
    krun__console_note(&R->con, "kiln: %d process%s left running by the run's tests (no one "
                       "test could be named) %s killed at its end: `processes_left` under "
                       "`run` in the report; the run fails", rep->nprocs,
                       rep->nprocs == 1 ? "" : "es", rep->nprocs == 1 ? "was" : "were");
  if (rep->nothing_tested)
    krun__console_note(&R->con, "kiln: nothing was tested: %s (--allow-empty accepts this)",
                       rep->nothing_tested);
  free(path);
  return status;
}

/* The sources' view of the run and their contexts (source-impl.h). */
static void sources_open(krun__run *R) {
  const krun_registry *reg = R->o->reg;
  int *queued = kh_xcalloc((size_t)reg->nsources + 1, sizeof *queued);
  for (int q = R->qhead; q < R->qlen; q++) queued[reg->tests[R->queue[q].test].source]++;
  R->srcrun = (krun__srcrun){.s = R->s, .seed_given = krun_setting_is_set(R->s, "seed"),
                             .reg = reg, .runner = R->o->bi->runner,
                             .out_dir = R->o->out_dir, .queued = queued, .con = &R->con,
                             .core = R};
  R->srcctx = kh_xcalloc((size_t)krun__nsources(), sizeof *R->srcctx);
  krun__sources_open(&R->srcrun, R->srcctx);
}

static void cleanup(krun__run *R, const sigset_t *old) {
  if (R->journal) krep_journal_close(R->journal, &R->rep);
  if (R->srcctx) krun__sources_close(R->srcctx);
  free(R->srcctx), free((int *)R->srcrun.queued);
  R->srcctx = NULL, R->srcrun.queued = NULL;
  krun__guard_stop(R);
  krun__contain_teardown(R);
  if (R->sigfd >= 0) close(R->sigfd);
  if (old) sigprocmask(SIG_SETMASK, old, NULL);
  krep_free(&R->rep);
  for (int i = 0; i < R->nwrap; i++) free(R->wrap[i]);
  free(R->wrap);
  free(R->queue), free(R->jobs), free(R->line), free(R->log_dir), free(R->self), free(R->held);
  free(R->sanitizer), free(R->est);
  for (int i = 0; i < R->nconfirm; i++) free(R->confirm[i].after);
  free(R->confirm);
  if (R->lock_fd >= 0) close(R->lock_fd);
}

int krun_run(const krun_opts *o) {
  krun__run R;
  memset(&R, 0, sizeof R);
  R.o = o, R.s = o->s, R.sigfd = -1, R.guard_fd = -1, R.lock_fd = -1;
  R.ct.self = getpid();
  krep_init(&R.rep);
  if (parse_wrap(&R) != 0) {
    cleanup(&R, NULL);
    return KH_EXIT_USAGE;
  }
  int refused = krun__sanitize_setup(&R);
  if (refused) {
    cleanup(&R, NULL);
    return refused;
  }
  R.line = kh_xmalloc(KP_MAX_LINE);
  R.self = kh_strdup(kh_self_exe());
  R.maxjobs = R.maxrun = o->s->isolation == KRUN_ISO_NONE ? 1 : krun__jobs(o->s);
  R.jobs = kh_xcalloc((size_t)R.maxjobs, sizeof *R.jobs);
  fill_queue(&R);
  krun__console_init(&R.con, o->verbose, o->quiet, R.qlen);
  if (kh_mkdir_p(o->out_dir, 0755) != 0) {
    fprintf(stderr, "kiln: cannot create run folder %s: %s\n", o->out_dir, strerror(errno));
    cleanup(&R, NULL);
    return KH_EXIT_INFRA;
  }
  if (lock_run_dir(&R) != 0 || check_room(&R) != 0 || clear_old_report(&R) != 0) {
    cleanup(&R, NULL);
    return KH_EXIT_INFRA;
  }
  kh_err err;
  sigset_t old;
  if (setup_signals(&R, &old) != 0 || setup_tokens(&R, &err) != 0 ||
      krun__contain_setup(&R, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", R.sigfd < 0 ? strerror(errno) : err.msg);
    cleanup(&R, &old);
    return KH_EXIT_INFRA;
  }
  setup_warm(&R);
  fill_meta(&R);
  char *jpath = kh_asprintf("%s/journal", o->out_dir);
  R.journal = krep_journal_open(&R.rep, jpath, &err);
  free(jpath);
  if (!R.journal) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    cleanup(&R, &old);
    return KH_EXIT_INFRA;
  }
  krep_journal_plan(R.journal, R.qlen);
  krun__guard_start(&R);
  krun__console_note(&R.con, "kiln: %d test run%s on %s (%d device%s: %s), run folder %s",
                     R.qlen, R.qlen == 1 ? "" : "s", krun_backend_names[o->bi->backend],
                     o->bi->ndevices, o->bi->ndevices == 1 ? "" : "s", o->bi->devices_from,
                     o->out_dir);
  krun__slots_note(&R);
  krun__order(&R);
  sources_open(&R);
  krun__loop(&R);
  krun__sources_close(R.srcctx);     /* what they keep is no stray of the run's */
  krun__contain_sweep(&R);
  int status = finish(&R);
  cleanup(&R, &old);
  return status;
}
