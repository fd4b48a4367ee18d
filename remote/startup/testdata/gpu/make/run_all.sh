#!/usr/bin/env bash
# Runs every repro here on a GPU host and keeps what each printed, stdout
# and stderr interleaved as a unit's journal would hold them, exactly.
# Usage: run_all.sh OUTDIR
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")"
{
  echo "# made by remote/startup/testdata/gpu/make/run_all.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton, safetensors; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, "safetensors", safetensors.__version__)'
} > "$out/MANIFEST.txt" 2>&1
for py in *.py; do
  name=${py%.py}
  PYTHONUNBUFFERED=1 timeout 180 python3 "$py" > "$out/$name.txt" 2>&1
  echo "$name exit $?" >> "$out/MANIFEST.txt"
done
