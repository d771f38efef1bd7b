#!/usr/bin/env bash
# scripts/gpu.sh pytest: [stage|suite|speed|sbs] the sample pytest suite (examples/pytest-suite)
# The sample project keeps its GPU script beside it (examples/pytest-suite/
# gpu.sh, which says what each part does); this passes the arguments on.
exec bash "$(dirname "$0")/../../examples/pytest-suite/gpu.sh" "$@"
