/* Reading a journal back (`kiln report rebuild`, `kiln slurm`'s merge and
 * follow): each record into the model as the run saw it, a `start` with
 * no `run` after it a lost test run, and the refusals of a journal that
 * is not one writer's (journal.c describes the records).
 */
#include "journal-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Reading ----------------------------------------------------------------------- */

static const char *nonempty(krep_report *rep, const char *s) {
  return s && *s ? krep_str(rep, s) : NULL;
}

static krep_test *read_run(krep_report *rep, const kp_record *rec) {
  jrun r;
  if (kp_decode(&krep__jrec_run, rec->fields, rec->nfields, &r, NULL, 0) != 0) return NULL;
  krep_test *t = krep_test_new(rep, r.id ? r.id : "", r.suite, r.tags);
  t->seq = (int)r.seq;
  t->repeat = r.repeat ? (int)r.repeat : 1;
  t->attempt = r.attempt ? (int)r.attempt : 1;
  t->device = (int)r.device;
  t->slots = (int)r.slots;
  t->devices = nonempty(rep, r.devices);
  t->outcome = krep_outcome_parse(r.outcome);
  if (t->outcome < 0) t->outcome = KREP_ERROR;
  t->final = !r.retried;
  t->message = nonempty(rep, r.message);
  t->file = nonempty(rep, r.file);
  t->line = (int)r.line;
  t->signal = nonempty(rep, r.signal);
  t->exit_code = (int)r.exit_code;
  t->started_s = r.start;
  t->ended_s = r.end;
  t->wall_ms = r.wall_ms;
  t->warm = r.warm == 1;
  if (t->warm) t->startup_ms = r.startup_ms, t->ready_wait_ms = r.ready_wait_ms;
  t->log_path = nonempty(rep, r.log);
  t->log_bytes = r.log_bytes;
  t->log_dropped = r.log_dropped;
  t->records_dropped = r.lines_dropped;
  t->protocol_error = nonempty(rep, r.proto_error);
  t->lost = (krep_loss){nonempty(rep, r.lost_by), nonempty(rep, r.lost_state),
                        nonempty(rep, r.lost_job), nonempty(rep, r.lost_node), NULL};
  t->ran = krep_ran_parse(r.ran);
  t->worker = r.worker > 0 ? (int)r.worker : 0;
  t->position = r.position > 0 ? (int)r.position : 0;
  return t;
}

/* A `rec` line: the test's pid and seed from its test record; every other
 * record the report lists is kept. */
static void read_rec(krep_report *rep, krep_test *t, char *line) {
  kp_record rec;
  if (!t || kp_parse(line, &rec, NULL) != 0) return;
  if (strcmp(rec.tag, "test") == 0) {
    kp_test x;
    if (kp_decode(&kp_rec_test, rec.fields, rec.nfields, &x, NULL, 0) == 0 &&
        kp_get(&rec, "pid")) {
      t->pid = x.pid;
      t->seed = x.seed;
      t->has_seed = kp_get(&rec, "seed") != NULL;
    }
    return;
  }
  krep_test_keep(rep, t, rec.tag, rec.fields, rec.nfields);
}

static void read_header(krep_report *rep, const kp_record *rec) {
  jkiln k;
  if (kp_decode(&krep__jrec_kiln, rec->fields, rec->nfields, &k, NULL, 0) != 0) return;
  rep->kiln_version = krep_str(rep, k.version ? k.version : "");
  rep->git = krep_str(rep, k.git);
  rep->host = krep_str(rep, k.host);
  rep->backend = krep_str(rep, k.backend);
  rep->config = krep_str(rep, k.config);
  rep->out_dir = krep_str(rep, k.out);
  rep->token_key = krep_str(rep, k.token_key);
  rep->command = krep_str(rep, k.command);
  rep->slots_from = krep_str(rep, k.slots_from);
  rep->durations_from = krep_str(rep, k.durations_from);
  rep->start_s = k.start;
  rep->kiln_pid = k.pid == KP_NONE ? -1 : k.pid;
  rep->containment = nonempty(rep, k.containment);
  rep->allot_source = nonempty(rep, k.allot);
}

/* What the reader keeps besides the model: the `start` records, to find
 * the runs kiln died during. */
typedef struct jstate {
  krep_test *cur;           /* the run being read */
  long cur_line;            /* where its `run` record is */
  jstart *starts;           /* strings interned in the report */
  int nstarts;
  long line, header_pid;    /* the line being read; the first header's pid */
  int finished;             /* its `finish` was read */
  const char *path;
  kh_err *err;
} jstate;

static void keep_start(krep_report *rep, jstate *js, const kp_record *r) {
  jstart st;
  if (kp_decode(&krep__jrec_start, r->fields, r->nfields, &st, NULL, 0) != 0 || !st.id) return;
  js->starts = kh_xrealloc(js->starts, (size_t)(js->nstarts + 1) * sizeof *js->starts);
  st.id = krep_str(rep, st.id);
  st.suite = krep_str(rep, st.suite);
  st.tags = krep_str(rep, st.tags);
  js->starts[js->nstarts++] = st;
}

static void read_left(krep_report *rep, krep_test *t, const kp_record *r) {
  jleft l;
  if (kp_decode(&krep__jrec_left, r->fields, r->nfields, &l, NULL, 0) != 0) return;
  krep_proc p = {l.pid, l.command, l.how, (int)l.killed, nonempty(rep, l.error)};
  krep_add_proc(rep, t, &p);
}

/* A test run that started and never finished: kiln died during it. */
static void lost(krep_report *rep, const jstart *st) {
  krep_test *t = krep_test_new(rep, st->id, st->suite, st->tags);
  t->seq = (int)st->seq;
  t->repeat = st->repeat ? (int)st->repeat : 1;
  t->attempt = st->attempt ? (int)st->attempt : 1;
  t->device = (int)st->device;
  t->slots = (int)st->slots;
  t->pid = st->pid;
  t->started_s = st->start;
  t->outcome = KREP_LOST;
  char pid[32] = "";
  if (rep->kiln_pid >= 0) snprintf(pid, sizeof pid, " (pid %lld)", rep->kiln_pid);
  char *msg = kh_asprintf("lost: kiln%s died while this test ran; its result and its "
                          "output are unknown", pid);
  t->message = krep_str(rep, msg);
  free(msg);
}

/* Runs of the plan never started: the plan less every (test, repeat) that
 * has a final record. */
static int not_run(const krep_report *rep) {
  int done = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (!t->final) continue;
    int seen = 0;
    for (int k = 0; k < i && !seen; k++)
      seen = rep->tests[k]->final && rep->tests[k]->repeat == t->repeat &&
             strcmp(rep->tests[k]->id, t->id) == 0;
    done += !seen;
  }
  return rep->planned > done ? rep->planned - done : 0;
}

/* One writer's journal has a shape: one `kiln` header, first; a test
 * run's `run` record followed by its `rec`, `left` and `tail` lines and
 * its `done`, written in one write(), so nothing comes between them; after
 * `finish`, only the `left` records of kiln's guard. Lines out of that
 * order are two writers' (two kilns given one run folder, or one journal
 * appended to another): refused, since rebuilding would merge two runs or
 * give one test's records to another. -2 with js->err set. */
static int misplaced(jstate *js, const char *tag, const kp_record *r) {
  const char *id = js->cur && js->cur->id ? js->cur->id : "?";
  const char *why = "the lines of two writers interleave (two kilns given one run folder), or "
                    "the journal is damaged; refusing to rebuild from it";
  int in_run = strcmp(tag, "rec") == 0 || strcmp(tag, "left") == 0 || strcmp(tag, "tail") == 0;
  if (strcmp(tag, "kiln") == 0) {
    const char *pid = r ? kp_get(r, "pid") : NULL;
    return kh_errf(js->err, "%s:%ld: a second `kiln` header (kiln pid %s; the first: pid %ld): "
                   "two runs wrote this journal (two kilns given one run folder, or a folder "
                   "used again by an older kiln); refusing to merge them into one run",
                   js->path, js->line, pid ? pid : "?", js->header_pid), -2;
  }
  if (js->cur && !in_run && strcmp(tag, "done") != 0)
    return kh_errf(js->err, "%s:%ld: a `%s` record before the `done` of the run of %s at line "
                   "%ld: %s", js->path, js->line, tag, id, js->cur_line, why), -2;
  if (!js->cur && (strcmp(tag, "done") == 0 || strcmp(tag, "tail") == 0 || strcmp(tag, "rec") == 0))
    return kh_errf(js->err, "%s:%ld: a `%s` line outside any test run: %s", js->path,
                   js->line, tag, why), -2;
  if (js->finished && strcmp(tag, "left") != 0)
    return kh_errf(js->err, "%s:%ld: a `%s` record after the run's `finish`: %s", js->path,
                   js->line, tag, why), -2;
  return 0;
}

/* A child's `test` record inside another test's run. */
static int foreign_rec(jstate *js, char *line) {
  if (!js->cur || strncmp(line, "test ", 5) != 0) return 0;
  char *copy = kh_strdup(line);
  kp_record rec;
  const char *id = kp_parse(copy, &rec, NULL) == 0 ? kp_get(&rec, "id") : NULL;
  int bad = id && js->cur->id && strcmp(id, js->cur->id) != 0;
  if (bad)
    kh_errf(js->err, "%s:%ld: records of %s inside the run of %s at line %ld: the lines of "
            "two writers interleave, or the journal is damaged; refusing to rebuild from it",
            js->path, js->line, id, js->cur->id, js->cur_line);
  free(copy);
  return bad ? -2 : 0;
}

/* One line of the journal; -1 when it is no record, -2 when it is out of
 * place (misplaced). Only whole lines come here (kh_lines keeps back a
 * last line without its newline, the one a kill mid-write tears), so a
 * line that does not parse is damage. */
static int read_line(krep_report *rep, jstate *js, char *line) {
  if (strncmp(line, "rec ", 4) == 0) {
    if (misplaced(js, "rec", NULL) || foreign_rec(js, line + 4)) return -2;
    read_rec(rep, js->cur, line + 4);
    return 0;
  }
  kp_record r;
  if (kp_parse(line, &r, NULL) != 0) return -1;
  if (js->line > 1 && misplaced(js, r.tag, &r)) return -2;
  jshard s;
  jpair p;
  jfinish f;
  jplan plan;
  jprobe pr;
  kp_device d;
  if (strcmp(r.tag, "kiln") == 0) {
    read_header(rep, &r);
  } else if (strcmp(r.tag, "device") == 0 &&
             kp_decode(&kp_rec_device, r.fields, r.nfields, &d, NULL, 0) == 0) {
    krep_device x = {(int)d.index, d.physical == KP_NONE ? (int)d.index : (int)d.physical,
                     d.visible, d.name, d.arch, (int)d.warp_size,
                     (long long)d.total_bytes, (long long)d.free_bytes,
                     d.slots == KP_NONE ? 0 : (int)d.slots,
                     d.budget_bytes == KP_NONE ? -1 : d.budget_bytes};
    krep_add_device(rep, &x);
  } else if (strcmp(r.tag, "shard") == 0 &&
             kp_decode(&krep__jrec_shard, r.fields, r.nfields, &s, NULL, 0) == 0) {
    rep->shard = (krep_shard){(int)s.index, (int)s.count, (int)s.selected,
                              (int)s.total, krep_str(rep, s.method),
                              krep_str(rep, s.source)};
  } else if (strcmp(r.tag, "setting") == 0 &&
             kp_decode(&krep__jrec_setting, r.fields, r.nfields, &p, NULL, 0) == 0) {
    krep_add_setting(rep, p.key ? p.key : "", p.value);
  } else if (strcmp(r.tag, "selector") == 0 &&
             kp_decode(&krep__jrec_selector, r.fields, r.nfields, &p, NULL, 0) == 0) {
    krep_add_selector(rep, p.value ? p.value : "");
  } else if (strcmp(r.tag, "plan") == 0 &&
             kp_decode(&krep__jrec_plan, r.fields, r.nfields, &plan, NULL, 0) == 0) {
    rep->planned = plan.runs >= 0 && plan.runs <= INT_MAX ? (int)plan.runs : -1;
  } else if (strcmp(r.tag, "start") == 0) {
    keep_start(rep, js, &r);
  } else if (strcmp(r.tag, "run") == 0) {
    js->cur = read_run(rep, &r);
    js->cur_line = js->line;
  } else if (strcmp(r.tag, "left") == 0) {
    read_left(rep, js->cur, &r);
  } else if (strcmp(r.tag, "tail") == 0 && js->cur &&
             kp_decode(&krep__jrec_tail, r.fields, r.nfields, &p, NULL, 0) == 0) {
    js->cur->log_tail = krep_str(rep, p.value ? p.value : "");
  } else if (strcmp(r.tag, "done") == 0) {
    js->cur = NULL;
  } else if (strcmp(r.tag, "probe") == 0 &&
             kp_decode(&krep__jrec_probe, r.fields, r.nfields, &pr, NULL, 0) == 0) {
    krep_add_probe(rep, &(krep_probe){(int)pr.device, pr.cause, (int)pr.passed,
                                      pr.message, pr.ms});
  } else if (strcmp(r.tag, "finish") == 0 &&
             kp_decode(&krep__jrec_finish, r.fields, r.nfields, &f, NULL, 0) == 0) {
    rep->finished = js->finished = 1;
    rep->end_s = f.end;
    rep->interrupted = (int)f.interrupted;
    rep->not_run = (int)f.not_run;
    rep->parent_gpu_clean = kp_get(&r, "parent_gpu_clean") ? (int)f.parent_gpu_clean : -1;
    rep->peak_rss_kb = f.peak_rss_kb == KP_NONE ? -1 : f.peak_rss_kb;
    rep->nothing_tested = nonempty(rep, f.nothing_tested);
  }
  return 0;
}

/* The first line: a `kiln` record of a format this kiln knows. */
static int read_first(krep_report *rep, jstate *js, char *line, const char *path,
                      kh_err *err) {
  kp_record r;
  jkiln k;
  char *copy = kh_strdup(line);   /* kp_parse cuts the line it reads */
  int ok = strncmp(copy, "kiln ", 5) == 0 && kp_parse(copy, &r, NULL) == 0 &&
           kp_decode(&krep__jrec_kiln, r.fields, r.nfields, &k, NULL, 0) == 0;
  long long format = ok ? k.format : 0;
  free(copy);
  if (!ok)
    return kh_errf(err, "%s:1: not a kiln journal (its first line is no `kiln` header "
                   "record)", path);
  if (format < KREP_FORMAT_OLDEST || format > KREP_FORMAT)
    return kh_errf(err, "%s:1: journal format %lld; this kiln reads %d to %d", path,
                   format, KREP_FORMAT_OLDEST, KREP_FORMAT);
  js->header_pid = k.pid == KP_NONE ? -1 : (long)k.pid;
  return read_line(rep, js, line);
}

int krep_journal_count(const char *path, long long *offset, int *done, int *failed,
                       int *lost) {
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  if (fseeko(f, (off_t)*offset, SEEK_SET) != 0) {
    fclose(f);
    return -1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0 && line[n - 1] == '\n') {
    *offset += n;
    line[n - 1] = '\0';
    kp_record r;
    jrun x;
    if (strncmp(line, "run ", 4) != 0 || kp_parse(line, &r, NULL) != 0 ||
        kp_decode(&krep__jrec_run, r.fields, r.nfields, &x, NULL, 0) != 0 || x.retried)
      continue;
    (*done)++;
    int o = krep_outcome_parse(x.outcome);
    if (o == KREP_LOST && lost) (*lost)++;
    else *failed += o < 0 || krep_outcome_failed(o);
  }
  free(line);
  fclose(f);
  return 0;
}

/* The journal holds runs in the order they finished; the report lists them
 * in the order they were scheduled, as a live run's report does. */
static int by_seq(const void *a, const void *b) {
  const krep_test *x = *(krep_test *const *)a, *y = *(krep_test *const *)b;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Journal lines are short (a record is at most KP_MAX_LINE bytes); a line
 * far past that is no journal of kiln's. */
#define MAX_LINE ((size_t)1 << 20)

int krep_journal_read(const char *path, krep_report *rep, kh_err *err) {
  krep_init(rep);
  kh_lines in;
  if (kh_lines_open(&in, path, MAX_LINE) != 0) return kh_errf(err, "%s: %s", path, strerror(errno));
  jstate js = {.path = path, .err = err};
  char *line;
  int r;
  int bad = 0;
  while (!bad && (r = kh_lines_next(&in, &line)) > 0) {
    js.line = in.lineno;
    int got = in.lineno == 1 ? read_first(rep, &js, line, path, err) : read_line(rep, &js, line);
    if (got == -1 && in.lineno > 1)
      kh_errf(err, "%s:%ld: damaged: a whole line that is no journal record; "
              "refusing to rebuild from it", path, in.lineno);
    bad = got != 0;
  }
  if (bad) {
    kh_lines_close(&in);
    free(js.starts);
    return -1;
  }
  if (r < 0) {
    int e = errno;
    long lineno = in.lineno + 1;
    kh_lines_close(&in);
    free(js.starts);
    if (e == EMSGSIZE)
      return kh_errf(err, "%s:%ld: a line longer than %zu MiB: not a kiln journal, or a "
                     "damaged one", path, lineno, MAX_LINE >> 20);
    return kh_errf(err, "%s: %s", path, strerror(e));
  }
  kh_lines_close(&in);
  if (js.cur) {
    /* Torn by a kill mid-write: the run goes (its `start` makes it lost),
     * the processes listed after it stay, as the run's (kiln's guard
     * appends what it killed after the last whole line). */
    for (int i = 0; i < js.cur->nprocs; i++) krep_add_proc(rep, NULL, &js.cur->procs[i]);
    krep__drop_last(rep);
  }
  if (!rep->kiln_version) {
    free(js.starts);
    return kh_errf(err, "%s: not a kiln journal (no header record)", path);
  }
  /* Every start without its run: kiln died during it. */
  for (int i = 0; i < js.nstarts; i++) {
    int done = 0;
    for (int k = 0; k < rep->ntests && !done; k++) done = rep->tests[k]->seq == js.starts[i].seq;
    if (!done) lost(rep, &js.starts[i]);
  }
  free(js.starts);
  qsort(rep->tests, (size_t)rep->ntests, sizeof *rep->tests, by_seq);
  if (!rep->finished) {
    rep->interrupted = 1;
    rep->end_s = rep->start_s;
    for (int i = 0; i < rep->ntests; i++)
      if (rep->tests[i]->ended_s > rep->end_s) rep->end_s = rep->tests[i]->ended_s;
    rep->not_run = not_run(rep);
  }
  return 0;
}
