#!/usr/bin/env python3
"""Checks kiln YAML against PyYAML (YAML 1.1 rules):

    yaml-check.py report|diff|bench FILE [KEY=STRING ...]

Every scalar of the file is loaded with yaml.safe_load and held against
the format's types (reports/README.md, docs/reports.md, docs/measuring.md):
a string field must come back as a str equal to the scalar's text (not
the int 62 for "1:2", not a date for "2001-12-14", not True for "yes"), a
number as an int or float, a boolean as a bool; null only where the format
allows it. KEY=STRING pairs name paths (dotted, list indices as numbers)
whose value must be exactly STRING. Prints what is wrong; exit 1 if any.
"""
import sys

import yaml

INT = {
    "format_version", "index", "physical", "warp_size", "multiprocessors", "l2_bytes",
    "total_bytes", "free_bytes", "total", "runs", "pass", "fail", "crash", "timeout",
    "leak", "error", "skip", "flaky", "not_run", "repeat", "attempt", "device", "slots",
    "pid", "seed", "line", "exit_code", "records_dropped", "bytes", "dropped_bytes", "n",
    "worst_index", "over", "nan", "inf", "special_mismatch", "guard_damaged", "launches",
    "serial", "kiln_peak_rss_kb", "selected", "selected_total", "count", "merged_from",
    "regressions", "newly_failing", "newly_flaky", "slower_test", "slower_kernel",
    "error_growth", "lower_metric", "fixed", "still_failing", "new_test", "removed_test",
    "tests", "failed", "concurrency", "cpus", "host_tests", "jobs", "devices_on_host",
    "tests_a", "tests_b", "peak_rss_kb_a", "peak_rss_kb_b", "growth_kb", "target_kb", "rounds",
    "lost", "listed", "figures", "history", "repeats", "failed_repeats", "slower_run",
    "rel_n", "hist_lo", "hist", "worst_k_index", "budget", "devices", "budget_bytes",
    "sm_mhz", "mem_mhz", "sm_max_mhz", "mem_max_mhz", "reasons",
}
FLOAT = {
    "duration_s", "max_abs", "max_rel", "nmse", "worst_actual", "worst_expected", "atol",
    "rtol", "max_nmse", "value", "factor", "base", "new", "time_rel", "test_abs_ms",
    "kernel_abs_ms", "drift_factor", "metric_rel", "new_error_to_tolerance",
    "base_max_abs", "new_max_abs", "wall_s", "tests_per_s", "cpu_ms_per_test",
    "ratio_to_ceiling", "load_avg_1m", "target_ratio", "target_cpu_ratio", "cpu_ratio",
    "target_tests_per_s", "runner_tests_per_s", "runner_cpu_ms_per_test",
    "context_open_ms_mean", "context_open_ms_max", "process_start_ms_mean",
    "confidence", "noise_rel", "adjusted_factor", "run_factor", "lambda", "p_needed",
    "rel_p50", "rel_p90", "rel_p99", "rel_p999", "worst_k_actual", "worst_k_expected",
    "temp_c", "power_w", "ms",
}
BOOL = {"final", "warm", "interrupted", "rebuilt_from_journal", "parent_gpu_clean",
        "regressed", "regression", "available", "cpu_pass", "tests_per_s_pass", "killed",
        "run_judged", "passed", "in_service", "throttled"}
# Fields that may be null (unknown or not applying), by key.
NULLABLE = {"git", "config", "out", "token_key", "device", "parent_gpu_clean", "path",
            "shard", "ceiling", "kiln", "isolation_none", "host", "rss", "ratio_to_ceiling",
            "load_avg_1m", "runner_cpu_ms_per_test", "runner_tests_per_s", "cpu_ratio",
            "started", "ended", "start", "end", "nothing_tested"}
# Report settings by name: the rest are strings.
SETTINGS = {"jobs": "int", "slots": "auto", "retries": "int", "repeat": "int", "seed": "int",
            "timeout": "float", "grace": "float", "cap": "float", "poison": "bool",
            "warm": "auto", "allow_empty": "bool", "zygote": "bool"}


def expected(kind, path):
    """What the scalar at path must load as: str, int, float, bool, auto."""
    key = next((p for p in reversed(path) if isinstance(p, str)), "")
    if kind == "report" and len(path) == 2 and path[0] == "settings":
        return SETTINGS.get(key, "str")
    if kind == "report" and "notes" in path:
        return "str"                     # a note's key and value are text
    if kind == "report" and "clocks" in path and key in ("error", "throttled"):
        return "str" if key == "error" else "int"   # a clocks record's own
    if kind == "report" and len(path) == 2 and path[0] == "summary":
        return "int"
    if kind == "bench" and path[:1] == ("settings",) and key in ("rss_tests", "concurrency"):
        return "int"
    if kind == "bench" and key.startswith("pass") or key.endswith("_pass"):
        return "bool"
    if key.endswith("_ms") or key in FLOAT:
        return "float"
    if key in INT or (kind == "diff" and path[:1] == ("counts",)):
        return "int"
    if key in BOOL:
        return "bool"
    return "str"


def ok(want, v, text):
    if want == "str":
        return isinstance(v, str) and v == text
    if want == "int":
        return type(v) is int
    if want == "float":
        return type(v) in (int, float)
    if want == "bool":
        return type(v) is bool
    if want == "auto":
        return type(v) is int or v == "auto"
    return False


def walk(kind, node, value, path, errors, strings):
    if isinstance(node, yaml.MappingNode):
        for knode, vnode in node.value:
            walk(kind, vnode, value[knode.value], path + (knode.value,), errors, strings)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            walk(kind, item, value[i], path + (i,), errors, strings)
    else:
        want = expected(kind, path)
        key = next((p for p in reversed(path) if isinstance(p, str)), "")
        dotted = ".".join(str(p) for p in path)
        if value is None and key in NULLABLE and node.style is None:
            return
        if not ok(want, value, node.value):
            errors.append("%s: %r loads as %s %r, expected %s" %
                          (dotted, node.value, type(value).__name__, value, want))
        if want == "str":
            strings[dotted] = value


def main(argv):
    kind, path = argv[1], argv[2]
    text = open(path, encoding="utf-8").read()
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        value = yaml.safe_load(text)
    except yaml.YAMLError as e:
        print("  PyYAML cannot load %s: %s" % (path, str(e).replace("\n", " ")))
        return 1
    errors, strings = [], {}
    walk(kind, node, value, (), errors, strings)
    # A note of faults/yaml_strings has its value as its key: both must
    # come back as that same string.
    for t in (value.get("tests") or []) if kind == "report" else []:
        for n in t.get("notes") or []:
            if t.get("id") == "faults/yaml_strings" and n.get("key") != n.get("value"):
                errors.append("%s note: key %r, value %r" % (t["id"], n.get("key"), n.get("value")))
    for pair in argv[3:]:
        key, want = pair.split("=", 1)
        got = strings.get(key)
        if got != want:
            errors.append("%s: %r, expected the string %r" % (key, got, want))
    for e in errors[:40]:
        print("  " + e)
    print("%s: %d string fields, %d wrong" % (path, len(strings), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
