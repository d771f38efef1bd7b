/* kh-probe: a small helper for kiln's harness tests (the test scripts are
 * bash; this does what bash cannot do reliably).
 *   kh-probe flat FILE         YAML as path=value lines (tests.0.outcome=pass)
 *   kh-probe semval KEY DEV    "free capacity" of a device-token semaphore
 *   kh-probe semrm KEY         removes the token set of KEY
 *   kh-probe semwaiters KEY DEV
 *                              how many processes wait for that device's slots
 *   kh-probe overlap SLEEP_LOG...
 *                              most faults/sleeper sleeps at once across
 *                              the logs (KILN_FAULT_SLEEP_LOG)
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
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

static int cmd_semwaiters(const char *keypath, int dev) {
  key_t key = krun_tokens_ipc_key(keypath);
  int id = key == -1 ? -1 : semget(key, 0, 0);
  if (id < 0) return perror(keypath), 2;
  printf("%d\n", semctl(id, 1 + dev, GETNCNT));
  return 0;
}

static int cmd_semrm(const char *keypath) {
  key_t key = krun_tokens_ipc_key(keypath);
  int id = key == -1 ? -1 : semget(key, 0, 0);
  return id >= 0 && semctl(id, 0, IPC_RMID) == 0 ? 0 : 1;
}

/* Most sleeps at once in the sleep logs (faults/sleeper's
 * KILN_FAULT_SLEEP_LOG: "START_MS END_MS" lines). A sleep lies inside its
 * test's hold of the slots, so this never counts more than held them. */
static int cmd_overlap(int n, char **files) {
  static double ev[8192][2];
  int nev = 0;
  for (int f = 0; f < n; f++) {
    FILE *in = fopen(files[f], "r");
    if (!in) {
      fprintf(stderr, "kh-probe: cannot read %s\n", files[f]);
      return 2;
    }
    double s, e;
    while (nev < 8190 && fscanf(in, "%lf %lf", &s, &e) == 2) {
      if (e <= s) continue;
      ev[nev][0] = s, ev[nev++][1] = +1;
      ev[nev][0] = e, ev[nev++][1] = -1;
    }
    fclose(in);
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
  if (argc == 4 && !strcmp(argv[1], "semwaiters"))
    return cmd_semwaiters(argv[2], atoi(argv[3]));
  if (argc == 3 && !strcmp(argv[1], "semrm")) return cmd_semrm(argv[2]);
  if (argc >= 3 && !strcmp(argv[1], "overlap")) return cmd_overlap(argc - 2, argv + 2);
  fprintf(stderr, "usage: kh-probe flat FILE | semval KEY DEV | semwaiters KEY DEV | "
                  "semrm KEY | overlap SLEEP_LOG...\n");
  return 2;
}
