/* Parsing a command's words through its row (commands.c) and the option
 * table (options.c), and its help: the
 * command word(s), then options and words in any order until `--`. Each
 * option is looked up among the command's own, so `kiln list --wrap` is a
 * usage error and each --help shows only what its command takes. Usage
 * errors name the command, the option and the value, and exit 2.
 */
#include "cli-impl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kiln-config.h"

/* ---- Help -------------------------------------------------------------------- */

static void opt_left(const kcli__opt *o, char *out, size_t n) {
  /* Long-only options line up under the long names of the others. */
  if (o->short_name)
    snprintf(out, n, "-%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "",
             o->arg ? o->arg : "");
  else
    snprintf(out, n, "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

static void usage_line(const kcli__cmd *c, FILE *f, const char *lead) {
  fprintf(f, "%skiln %s%s%s%s\n", lead, c->name, *c->opts ? " [OPTIONS]" : "",
          *c->args ? " " : "", c->args);
}

void kcli__help(const kcli__cmd *c, FILE *f) {
  usage_line(c, f, "usage: ");
  if (c->about) fprintf(f, "\n%s\n", c->about);
  else fprintf(f, "\n%s.\n", c->summary);
  fprintf(f, "\nOptions:\n");
  for (const char *p = c->opts; *p;) {
    size_t len = strcspn(p, " ");
    char id[64], left[64];
    snprintf(id, sizeof id, "%.*s", (int)len, p);
    const kcli__opt *o = kcli__opt_by_id(id);
    /* `sources`: every source's own options, in the sources' order. */
    for (const kcli__opt *so = strcmp(id, "sources") == 0 ? kcli__source_opts() : NULL;
         so && so->id; so++) {
      opt_left(so, left, sizeof left);
      fprintf(f, "  %-26s %s\n", left, so->help);
    }
    if (o) {
      opt_left(o, left, sizeof left);
      fprintf(f, "  %-26s %s\n", left, o->help);
    }
    p += len + (p[len] == ' ');
  }
  fprintf(f, "  %-26s %s\n", "-h, --help", "this text");
  if (c->footer) fprintf(f, "\n%s", c->footer);
}

void kcli__overview(const kcli__cmd *cmds, const char *group, FILE *f) {
  size_t glen = group ? strlen(group) : 0;
  if (group) fprintf(f, "usage: kiln %s COMMAND [OPTIONS] [ARGS]\n\nCommands:\n", group);
  else fprintf(f, "usage: kiln COMMAND [OPTIONS] [ARGS]\n"
                  "       kiln --version\n"
                  "\n"
                  "Runs every selected GPU test in its own child process, scheduled onto\n"
                  "devices through host-wide device tokens, and writes YAML reports.\n"
                  "\nCommands:\n");
  for (const kcli__cmd *c = cmds; c->name; c++) {
    if (!c->summary) continue;
    if (group && (strncmp(c->name, group, glen) != 0 || c->name[glen] != ' ')) continue;
    char left[64];
    snprintf(left, sizeof left, "%s %s", c->name, c->args);
    fprintf(f, "  %-32s %s\n", left, c->summary);
  }
  fprintf(f, "\n`kiln %sCOMMAND --help` (or `kiln help %sCOMMAND`) shows a command's "
             "options.\n", group ? "report " : "", group ? "report " : "");
}

int kcli__usage_error(const kcli__cmd *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "kiln %s: %s\n", c->name, msg);
  usage_line(c, stderr, "usage: ");
  fprintf(stderr, "(kiln %s --help lists its options)\n", c->name);
  return KH_EXIT_USAGE;
}

/* ---- Options ------------------------------------------------------------------ */

/* The command's option called --name (or -short when name is NULL). */
static const kcli__opt *lookup(const kcli__cmd *c, const char *name, size_t len, char sh) {
  for (int t = 0; t < 2; t++)
    for (const kcli__opt *o = t ? kcli__source_opts() : kcli__opts; o->id; o++) {
      if (!kcli__takes(c, o->id)) continue;
      if (name ? strlen(o->name) == len && strncmp(o->name, name, len) == 0
               : o->short_name == sh)
        return o;
    }
  return NULL;
}

static int apply(kcli__args *a, const kcli__opt *o, const char *val) {
  char *member = (char *)a + o->off;
  kh_err err;
  a->given = kh_xrealloc(a->given, (size_t)(a->ngiven + 1) * sizeof *a->given);
  a->given[a->ngiven++] = (kcli__given){o, val};
  switch (o->kind) {
  case KCLI__SETTING:
    if (krun_setting_set(&a->flags, o->setting, val ? val : "true", &err) != 0)
      return kcli__usage_error(a->cmd, "--%s: %s", o->name, err.msg);
    return 0;
  case KCLI__SOURCE:
    if (krun_setting_sopt(&a->flags, (int)o->lo, val ? val : "true", &err) != 0)
      return kcli__usage_error(a->cmd, "--%s: %s", o->name, err.msg);
    return 0;
  case KCLI__TOLERANCE:
    if (krun_setting_add_tolerance(&a->flags, val, &err) != 0)
      return kcli__usage_error(a->cmd, "--%s: %s", o->name, err.msg);
    return 0;
  case KCLI__STR:
    free(*(char **)member);
    *(char **)member = kh_strdup(val);
    return 0;
  case KCLI__LIST: {
    kcli__strs *l = (kcli__strs *)member;
    l->v = kh_xrealloc(l->v, (size_t)(l->n + 1) * sizeof *l->v);
    l->v[l->n++] = kh_strdup(val);
    return 0;
  }
  case KCLI__FLAG: *(int *)member = 1; return 0;
  case KCLI__INT: {
    long long v;
    if (kh_parse_ll(val, (long long)o->lo, (long long)o->hi, &v) != 0)
      return kcli__usage_error(a->cmd, "--%s: '%s' is not valid: expected an integer "
                               "from %.0f to %.0f", o->name, val, o->lo, o->hi);
    *(int *)member = (int)v;
    return 0;
  }
  case KCLI__DOUBLE:
    if (kh_parse_double(val, o->lo, o->hi, (double *)member) != 0)
      return kcli__usage_error(a->cmd, "--%s: '%s' is not valid: expected a number "
                               "from %g to %g", o->name, val, o->lo, o->hi);
    return 0;
  }
  return 0;
}

static void add_word(kcli__args *a, char *w) {
  a->pos = kh_xrealloc(a->pos, (size_t)(a->npos + 1) * sizeof *a->pos);
  a->pos[a->npos++] = w;
}

/* One word at argv[*i]: an option (with its value), a word, or --help. */
static int word(kcli__args *a, int argc, char **argv, int *i, int *help) {
  const kcli__cmd *c = a->cmd;
  char *w = argv[*i];
  const kcli__opt *o = NULL;
  const char *val = NULL;
  if (strncmp(w, "--", 2) == 0) {
    const char *eq = strchr(w + 2, '=');
    size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
    if (len == 4 && strncmp(w + 2, "help", 4) == 0) return *help = 1, 0;
    if (!(o = lookup(c, w + 2, len, 0)))
      return kcli__usage_error(c, "unknown option '%s'", w);
    if (eq && !o->arg) return kcli__usage_error(c, "--%s takes no value", o->name);
    val = eq ? eq + 1 : NULL;
  } else if (w[0] == '-' && w[1]) {
    if (strcmp(w, "-h") == 0) return *help = 1, 0;
    o = lookup(c, NULL, 0, w[1]);
    if (!o || (w[2] && !o->arg)) {
      if (c->dash_words) return add_word(a, w), 0;   /* an exclusion: -@slow */
      return kcli__usage_error(c, "unknown option '%s'", w);
    }
    val = w[2] ? w + 2 : NULL;
  } else {
    add_word(a, w);
    return 0;
  }
  if (o->arg && !val) {
    if (*i + 1 >= argc) return kcli__usage_error(c, "--%s needs a value (%s)", o->name, o->arg);
    val = argv[++*i];
  }
  return apply(a, o, val);
}

/* Frees what the options stored, driven by the option table (so a new
 * string option cannot be forgotten here); a member that two options share
 * is freed once. */
void kcli__args_free(kcli__args *a) {
  krun_settings_free(&a->flags);
  for (const kcli__opt *o = kcli__opts; o->id; o++) {
    char *member = (char *)a + o->off;
    if (o->kind == KCLI__STR) {
      free(*(char **)member);
      *(char **)member = NULL;
    } else if (o->kind == KCLI__LIST) {
      kcli__strs *l = (kcli__strs *)member;
      for (int k = 0; k < l->n; k++) free(l->v[k]);
      free(l->v);
      *l = (kcli__strs){0};
    }
  }
  free(a->given), free(a->pos);
}

/* ---- A command's words --------------------------------------------------------- */

int kcli__parse(kcli__args *a, const kcli__cmd *c, int argc, char **argv, int first,
                int *help) {
  memset(a, 0, sizeof *a);
  a->cmd = c, a->argc = argc, a->argv = argv;
  krun_settings_init(&a->flags);
  krep_diff_defaults(&a->diff);
  int rc = 0;
  *help = 0;
  for (int i = first; i < argc && rc == 0; i++) {
    if (strcmp(argv[i], "--") == 0) {
      while (++i < argc) add_word(a, argv[i]);
      break;
    }
    rc = word(a, argc, argv, &i, help);
  }
  if (rc == 0 && !*help && (a->npos < c->min_pos || (c->max_pos >= 0 && a->npos > c->max_pos)))
    rc = kcli__usage_error(c, a->npos < c->min_pos ? "needs %s" : "takes %s, not %d words",
                           *c->args ? c->args : "no words", a->npos);
  return rc;
}
