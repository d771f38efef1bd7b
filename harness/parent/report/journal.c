/* The journal: the run as it happens, in the protocol's record syntax (its
 * own record types are described here the way records.h describes a
 * child's). The run starts with `kiln`, `shard`, `device`, `setting`,
 * `selector` and `plan` (the runs it sets out to make) records; a test run
 * writes `start` before its test runs, and when it has finished a `run`
 * record (the parent's view), the child's records as `rec <record>`, the
 * processes it left (`left`), a `tail` and `done`; the run ends with
 * `finish`. `kiln report rebuild` turns a journal back into the model
 * (journal-read.c), so rebuilding replays what was seen; a `start` with no
 * `run` after it is a test run kiln died during (lost). A device health
 * probe is a `probe` record. The records' own types: journal-impl.h.
 */
#include "journal-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- The journal's own records ----------------------------------------------- */

#define K(s, name, type) {#name, type, offsetof(s, name), 0}
#define O(s, name, type) {#name, type, offsetof(s, name), 1}
static const kp_key kiln_keys[] = {
    K(jkiln, format, KP_INT), K(jkiln, version, KP_STR), K(jkiln, git, KP_STR),
    K(jkiln, host, KP_STR), K(jkiln, backend, KP_STR), K(jkiln, config, KP_STR),
    K(jkiln, out, KP_STR), K(jkiln, token_key, KP_STR), K(jkiln, start, KP_DOUBLE),
    K(jkiln, command, KP_STR), O(jkiln, pid, KP_INT), K(jkiln, containment, KP_STR),
    K(jkiln, allot, KP_STR), O(jkiln, slots_from, KP_STR), O(jkiln, durations_from, KP_STR)};
static const kp_key plan_keys[] = {K(jplan, runs, KP_INT)};
static const kp_key start_keys[] = {
    K(jstart, seq, KP_INT), K(jstart, id, KP_STR), K(jstart, suite, KP_STR),
    K(jstart, tags, KP_STR), K(jstart, repeat, KP_INT), K(jstart, attempt, KP_INT),
    K(jstart, device, KP_INT), K(jstart, slots, KP_INT), O(jstart, pid, KP_INT),
    K(jstart, start, KP_DOUBLE)};
static const kp_key left_keys[] = {
    K(jleft, pid, KP_INT), K(jleft, command, KP_STR), K(jleft, how, KP_STR),
    K(jleft, killed, KP_INT), K(jleft, error, KP_STR)};
static const kp_key shard_keys[] = {
    K(jshard, index, KP_INT), K(jshard, count, KP_INT), K(jshard, selected, KP_INT),
    K(jshard, total, KP_INT), K(jshard, method, KP_STR), K(jshard, source, KP_STR)};
static const kp_key setting_keys[] = {K(jpair, key, KP_STR), K(jpair, value, KP_STR)};
static const kp_key selector_keys[] = {{"value", KP_STR, offsetof(jpair, value), 0}};
static const kp_key tail_keys[] = {{"text", KP_STR, offsetof(jpair, value), 0}};
static const kp_key run_keys[] = {
    K(jrun, id, KP_STR), K(jrun, seq, KP_INT), K(jrun, suite, KP_STR),
    K(jrun, tags, KP_STR), K(jrun, repeat, KP_INT), K(jrun, attempt, KP_INT),
    K(jrun, device, KP_INT), K(jrun, slots, KP_INT), K(jrun, devices, KP_STR),
    K(jrun, outcome, KP_STR),
    K(jrun, retried, KP_INT), K(jrun, message, KP_STR), K(jrun, file, KP_STR),
    K(jrun, line, KP_INT), K(jrun, signal, KP_STR), K(jrun, exit_code, KP_INT),
    K(jrun, start, KP_DOUBLE), K(jrun, end, KP_DOUBLE), K(jrun, wall_ms, KP_DOUBLE),
    O(jrun, warm, KP_INT), K(jrun, startup_ms, KP_DOUBLE),
    K(jrun, ready_wait_ms, KP_DOUBLE), K(jrun, log, KP_STR),
    K(jrun, log_bytes, KP_INT), K(jrun, log_dropped, KP_INT),
    K(jrun, lines_dropped, KP_INT), K(jrun, proto_error, KP_STR),
    K(jrun, lost_by, KP_STR), K(jrun, lost_state, KP_STR), K(jrun, lost_job, KP_STR),
    K(jrun, lost_node, KP_STR), O(jrun, ran, KP_STR), O(jrun, worker, KP_INT),
    O(jrun, position, KP_INT)};
static const kp_key probe_keys[] = {
    K(jprobe, device, KP_INT), K(jprobe, cause, KP_STR), K(jprobe, passed, KP_INT),
    K(jprobe, message, KP_STR), K(jprobe, ms, KP_DOUBLE)};
static const kp_key finish_keys[] = {
    K(jfinish, end, KP_DOUBLE), K(jfinish, interrupted, KP_INT),
    K(jfinish, not_run, KP_INT), K(jfinish, parent_gpu_clean, KP_INT),
    O(jfinish, peak_rss_kb, KP_INT), K(jfinish, nothing_tested, KP_STR)};
#define D(tag, keys) {tag, keys, (int)(sizeof keys / sizeof keys[0])}
const kp_rdesc krep__jrec_kiln = D("kiln", kiln_keys), krep__jrec_shard = D("shard", shard_keys),
              krep__jrec_setting = D("setting", setting_keys),
              krep__jrec_selector = D("selector", selector_keys),
              krep__jrec_tail = D("tail", tail_keys), krep__jrec_run = D("run", run_keys),
              krep__jrec_finish = D("finish", finish_keys), krep__jrec_done = {"done", NULL, 0},
              krep__jrec_plan = D("plan", plan_keys), krep__jrec_start = D("start", start_keys),
              krep__jrec_left = D("left", left_keys), krep__jrec_probe = D("probe", probe_keys);

/* ---- Writing --------------------------------------------------------------------- */

struct krep_journal {
  int fd;
  kh_buf buf;
  kp_record_out rec;
  int failed;               /* errno of the first write that failed, or 0 */
};

static void put(krep_journal *j, const kp_rdesc *d, const void *rec) {
  kp_encode(&j->rec, d, rec);
  kh_buf_add(&j->buf, j->rec.buf, j->rec.len);
  kh_buf_add(&j->buf, "\n", 1);
}

/* The record in j->rec as a child's: `rec <record>`. */
static void put_rec(krep_journal *j) {
  kh_buf_add(&j->buf, "rec ", 4);
  kh_buf_add(&j->buf, j->rec.buf, j->rec.len);
  kh_buf_add(&j->buf, "\n", 1);
}

/* A write that fails (a full disk) is kept: the run says at its end that
 * its journal is incomplete. */
static void flush(krep_journal *j) {
  if (j->buf.len && kh_write_all(j->fd, j->buf.data, j->buf.len) != 0 && !j->failed)
    j->failed = errno ? errno : EIO;
  j->buf.len = 0;
}

/* Long free text is cut so that a record always fits in one line. */
static const char *cut(const char *v, char *buf, size_t n) {
  if (!v) return NULL;
  snprintf(buf, n, "%s", v);
  return buf;
}

krep_journal *krep_journal_open(const krep_report *rep, const char *path,
                                kh_err *err) {
  /* A run folder used again starts a journal of its own (the caller holds
   * the folder's lock); appending would make one journal of two runs. */
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    kh_errf(err, "journal %s: %s", path, strerror(errno));
    return NULL;
  }
  krep_journal *j = kh_xcalloc(1, sizeof *j);
  j->fd = fd;
  jkiln k = {KREP_FORMAT, rep->kiln_version, rep->git, rep->host, rep->backend,
             rep->config, rep->out_dir, rep->token_key, rep->start_s, rep->command,
             rep->kiln_pid >= 0 ? rep->kiln_pid : KP_NONE, rep->containment,
             rep->allot_source, rep->slots_from, rep->durations_from};
  put(j, &krep__jrec_kiln, &k);
  if (rep->shard.count) {
    jshard s = {rep->shard.index, rep->shard.count, rep->shard.selected,
                rep->shard.total, rep->shard.method, rep->shard.source};
    put(j, &krep__jrec_shard, &s);
  }
  for (int i = 0; i < rep->ndevices; i++) {
    const krep_device *d = &rep->devices[i];
    kp_device dev = {NULL, d->index, d->name, d->arch, d->warp_size, 0, 0,
                     (unsigned long long)d->total_bytes,
                     (unsigned long long)d->free_bytes, NULL, d->physical,
                     d->visible, d->slots > 0 ? d->slots : KP_NONE,
                     d->budget_bytes >= 0 ? d->budget_bytes : KP_NONE};
    put(j, &kp_rec_device, &dev);
  }
  for (int i = 0; i < rep->nset; i++)
    put(j, &krep__jrec_setting, &(jpair){rep->set_keys[i], rep->set_values[i]});
  for (int i = 0; i < rep->nselection; i++)
    put(j, &krep__jrec_selector, &(jpair){NULL, rep->selection[i]});
  flush(j);
  if (!j->failed && fdatasync(fd) != 0 && errno != EINVAL) j->failed = errno;
  if (j->failed) {
    kh_errf(err, "journal %s: cannot write its header: %s", path, strerror(j->failed));
    close(fd);
    kh_buf_free(&j->buf);
    free(j);
    return NULL;
  }
  return j;
}

void krep_journal_plan(krep_journal *j, int runs) {
  if (!j) return;
  put(j, &krep__jrec_plan, &(jplan){runs});
  flush(j);
}

void krep_journal_start(krep_journal *j, const krep_test *t) {
  if (!j) return;
  jstart st = {t->seq, t->id, t->suite, t->tags, t->repeat, t->attempt, t->device,
               t->slots, t->pid, t->started_s};
  put(j, &krep__jrec_start, &st);
  flush(j);
}

static void put_procs(krep_journal *j, const krep_proc *p, int n) {
  for (int i = 0; i < n; i++)
    put(j, &krep__jrec_left, &(jleft){p[i].pid, p[i].command, p[i].how, p[i].killed, p[i].error});
}

void krep_journal_test(krep_journal *j, const krep_test *t) {
  if (!j) return;
  char message[8192], file[1024], proto[8192];
  jrun r = {t->id, t->seq, t->suite, t->tags, t->repeat, t->attempt, t->device,
            t->slots, t->devices, krep_outcome_name(t->outcome), !t->final,
            cut(t->message, message, sizeof message), cut(t->file, file, sizeof file),
            t->line, t->signal, t->exit_code, t->started_s, t->ended_s, t->wall_ms,
            t->warm ? 1 : KP_NONE, t->startup_ms, t->ready_wait_ms, t->log_path,
            t->log_bytes, t->log_dropped, t->records_dropped,
            cut(t->protocol_error, proto, sizeof proto), t->lost.by, t->lost.state,
            t->lost.job, t->lost.node, krep_ran_name(t->ran),
            t->worker > 0 ? t->worker : KP_NONE, t->position > 0 ? t->position : KP_NONE};
  put(j, &krep__jrec_run, &r);
  if (t->pid != KP_NONE) {
    kp_test test = {t->id, t->pid, t->seed};
    kp_encode(&j->rec, &kp_rec_test, &test);
    put_rec(j);
  }
  for (int i = 0; i < t->nrecs; i++) {
    const krep_rec *x = t->recs[i];
    kp_begin(&j->rec, x->tag);
    for (int k = 0; k < x->n; k++) kp_add_str(&j->rec, x->f[k].key, x->f[k].value);
    put_rec(j);
  }
  put_procs(j, t->procs, t->nprocs);
  char tail[8192];
  put(j, &krep__jrec_tail, &(jpair){NULL, cut(t->log_tail ? t->log_tail : "", tail, sizeof tail)});
  put(j, &krep__jrec_done, NULL);
  flush(j);
  /* No fdatasync here: a write() is in the page cache the moment it
   * returns and survives kiln being killed, even by SIGKILL; a sync only
   * guards against the machine going down, and one per test made the
   * parent's loop wait on the disk (docs/reliability.md). */
}

void krep_journal_probe(krep_journal *j, const krep_probe *p) {
  if (!j) return;
  char message[4096];
  jprobe r = {p->device, p->cause, p->passed, cut(p->message, message, sizeof message), p->ms};
  put(j, &krep__jrec_probe, &r);
  flush(j);
}

int krep_journal_close(krep_journal *j, const krep_report *rep) {
  if (!j) return 0;
  put_procs(j, rep->procs, rep->nprocs);
  jfinish f = {rep->end_s, rep->interrupted, rep->not_run, rep->parent_gpu_clean,
               rep->peak_rss_kb >= 0 ? rep->peak_rss_kb : KP_NONE, rep->nothing_tested};
  put(j, &krep__jrec_finish, &f);
  flush(j);
  if (fdatasync(j->fd) != 0 && errno != EINVAL && !j->failed) j->failed = errno;
  if (close(j->fd) != 0 && errno != EINTR && !j->failed) j->failed = errno;
  int failed = j->failed;
  kh_buf_free(&j->buf);
  free(j);
  return failed;
}

void krep_journal_append_left(const char *path, const krep_proc *p, int n) {
  int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  /* A kill may have torn kiln's last line: it goes (a reader drops it
   * anyway), so that ours start on a line of their own. */
  off_t end = lseek(fd, 0, SEEK_END), at = end;
  char buf[4096];
  while (at > 0) {
    ssize_t k = pread(fd, buf, (size_t)(at < 4096 ? at : 4096), at - (at < 4096 ? at : 4096));
    if (k <= 0) break;
    char *nl = memrchr(buf, '\n', (size_t)k);
    if (nl) {
      at = at - k + (nl - buf) + 1;
      break;
    }
    at -= k;
  }
  if (at != end && ftruncate(fd, at) != 0) {
    close(fd);
    return;
  }
  krep_journal j = {.fd = fd};
  put_procs(&j, p, n);
  flush(&j);
  (void)fdatasync(fd);
  close(fd);
  kh_buf_free(&j.buf);
}
