# What the kiln slurm tests share (sourced by slurm.sh and slurm-local.sh,
# before lib.sh): the selection they shard, and the final test runs of a
# report, to compare a merged run with an unsharded one.
SEL=(engine rope)
ids() {  # ids REPORT: the final test runs as sorted "id repeat" lines
  flat "$1"
  grep -E '^tests\.[0-9]+\.(id|repeat|final)=' "$T/flat.txt" | awk -F'[.=]' '
    {n=$2; v[n, $3]=$0; sub(/^[^=]*=/, "", v[n, $3])}
    END {for (k in v) {split(k, a, SUBSEP); seen[a[1]]=1}
         for (n in seen) if (v[n, "final"] == "true") print v[n, "id"], v[n, "repeat"]}' |
    sort
}
same_tests() {  # same_tests REPORT WHAT: its final runs are $T/ref.ids's
  ids "$1" >"$T/cmp.ids"
  if cmp -s "$T/ref.ids" "$T/cmp.ids"; then ok "$2"
  else fail "$2: the test runs differ from the unsharded run's"; diff "$T/ref.ids" "$T/cmp.ids" | head; fi
}
