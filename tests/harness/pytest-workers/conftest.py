"""The sample's folder on sys.path (pytest puts it there for this file):
its tests import `cache` and the `torch` stand-in from here. With
$SAMPLE_COLLECT_HANG set, a test's process (KILN_TEST set; kiln's listing
has none) hangs while pytest collects: a worker that never reaches its
first test."""
import os
import time

if os.environ.get("SAMPLE_COLLECT_HANG") and os.environ.get("KILN_TEST"):
    time.sleep(600)
