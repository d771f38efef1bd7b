#!/usr/bin/env bash
# The installed kiln as another project meets it: `meson install` into a
# folder (DESTDIR: the install must work from wherever it lands), then the
# example project (examples/check-suite) copied to a clean folder, built
# against that install through pkg-config alone, and run with the
# installed kiln, which finds its own runner and profiles from where it is.
. "$(dirname "$0")/lib.sh"

D=$T/dest
meson install -C "$KILN_BUILD" --no-rebuild --destdir "$D" --quiet >"$T/out.txt" 2>&1
rc=$?
expect_rc 0 "meson install"
P=$D$KILN_PREFIX
kiln=$P/bin/kiln
pcdir=$(dirname "$(find "$P" -name kiln-host.pc | head -1)")
for f in "$kiln" "$P/include/kiln/test.h" "$P/include/kiln/engine.h" "$P/include/kiln/kernels.h" \
         "$pcdir/kiln-host.pc" "$P/share/kiln/configs/quick.yaml"; do
  [ -e "$f" ] && ok "installed ${f#$P/}" || fail "not installed: ${f#$P/}"
done
ls "$P"/lib*/ "$P"/lib/*/ 2>/dev/null | grep -q '^libkiln-runner\.a$' && ok "installed libkiln-runner.a" ||
  fail "libkiln-runner.a not installed"
[ -e "$P/include/kiln/test-faults.h" ] && fail "a test-only header is installed" || ok "test-only headers stay out"
# Nobody reaches into kiln's trees from here on.
unset KILN_RUNNER_DIR

# The example, from a clean folder, through pkg-config only.
cp -r "$KILN_SOURCE/examples/check-suite" "$T/example"
rm -rf "$T/example/build"
sanitize=()
[ "${KILN_SANITIZE:-none}" != none ] && sanitize=(-Db_sanitize="$KILN_SANITIZE" -Db_lundef=false)
PKG_CONFIG_PATH=$pcdir meson setup "$T/example/build" "$T/example" "${sanitize[@]}" >"$T/out.txt" 2>&1
rc=$?
expect_rc 0 "the example configures against the installed kiln"
expect_out "Run-time dependency kiln-host found: YES" "found through pkg-config"
ninja -C "$T/example/build" >"$T/out.txt" 2>&1
rc=$?
expect_rc 0 "the example builds"
if grep -qF -e "$KILN_SOURCE" -e "$KILN_BUILD" "$T/example/build/build.ninja"; then
  fail "the example's build reaches into kiln's source or build tree"
else ok "nothing of kiln's trees in the example's build"; fi

"$kiln" run --runner "$T/example/build/example-runner" -o "$T/run" >"$T/out.txt" 2>&1
rc=$?
expect_rc 0 "the installed kiln runs the example's runner"
flat "$T/run/report.yaml"
declare -A want=([mlp/small_rows]=pass [mlp/wide_rows]=pass [mlp/mismatched_shapes]=pass
  [mlp/throughput]=skip [tokens/clamps_out_of_range]=pass)
for t in "${!want[@]}"; do
  expect_eq "$(tfield "$t" outcome)" "${want[$t]}" "$t outcome"
done
expect_eq "$(field summary.total)" 5 "every suite registered itself"
expect_eq "$(tfield mlp/small_rows checks.0.name)" probs_4x33 "kiln's numeric check recorded"
expect_eq "$(tfield tokens/clamps_out_of_range device)" 0 "a host_only test still runs under kiln"

# The installed kiln's own runner and profiles, found from where it is.
"$kiln" run --config quick -o "$T/own" engine/status_table >"$T/out.txt" 2>&1
rc=$?
expect_rc 0 "the installed kiln runs its own suites"
flat "$T/own/report.yaml"
expect_match "$(field run.config)" "^$P/bin/\.\./share/kiln/configs/quick\.yaml\$" "--config quick: the installed profile"
expect_match "$(field kiln.command)" "--config quick" "the report keeps the command"
"$kiln" devices >"$T/out.txt" 2>&1
expect_out "runner $P/bin/\.\./libexec/kiln/kiln-runner-host" "its runner: the installed one"
finish
