#!/usr/bin/env bash
# The GPU check: prove the course's GPU paths on a real CUDA GPU, in under 6 minutes.
#
#   bash benchmarks/gpu_check.sh OUT_DIR                     on the GPU machine (offline)
#   bash benchmarks/gpu_check.sh --prepare-wheels [DIR]      here, with internet, once
#
# It uses the Python and torch already installed on the GPU machine (PYTHON, default python3),
# installs nothing from the network and downloads nothing. What that machine lacks for the
# notebooks (nbval, nbclient, nbformat, ipykernel, ipywidgets and their dependencies) comes from
# a folder of wheels brought along (GPU_CHECK_WHEELS, default benchmarks/wheels), prepared here
# by `--prepare-wheels` and installed into a temporary folder on PYTHONPATH.
#
# Steps, each timeboxed, each recorded in OUT_DIR/report.md as it finishes (logs in OUT_DIR/logs/),
# a failing step never stopping the later ones:
#   wheels            the notebook tools from the wheels folder
#   figures           each chapter's figures (benchmarks/gpu_figures.py) -> OUT_DIR/figures.json
#   figures-compile   the torch.compile figure, on its own (the first compile is slow)
#   then at once:
#   cuda-tests        the CUDA-only tests (benchmarks/gpu_cuda_tests.py selects them)
#   notebook-NN_...   every notebook under nbval with COURSE_DEVICE=cuda, one process each
#   grader            the grader on a few submissions with the GPU visible (benchmarks/gpu_grading.py)
# Without a CUDA GPU it writes the report at once, every GPU step listed as skipped with the reason.
# docs/gpu/README.md says how to prepare, run and record a check.
#
# Knobs: PYTHON; GPU_CHECK_WHEELS; GPU_CHECK_SECONDS (all steps together, default 330);
# GPU_CHECK_ONLY="step step..." (run only these); GPU_CHECK_ASSUME_GPU=1 (run the steps even
# without a GPU: tests the script's bookkeeping on a CPU machine).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

if [ "${1:-}" = "--prepare-wheels" ]; then
  PY="${PYTHON:-}"
  [ -n "$PY" ] || { [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; }
  exec "$PY" benchmarks/gpu_wheels.py prepare "${2:-benchmarks/wheels}"
fi
if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: bash benchmarks/gpu_check.sh OUT_DIR | --prepare-wheels [DIR]" >&2
  exit 2
fi

OUT="$(mkdir -p "$1" && cd "$1" && pwd)"
PY="${PYTHON:-python3}"
WHEELS="${GPU_CHECK_WHEELS:-$ROOT/benchmarks/wheels}"
BUDGET="${GPU_CHECK_SECONDS:-330}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT/logs" "$WORK/status" "$WORK/site" "$WORK/jupyter"
rm -f "$OUT/logs/"*.log "$OUT/report.md" "$OUT/figures.json"
STARTED=$SECONDS

NOTEBOOKS=()
for nb in notebooks/[0-9][0-9]_*.ipynb; do NOTEBOOKS+=("$nb"); done
STEPS=(wheels figures figures-compile cuda-tests)
for nb in "${NOTEBOOKS[@]}"; do STEPS+=("notebook-$(basename "$nb" .ipynb)"); done
STEPS+=(grader)

# ---------------------------------------------------------------- the machine
ENV_MD="$WORK/environment.md"
"$PY" - > "$WORK/torch.txt" 2>&1 <<'EOF'
import platform, torch
print("python:", platform.python_version())
print("torch:", torch.__version__, "| CUDA build:", torch.version.cuda or "none (CPU-only build)")
ok = torch.cuda.is_available()
print("cuda available:", ok)
if ok:
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        print(f"GPU {i}: {p.name}, {p.total_memory / 2**30:.0f} GiB, capability {p.major}.{p.minor}")
    print("cuDNN:", torch.backends.cudnn.version())
EOF
TORCH_OK=$?
SMI="nvidia-smi not found"
if command -v nvidia-smi >/dev/null 2>&1; then
  SMI="$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -8)" \
    || SMI="nvidia-smi failed: $SMI"
fi
if [ "$TORCH_OK" -ne 0 ]; then
  REASON="torch is not importable by $PY ($(tail -1 "$WORK/torch.txt"))"
elif grep -q "^cuda available: True" "$WORK/torch.txt" || [ "${GPU_CHECK_ASSUME_GPU:-}" = 1 ]; then
  REASON=""
else
  REASON="no CUDA GPU: torch.cuda.is_available() is False ($(grep -m1 '^torch:' "$WORK/torch.txt"); $SMI)"
fi
{
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -n), $(nproc) CPUs"
  echo "- checkout: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout')"
  echo "- Python: $PY"
  if [ "$TORCH_OK" -eq 0 ]; then sed 's/^/- /' "$WORK/torch.txt"; else echo "- torch: not importable ($(tail -1 "$WORK/torch.txt"))"; fi
  echo "- nvidia-smi (name, driver, memory): $(echo "$SMI" | paste -sd ';' -)"
} > "$ENV_MD"

# ---------------------------------------------------------------- bookkeeping
record() {  # record STEP STATE SECONDS SUMMARY
  printf '%s|%s|%s\n' "$2" "$3" "$(echo "$4" | tr '|\n' '/ ' | sed 's/ *$//' | cut -c1-300)" > "$WORK/status/$1"
}

summary_of() {  # the last meaningful line of a log (pytest's summary, the script's verdict)
  grep -v '^\s*$' "$1" 2>/dev/null | grep -vE '^(=+|-+)$' | tail -1 | sed 's/^=* *//; s/ *=*$//'
}

left() { echo $((BUDGET - (SECONDS - STARTED))); }

selected() {
  [ -z "${GPU_CHECK_ONLY:-}" ] && return 0
  case " $GPU_CHECK_ONLY " in *" $1 "*) return 0 ;; esac
  return 1
}

run_step() {  # run_step STEP SECONDS COMMAND...: timeboxed, logged, recorded; never fails the script
  local step=$1 want=$2; shift 2
  local limit; limit=$(( $(left) - 20 ))  # room for the SIGKILL 15 s after the SIGINT
  [ "$want" -lt "$limit" ] && limit=$want
  if [ "$limit" -lt 10 ]; then record "$step" "skipped" 0 "out of time (the check stops at ${BUDGET} s)"; return; fi
  echo "running" > "$WORK/status/$step.running"
  local t0=$SECONDS
  # SIGINT first: pytest then prints what ran so far; SIGKILL 15 s later if still alive
  timeout -s INT -k 15 "$limit" "$@" > "$OUT/logs/$step.log" 2>&1
  local code=$? took=$((SECONDS - t0)) state
  case $code in
    0) state="ok" ;;
    124|137) state="TIMED OUT after ${limit} s" ;;
    *) state="FAILED (exit $code)" ;;
  esac
  record "$step" "$state" "$took" "$(summary_of "$OUT/logs/$step.log")"
  rm -f "$WORK/status/$step.running"
}

render() {  # report.md from what is recorded so far
  local tmp="$OUT/report.md.$BASHPID.tmp"  # steps running at once each render
  {
    echo "# GPU check report"
    echo
    cat "$ENV_MD"
    echo "- wall time so far: $((SECONDS - STARTED)) s (budget ${BUDGET} s)"
    [ -n "$REASON" ] && echo "- **every GPU step skipped: $REASON**"
    echo
    echo "| step | result | seconds | summary |"
    echo "|---|---|---|---|"
    for step in "${STEPS[@]}"; do
      if [ -f "$WORK/status/$step" ]; then
        IFS='|' read -r state took said < "$WORK/status/$step"
        echo "| $step | $state | $took | $said |"
      elif [ -f "$WORK/status/$step.running" ]; then
        echo "| $step | running (no result yet) | | |"
      else
        echo "| $step | not run yet | | |"
      fi
    done
    echo
    if [ -s "$OUT/figures.json" ]; then
      "$PY" - "$OUT/figures.json" 2>&1 <<'EOF'
import json, sys
figures = json.load(open(sys.argv[1])).get("figures", {})
if figures:
    print("## Figures (figures.json)\n")
for key, entry in figures.items():
    said = entry.get("lines") or ["not measured: " + str(entry.get("missing") or entry.get("error"))]
    print(f"- `{key}`: " + "<br>".join(said))
print()
EOF
    fi
    for step in "${STEPS[@]}"; do
      [ -f "$WORK/status/$step" ] || continue
      case "$(cut -d'|' -f1 "$WORK/status/$step")" in ok|skipped) continue ;; esac
      echo "## $step: last lines of logs/$step.log"
      echo
      echo '```'
      tail -n 40 "$OUT/logs/$step.log" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g'  # no terminal colours
      echo '```'
      echo
    done
  } > "$tmp"
  mv "$tmp" "$OUT/report.md"
}

# ---------------------------------------------------------------- no GPU: everything skipped, at once
if [ -n "$REASON" ]; then
  for step in "${STEPS[@]}"; do record "$step" "skipped" 0 "$REASON"; done
  "$PY" -c "import sys, json; json.dump({'run': {'gpu': None, 'reason': sys.argv[1]}, 'figures': {}},
            open(sys.argv[2], 'w'), indent=1)" "$REASON" "$OUT/figures.json" 2>/dev/null \
    || printf '{"run": {"gpu": null, "reason": "no usable torch"}, "figures": {}}\n' > "$OUT/figures.json"
  render
  echo "GPU check: every GPU step skipped ($REASON); report: $OUT/report.md"
  exit 0
fi

# ---------------------------------------------------------------- the steps
export PYTHONPATH="$WORK/site:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export COURSE_PROGRESS_FILE="$WORK/progress.json" MPLCONFIGDIR="$WORK/mpl"
export JUPYTER_RUNTIME_DIR="$WORK/jupyter" IPYTHONDIR="$WORK/ipython" PYTHONDONTWRITEBYTECODE=1
export PYTHONUNBUFFERED=1  # logs show progress even when a step is cut short
PYTEST=("$PY" -m pytest -p no:cacheprovider -o addopts= -q -rs)

step() {  # step NAME SECONDS COMMAND...: run_step when selected, else record why not
  if selected "$1"; then run_step "$@"; else record "$1" "skipped" 0 "not in GPU_CHECK_ONLY"; fi
  render
}

step wheels 90 "$PY" benchmarks/gpu_wheels.py install "$WHEELS" "$WORK/site"
COURSE_DEVICE=cuda step figures 100 "$PY" benchmarks/gpu_figures.py "$OUT/figures.json" --skip ch05.compile
COURSE_DEVICE=cuda step figures-compile 100 "$PY" benchmarks/gpu_figures.py "$OUT/figures.json" --only ch05.compile

# The rest at once: separate processes on one GPU (the figures above were measured alone).
PARALLEL=$(left); [ "$PARALLEL" -gt 240 ] && PARALLEL=240
mapfile -t CUDA_FILES < <(grep -liE "cuda|gpu" tests/test_*.py)  # only these can hold CUDA-only tests
step cuda-tests "$PARALLEL" env PYTHONPATH="$ROOT/benchmarks:$PYTHONPATH" \
  "${PYTEST[@]}" -p gpu_cuda_tests "${CUDA_FILES[@]}" &
for nb in "${NOTEBOOKS[@]}"; do
  COURSE_DEVICE=cuda OMP_NUM_THREADS=2 step "notebook-$(basename "$nb" .ipynb)" "$PARALLEL" \
    "${PYTEST[@]}" --nbval-lax --nbval-cell-timeout=200 "$nb" &
done
step grader "$PARALLEL" "$PY" benchmarks/gpu_grading.py "$WORK/grading" --seconds $((PARALLEL > 40 ? PARALLEL - 25 : 15)) &
while [ -n "$(jobs -rp)" ]; do
  sleep 5
  render
done
wait
render
failed=$(grep -L -E '^(ok|skipped)\|' "$WORK/status/"* 2>/dev/null | grep -v '\.running$' | wc -l)
echo "GPU check done in $((SECONDS - STARTED)) s: $failed step(s) not ok; report: $OUT/report.md"
[ "$failed" -eq 0 ]  # exit 1 when a step failed (every result is in the report either way)
