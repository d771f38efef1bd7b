#!/usr/bin/env bash
# kiln report html rendered by a real browser: headless Chromium loads the
# page of a real run (with two earlier runs as history) from a file URL with
# a filter in the fragment; the dumped DOM must show the filter applied by
# the page's script and the SVG plots with their data points; a screenshot
# is taken. Skips (77) without chromium unless KILN_REQUIRE_CHROMIUM=1.
source "$(dirname "$0")/lib.sh"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "chromium not installed (scripts/install-deps.sh --browser)"
  [ "${KILN_REQUIRE_CHROMIUM:-0}" = 1 ] && exit 1
  exit 77
fi
browser() {  # browser ARGS...: headless, offline, a throwaway profile
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
    --disable-background-networking --disable-component-update --disable-sync \
    --no-first-run --user-data-dir="$(mktemp -d "$T/profile.XXXX")" "$@" 2>"$T/chromium.err"
}

SEL="drift/new_failure drift/error_growth faults/pass faults/skip engine/random_inputs"
k run --backend host --jobs 2 --out old1 $SEL
k run --backend host --jobs 2 --out old2 $SEL
KILN_DRIFT_FAIL=1 k run --backend host --jobs 2 --out now $SEL
expect_rc 1 "tonight's run (one planted failure)"
k report html now -o "$T/page.html" --history old1 --history old2/report.yaml
expect_rc 0 "kiln report html"
if grep -Eq '(src|href)="https?:' "$T/page.html"; then fail "the page references the network"
else ok "no network references"; fi

browser --dump-dom "file://$T/page.html#outcome=fail" >"$T/dom.html"
[ -s "$T/dom.html" ] || { fail "no DOM from chromium"; cat "$T/chromium.err"; }
if python3 - "$T/dom.html" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
assert 'data-filter="ready"' in dom, "the filter script did not run"
assert re.search(r'id="shown">1 of 5 shown<', dom), re.search(r'id="shown">[^<]*', dom)
rows = re.findall(r'<tr class="test( hidden)?" data-row="\d+" data-outcome="(\w+)"', dom)
assert len(rows) == 5, rows
for hidden, outcome in rows:
    assert (outcome == "fail") == (hidden == ""), (hidden, outcome)
sel = re.search(r'<select id="f-outcome">.*?</select>', dom, re.S).group(0)
for svg in ("plot-suites", "plot-checks", "trend-duration", "trend-error"):
    m = re.search(r'<svg id="%s".*?</svg>' % svg, dom, re.S)
    assert m, svg + " missing"
    pts = len(re.findall(r'class="pt', m.group(0)))
    want = {"plot-suites": 3, "plot-checks": 1, "trend-duration": 3, "trend-error": 3}[svg]
    assert pts >= want, (svg, pts, want)
    print(svg, pts, "data points")
PY
then ok "rendered: filter applied from the URL, 4 plots with data points"
else fail "rendered page checks"; fi

# A row opened (#open=ID, as a click does): its checks show their error
# histogram and their worst elements.
browser --dump-dom "file://$T/page.html#open=drift/error_growth" >"$T/open.html"
if python3 - "$T/open.html" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
row = re.search(r'<tr class="test" data-row="(\d+)"[^>]*data-id="drift/error_growth"', dom)
assert row, "no row for drift/error_growth"
detail = re.search(r'<tr class="detail( hidden)?" id="d-%s">(.*?)</td></tr>\n' % row.group(1), dom, re.S)
assert detail and detail.group(1) is None, "the row's detail is not open"
body = detail.group(2)
hist = re.search(r'<svg class="hist".*?</svg>', body, re.S)
assert hist, "no histogram"
bins = re.findall(r'<rect class="bin"', hist.group(0))
assert len(bins) == 15, len(bins)
worst = re.search(r'<table class="worst">(.*?)</table>', body, re.S)
assert worst and len(re.findall(r"<tr><td class=\"?num\"?>", worst.group(1))) == 5, "worst elements"
assert "relative error over 8000 elements: median" in body, "quantiles"
others = re.findall(r'<tr class="detail" id=', dom)
assert len(others) == 1, ("other rows opened", len(others))
print("opened row: histogram of 15 bins, 5 worst elements, quantiles")
PY
then ok "an opened row shows its checks' histogram and worst elements"
else fail "opened row"; fi

browser --window-size=1280,1600 --screenshot="$T/page.png" "file://$T/page.html" >/dev/null
if [ -s "$T/page.png" ] && [ "$(head -c 8 "$T/page.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ]; then
  ok "screenshot is a PNG ($(wc -c <"$T/page.png") bytes)"
  [ -n "${KILN_SCREENSHOT_DIR:-}" ] && cp "$T/page.png" "$T/page.html" "$KILN_SCREENSHOT_DIR/"
else fail "no screenshot"; fi
finish
