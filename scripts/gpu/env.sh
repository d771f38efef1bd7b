# The start every GPU-machine script shares (scripts/gpu/*.sh), sourced
# after `set`: from the repository root, the staged binaries in $stage
# (KILN_STAGE, else .device, made by `scripts/gpu.sh stage`), results
# under $out ($OUT, else gpu-out), the cuRAND the runner links found and
# put on the library path (the toolkit's, the system's or PyTorch's),
# compute-sanitizer on the PATH when the toolkit has one, and KILN_GIT_REV
# from the staged REVISION for the reports.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
stage=${KILN_STAGE:-.device}
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/lib/x86_64-linux-gnu \
         $(python3 -c 'import nvidia.curand, os; print(os.path.dirname(nvidia.curand.__file__) + "/lib")' 2>/dev/null); do
  if ls "$d"/libcurand.so.10* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break
  fi
done
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
  if [ -x "$d/compute-sanitizer" ]; then export PATH="$PATH:$d"; break; fi
done
KILN_GIT_REV=$(cat "$stage/REVISION" 2>/dev/null || echo unknown)
export KILN_GIT_REV
