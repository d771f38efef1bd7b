#!/usr/bin/env bash
# A process that is ending by itself when its test ends is no leak, in
# every containment mode and from every source, and nothing is left:
#   - pytest: a test that starts `multiprocessing` workers with the spawn
#     method and joins them; its resource tracker, which holds the test's
#     pipes, is still exiting (its command line already gone: `?`) when
#     kiln finds it. 16 runs through the zygote, 6 in fresh interpreters,
#     each a pass (before: 7 of 20 and 4 of 10 a leak, "left 1 process
#     running after it ended: pid N `?`");
#   - a manifest command whose helper holds none of kiln's pipes and ends
#     0.1 s after the command (it waits for the command's end on a pipe of
#     its own): a pass; one whose helper does not end is still a leak;
#   - kiln killed with SIGKILL: its guard gives such a helper (it ends 0.1 s
#     after its command died with kiln) the same grace and lists only the
#     one that does not end under the rebuilt report's run.processes_left.
. "$(dirname "$0")/lib.sh"

# helper TAG S CODE: a command (its first line the comment TAG, which its
# command line shows) that runs CODE after forking a helper: its stdio on
# /dev/null and no descriptor of kiln's, the helper reads a pipe whose
# other end only the command holds; at the command's end it sleeps S
# seconds and exits.
helper() {
  printf '%s' "# $1
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2): os.dup2(null, fd)
    os.dup2(r, 200)
    os.closerange(3, 200)
    os.read(200, 1)
    time.sleep($2)
    os._exit(0)
os.close(r)
$3"
}
ycmd() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }

# ---- A manifest command's helper that ends within the grace, and one that does not --
cat >"$T/m.yaml" <<EOF2
suite: e
tests:
  - name: ends_after
    command: [python3, -c, $(ycmd "$(helper ends 0.1 'sys.exit(0)')")]
    needs_gpu: false
  - name: stays
    command: [python3, -c, $(ycmd "$(helper stays 30 'sys.exit(0)')")]
    needs_gpu: false
EOF2
for mode in subreaper cgroup; do
  k run --contain $mode -j 1 --manifest "$T/m.yaml" -o "$T/m-$mode"
  if [ "$mode" = cgroup ] && grep -q 'no writable cgroup' "$T/out.txt"; then
    echo "skip: no writable cgroup v2 hierarchy here"; continue
  fi
  expect_rc 1 "$mode: a run with one helper that stays"
  flat "$T/m-$mode/report.yaml"
  expect_eq "$(tfield e/ends_after outcome)" pass "$mode: a helper that ends 0.1 s after its command"
  expect_eq "$(tfield e/ends_after processes_left.0.pid)" "" "$mode: ...is not listed"
  expect_eq "$(tfield e/stays outcome)" leak "$mode: a helper that stays is a leak"
  expect_match "$(tfield e/stays processes_left.0.command)" 'python3 -c # stays' "$mode: ...named by its command"
  expect_eq "$(tfield e/stays processes_left.0.killed)" true "$mode: ...killed"
done

# ---- pytest: multiprocessing with the spawn method --------------------------------
have_pytest=0
for p in "${KILN_PYTHON:-python3}" python3 /usr/bin/python3; do
  "$p" -c 'import pytest' 2>/dev/null && have_pytest=1
done
if [ $have_pytest = 1 ] || [ "${KILN_REQUIRE_PYTEST:-0}" = 1 ]; then
  need_pytest_sample
  mkdir -p "$T/mp/tests"
  touch "$T/mp/pytest.ini"
  cat >"$T/mp/tests/test_spawn.py" <<'PY'
import multiprocessing as mp


def work(q, i):
    q.put(i * i)


def test_spawn_workers():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=work, args=(q, i)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert sorted(q.get() for _ in procs) == [0, 1]
PY
  for run in "true 16 cgroup" "false 6 subreaper"; do
    set -- $run
    k run --pytest "$T/mp" --zygote "$1" --contain "$3" --repeat "$2" -o "$T/mp-$1"
    expect_rc 0 "spawn workers, zygote $1, --contain $3: $2 runs"
    expect_out "$2 test runs in .*: $2 pass\$" "every run passes (zygote $1)"
  done
else
  echo "skip (pytest part): no interpreter with pytest"
fi

# ---- The guard, when kiln is killed -------------------------------------------------
cat >"$T/g.yaml" <<EOF2
suite: g
tests:
  - name: ends_after
    command: [python3, -c, $(ycmd "$(helper ends 0.1 "open('$T/g1', 'w').close(); time.sleep(30)")")]
    needs_gpu: false
  - name: stays
    command: [python3, -c, $(ycmd "$(helper stays 30 "open('$T/g2', 'w').close(); time.sleep(30)")")]
    needs_gpu: false
EOF2
"$KILN" run --contain subreaper -j 2 --manifest "$T/g.yaml" -o "$T/guard" >"$T/out.txt" 2>&1 &
kiln=$!
for i in $(seq 200); do [ -e "$T/g1" ] && [ -e "$T/g2" ] && break; sleep 0.05; done
sleep 0.6                       # the guard looks every 200 ms
kill -KILL $kiln; wait $kiln 2>/dev/null
for i in $(seq 100); do pgrep -f "guard $kiln " >/dev/null || break; sleep 0.05; done
k report rebuild "$T/guard"
expect_rc 0 "report rebuild after kill -9 of kiln"
flat "$T/guard/report.yaml"
left=$(grep -E '^run\.processes_left\.[0-9]+\.command=' "$T/flat.txt" | cut -d= -f2- | cut -c1-60)
echo "$left" | sed 's/^/    left: /'
expect_eq "$(echo "$left" | grep -c 'python3 -c # stays')" 1 "the guard lists the helper that stays"
expect_eq "$(echo "$left" | grep -vc 'python3 -c # stays')" 0 "and nothing else (not the one that ends, nor a runner)"
expect_no_runners "at the end"
finish
