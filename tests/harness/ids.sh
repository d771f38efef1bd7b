#!/usr/bin/env bash
# Test ids are unique and give their names back, and a console shows them
# safely: a manifest's names with DEL, '?', NUL, a literal "%7F", an escape
# sequence and a C1 control (U+009B, a terminal's CSI) become six ids,
# each byte a console cannot show written %HH ('%' too); `kiln list`
# prints no control byte; the report keeps six distinct ids and each
# unescapes to the name the manifest gave.
. "$(dirname "$0")/lib.sh"
need_pyyaml

cat >"$T/m.yaml" <<'EOF'
suite: m
tests:
  - {name: "a\x7fb", command: [true]}
  - {name: "a?b", command: [true]}
  - {name: "a\0b", command: [true]}
  - {name: "a%7Fb", command: [true]}
  - {name: "\e[31mred", command: [true]}
  - {name: "x\x9by", command: [true]}
EOF

k list --manifest "$T/m.yaml"
expect_rc 0 "kiln list of names with control bytes"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/out.txt" ||
   LC_ALL=C grep -q $'\xc2[\x80-\x9f]' "$T/out.txt"; then
  fail "kiln list printed a control byte"; od -c "$T/out.txt" | head -20
else ok "kiln list printed no control byte"; fi
for id in 'm/a%7Fb' 'm/a\?b' 'm/a%00b' 'm/a%257Fb' 'm/%1B\[31mred' 'm/x%C2%9By'; do
  expect_out "^$id " "listed as $id"
done

k run --manifest "$T/m.yaml" -o "$T/run"
expect_rc 0 "the six tests run"
python3 - "$T/run/report.yaml" <<'PY' || fail "report ids"
import re, sys, yaml
rep = yaml.safe_load(open(sys.argv[1]))
ids = [t["id"] for t in rep["tests"]]
names = [b"a\x7fb", b"a?b", b"a\0b", b"a%7Fb", b"\x1b[31mred", "x\x9by".encode()]
assert len(set(ids)) == 6, ids
back = [re.sub(rb"%([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]),
               i.encode()).split(b"/", 1)[1] for i in ids]
assert sorted(back) == sorted(names), (back, names)
assert all(t["outcome"] == "pass" for t in rep["tests"]), [t["outcome"] for t in rep["tests"]]
print("six distinct ids, each unescapes to its name")
PY
k report diff "$T/run" "$T/run"
expect_rc 0 "report diff of the run with itself"
expect_out ' 6 figures of tests' "diff compares six tests"
finish
