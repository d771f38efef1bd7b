/* kh-probe: a small helper for kiln's harness tests (the test scripts are
 * bash; this does what bash cannot do reliably).
 *   kh-probe flat FILE         YAML as path=value lines (tests.0.outcome=pass)
 *   kh-probe semval KEY DEV    "free capacity" of a device-token semaphore
 *   kh-probe semrm KEY         removes the token set of KEY
 *   kh-probe overlap MARGIN_MS REPORT...
 *                              most tests holding slots at once across the
 *                              reports (started..ended, each end trimmed by
 *                              MARGIN_MS for the parents' reaping latency)
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "run.h" /* krun_tokens_ipc_key: kiln's own key of a key path */

/* Must match KRUN_MAX_DEVICES (harness/parent/run/run.h). */
#define KH_MAX_DEVICES 32

static void flat_node(yaml_document_t *d, yaml_node_t *n, char *path,
                      FILE *out) {
  size_t len = strlen(path);
  if (n->type == YAML_SCALAR_NODE) {
    fprintf(out, "%s=", path);
    for (size_t i = 0; i < n->data.scalar.length; i++) {
      char c = (char)n->data.scalar.value[i];
      fputs(c == '\n' ? "\\n" : (char[]){c, 0}, out);
    }
    fputc('\n', out);
  } else if (n->type == YAML_SEQUENCE_NODE) {
    int i = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         it < n->data.sequence.items.top; it++, i++) {
      snprintf(path + len, 4096 - len, "%s%d", len ? "." : "", i);
      flat_node(d, yaml_document_get_node(d, *it), path, out);
    }
    if (i == 0) fprintf(out, "%s=[]\n", path);
  } else if (n->type == YAML_MAPPING_NODE) {
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(d, p->key);
      snprintf(path + len, 4096 - len, "%s%s", len ? "." : "",
               (const char *)k->data.scalar.value);
      flat_node(d, yaml_document_get_node(d, p->value), path, out);
    }
  }
  path[len] = '\0';
}

static int load(const char *file, yaml_document_t *doc) {
  FILE *f = fopen(file, "r");
  if (!f) return perror(file), -1;
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_file(&p, f);
  int ok = yaml_parser_load(&p, doc);
  if (!ok)
    fprintf(stderr, "%s:%zu:%zu: %s\n", file, p.problem_mark.line + 1,
            p.problem_mark.column + 1, p.problem);
  yaml_parser_delete(&p);
  fclose(f);
  return ok ? 0 : -1;
}

static int cmd_flat(const char *file) {
  yaml_document_t doc;
  if (load(file, &doc) != 0) return 2;
  char path[4096] = "";
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (root) flat_node(&doc, root, path, stdout);
  yaml_document_delete(&doc);
  return 0;
}


static int cmd_semval(const char *keypath, int dev) {
  key_t key = krun_tokens_ipc_key(keypath);
  int id = key == -1 ? -1 : semget(key, 0, 0);
  if (id < 0) return perror(keypath), 2;
  printf("%d %d\n", semctl(id, 1 + dev, GETVAL),
         semctl(id, 1 + KH_MAX_DEVICES + dev, GETVAL));
  return 0;
}

static int cmd_semrm(const char *keypath) {
  key_t key = krun_tokens_ipc_key(keypath);
  int id = key == -1 ? -1 : semget(key, 0, 0);
  return id >= 0 && semctl(id, 0, IPC_RMID) == 0 ? 0 : 1;
}

static yaml_node_t *get(yaml_document_t *d, yaml_node_t *m, const char *key) {
  if (!m || m->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
       p < m->data.mapping.pairs.top; p++)
    if (!strcmp((char *)yaml_document_get_node(d, p->key)->data.scalar.value, key))
      return yaml_document_get_node(d, p->value);
  return NULL;
}

/* "2026-11-22T06:21:15.394Z" in milliseconds since the epoch. */
static double iso_ms(const char *s) {
  struct tm tm = {0};
  int ms = 0;
  sscanf(s, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
         &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (double)timegm(&tm) * 1e3 + ms;
}

static int cmd_overlap(double margin, int n, char **files) {
  double ev[4096][2];
  int nev = 0;
  for (int f = 0; f < n; f++) {
    yaml_document_t doc;
    if (load(files[f], &doc) != 0) return 2;
    yaml_node_t *tests = get(&doc, yaml_document_get_root_node(&doc), "tests");
    for (yaml_node_item_t *it = tests ? tests->data.sequence.items.start : NULL;
         tests && it < tests->data.sequence.items.top && nev < 4094; it++) {
      yaml_node_t *t = yaml_document_get_node(&doc, *it);
      double s = iso_ms((char *)get(&doc, t, "started")->data.scalar.value);
      double e = iso_ms((char *)get(&doc, t, "ended")->data.scalar.value) - margin;
      if (e <= s) continue;
      ev[nev][0] = s, ev[nev++][1] = +1;
      ev[nev][0] = e, ev[nev++][1] = -1;
    }
    yaml_document_delete(&doc);
  }
  /* Sort events by time, ends before starts at the same instant. */
  for (int i = 1; i < nev; i++)
    for (int j = i; j > 0 && (ev[j][0] < ev[j - 1][0] ||
                              (ev[j][0] == ev[j - 1][0] && ev[j][1] < ev[j - 1][1])); j--) {
      double t0 = ev[j][0], t1 = ev[j][1];
      ev[j][0] = ev[j - 1][0], ev[j][1] = ev[j - 1][1];
      ev[j - 1][0] = t0, ev[j - 1][1] = t1;
    }
  int cur = 0, max = 0;
  for (int i = 0; i < nev; i++) {
    cur += (int)ev[i][1];
    if (cur > max) max = cur;
  }
  printf("%d\n", max);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "flat")) return cmd_flat(argv[2]);
  if (argc == 4 && !strcmp(argv[1], "semval"))
    return cmd_semval(argv[2], atoi(argv[3]));
  if (argc == 3 && !strcmp(argv[1], "semrm")) return cmd_semrm(argv[2]);
  if (argc >= 4 && !strcmp(argv[1], "overlap"))
    return cmd_overlap(atof(argv[2]), argc - 3, argv + 3);
  fprintf(stderr, "usage: kh-probe flat FILE | semval KEY DEV | "
                  "overlap MARGIN_MS REPORT...\n");
  return 2;
}
