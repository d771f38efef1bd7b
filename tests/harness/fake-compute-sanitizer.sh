#!/usr/bin/env bash
# A stand-in for NVIDIA's compute-sanitizer, for kiln's own tests on a
# machine without a GPU: it takes the options kiln passes (--tool, --log-file
# and the rest), writes to the log file the report compute-sanitizer's text
# output gives for the fault suite's planted kernels (its layout: a
# "=========" prefix, a finding's line, indented details), and runs the
# program. Its reports are the real tool's (compute-sanitizer 2025.3.1 on
# the H100, through scripts/gpu.sh device-checks), host frames shortened.
tool=memcheck log=/dev/stderr
while [ $# -gt 0 ]; do
  case $1 in
    --tool) tool=$2; shift 2 ;;
    --log-file=*) log=${1#*=}; shift ;;
    --*=*) shift ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
{
  echo "========= COMPUTE-SANITIZER"
  case "$tool:${KILN_TEST:-}" in
    memcheck:faults/oob_write_edge)
      echo "========= Invalid __global__ write of size 4 bytes"
      echo "=========     at ke_fault_store(float *, long)+0xd0"
      echo "=========     by thread (0,0,0) in block (0,0,0)"
      echo "=========     Access to 0x7fb992a00fa0 is out of bounds"
      echo "=========     and is 1 bytes after the nearest allocation at 0x7fb992a00000 of size 4,000 bytes"
      echo "=========     Saved host backtrace up to driver entry point at kernel launch time"
      echo "=========         Host Frame: ke__fault_store_launch [0xe8742] in kiln-runner-cuda"
      echo "=========         Host Frame: main [0x191ea] in kiln-runner-cuda"
      echo "========= "
      echo "========= Target application returned an error"
      echo "========= ERROR SUMMARY: 1 error" ;;
    racecheck:faults/shared_race)
      echo "========= Error: Race reported between Write access at ke_fault_race(float *)+0x160"
      echo "=========     and Read access at ke_fault_race(float *)+0x1e0 [1024 hazards]"
      echo "========= "
      echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)" ;;
    *) echo "========= ERROR SUMMARY: 0 errors" ;;
  esac
} >"$log"
exec "$@"
