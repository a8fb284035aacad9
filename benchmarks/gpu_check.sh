#!/usr/bin/env bash
# The GPU check: prove the course's GPU paths on a real CUDA GPU, in one command (under 8 minutes).
#
#   bash benchmarks/gpu_check.sh OUT_DIR                        on the GPU machine (offline)
#   GPU_CHECK_SIMULATE=1 bash benchmarks/gpu_check.sh OUT_DIR   a dry run here, as on the lent H200
#   bash benchmarks/gpu_check.sh --prepare-wheels [DIR]         here, with internet, once
#
# It uses the Python and torch already installed on the GPU machine (PYTHON, default python3),
# installs nothing from the network and downloads nothing. What that machine lacks for the
# notebooks (nbval, nbclient, nbformat, ipykernel, ipywidgets and their dependencies) comes from
# a folder of wheels brought along (GPU_CHECK_WHEELS, default benchmarks/wheels), prepared here
# by `--prepare-wheels` and installed into a temporary folder on PYTHONPATH.
#
# Steps, in this order, each timeboxed, each recorded in OUT_DIR/report.md as it finishes (logs
# in OUT_DIR/logs/), a failing step never stopping the later ones:
#   wheels            the notebook tools from the wheels folder (benchmarks/gpu_wheels.py)
#   then at once (each process with its own TMPDIR, IPYTHONDIR, MPLCONFIGDIR, progress file: no
#   two steps share /tmp/pytorch-gpu-course, chapter 06's snapshot files):
#   notebook-NN_...   every notebook under nbval with COURSE_DEVICE=cuda, one process each
#   cuda-tests        the tests that need a CUDA GPU, under xdist (benchmarks/gpu_cuda_tests.py)
#   ddp-nccl          chapter 07's DDP worker in a world-size-1 nccl group (benchmarks/gpu_ddp.py)
#   two-gpu-ddp, two-gpu-dp, two-gpu-fsdp   with two GPUs only (else skipped, saying so): chapter
#                     07's DDP with 2 nccl ranks, DataParallel's scatter, chapter 08's FSDP over
#                     nccl (benchmarks/gpu_two.py)
#   grader            the grader on a few submissions with the GPU visible (benchmarks/gpu_grading.py)
#   then on the quiet GPU, with the time left:
#   figures           each chapter's figures (benchmarks/gpu_figures.py) -> OUT_DIR/figures.json
#   figures-compile   the torch.compile figure, on its own (the first compile is slow)
# The notebooks come first in the budget: the group gets GROUP_MAX seconds, less only when the
# budget is small, and never less than GROUP_MIN while the budget has it; the figures get the
# rest. A GPU in an exclusive compute mode takes one CUDA process at a time: then the group's
# GPU steps run one after another, sharing all the time left (what one leaves goes to the next). A step that exits 77 is recorded
# as skipped, with its last line as the reason. Without a CUDA GPU it writes the report at
# once, every GPU step listed as skipped with the reason. docs/gpu/README.md says how to
# prepare, run and record a check.
#
# Knobs: PYTHON; GPU_CHECK_WHEELS; GPU_CHECK_SECONDS (all steps together, default 450);
# GPU_CHECK_ONLY="step step..." (run only these); GPU_CHECK_DRY_RUN=1 (each step only says what
# it would do: pytest --collect-only, the scripts' --dry-run; the budget is planned as if every
# step used all its time); GPU_CHECK_PLAN_ONLY=1 (a dry run of the budget alone: every step is
# recorded with its limit, none of their commands runs); GPU_CHECK_SIMULATE=1 (a dry run on a simulated H200:
# benchmarks/simulate_gpu on PYTHONPATH and PATH); GPU_CHECK_ASSUME_GPU=1 (run the steps even
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
BUDGET="${GPU_CHECK_SECONDS:-450}"
DRY_RUN="${GPU_CHECK_DRY_RUN:-}"
PLAN_ONLY="${GPU_CHECK_PLAN_ONLY:-}"
[ -n "$PLAN_ONLY" ] && DRY_RUN=1
if [ -n "${GPU_CHECK_SIMULATE:-}" ]; then  # torch's CUDA queries and nvidia-smi answer as on the H200
  DRY_RUN=1
  export GPU_CHECK_SIMULATE PATH="$ROOT/benchmarks/simulate_gpu:$PATH"
  export PYTHONPATH="$ROOT/benchmarks/simulate_gpu${PYTHONPATH:+:$PYTHONPATH}"
fi
RERUN_ENV=""  # the knobs this run was given, for the report's rerun command
for knob in PYTHON GPU_CHECK_WHEELS GPU_CHECK_SECONDS GPU_CHECK_SIMULATE GPU_CHECK_DRY_RUN GPU_CHECK_PLAN_ONLY GPU_CHECK_ASSUME_GPU; do
  [ -n "${!knob:-}" ] && RERUN_ENV+="$knob=${!knob} "
done
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT/logs" "$WORK/status" "$WORK/site" "$WORK/steps"
rm -f "$OUT/logs/"*.log "$OUT/report.md" "$OUT/figures.json"
STARTED=$SECONDS
SPENT=0  # a dry run's clock: the planned seconds, every step as if it used all its time

# Seconds: the wheels; the group (the notebooks and what runs beside them); the figures after it.
WHEELS_MAX=45 GROUP_MAX=260 GROUP_MIN=200 FIGURES_MAX=70 FIGURES_RESERVE=60 COMPILE_MAX=60
GRACE=20  # a step's SIGKILL comes 15 s after its SIGINT

NOTEBOOKS=()
for nb in notebooks/[0-9][0-9]_*.ipynb; do NOTEBOOKS+=("$nb"); done
STEPS=(wheels)
for nb in "${NOTEBOOKS[@]}"; do STEPS+=("notebook-$(basename "$nb" .ipynb)"); done
TWO_GPU_STEPS=(two-gpu-ddp two-gpu-dp two-gpu-fsdp)  # each skipped (exit 77) below two GPUs
STEPS+=(cuda-tests ddp-nccl "${TWO_GPU_STEPS[@]}" grader figures figures-compile)

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
  SMI="$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader 2>&1 \
    | head -8)" || SMI="nvidia-smi failed: $SMI"
fi
EXCLUSIVE=""  # one CUDA process at a time on this GPU: the group's GPU steps run one after another
if echo "$SMI" | grep -qiE ', *(Exclusive_Process|Exclusive_Thread|Prohibited) *$'; then
  EXCLUSIVE="$(echo "$SMI" | head -1 | sed 's/.*, *//')"
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
  echo "- nvidia-smi (name, driver, memory, compute mode): $(echo "$SMI" | paste -sd ';' -)"
  [ -n "$EXCLUSIVE" ] && echo "- compute mode $EXCLUSIVE: one CUDA process at a time, so the GPU steps ran one after another"
  [ -n "${GPU_CHECK_SIMULATE:-}" ] && echo "- SIMULATED: torch's CUDA queries and nvidia-smi are benchmarks/simulate_gpu's; nothing ran on a GPU"
} > "$ENV_MD"

# ---------------------------------------------------------------- bookkeeping
record() {  # record STEP STATE SECONDS SUMMARY
  printf '%s|%s|%s\n' "$2" "$3" "$(echo "$4" | tr '|\n' '/ ' | sed 's/ *$//' | cut -c1-300)" > "$WORK/status/$1"
}

summary_of() {  # the last meaningful line of a log (pytest's summary, the script's verdict)
  grep -v '^\s*$' "$1" 2>/dev/null | grep -vE '^(=+|-+)$' | tail -1 | sed 's/^=* *//; s/ *=*$//'
}

elapsed() {  # seconds of the budget used; in a dry run, those planned (this machine's speed left out)
  if [ -n "$DRY_RUN" ]; then echo "$SPENT"; else echo $((SECONDS - STARTED)); fi
}
left() { echo $((BUDGET - $(elapsed))); }

selected() {
  [ -z "${GPU_CHECK_ONLY:-}" ] && return 0
  case " $GPU_CHECK_ONLY " in *" $1 "*) return 0 ;; esac
  return 1
}

clamp() { local v=$1; [ "$v" -lt "$2" ] && v=$2; [ "$v" -gt "$3" ] && v=$3; echo "$v"; }  # clamp V MIN MAX

limit_for() {  # limit_for SECONDS: what a step that wants SECONDS may have now
  local limit=$(( $(left) - GRACE ))
  [ "$1" -lt "$limit" ] && limit=$1
  echo "$limit"
}

group_limit() {  # the group's seconds: GROUP_MAX, less the figures' reserve only while GROUP_MIN stays
  local room=$(( $(left) - GRACE ))
  if [ -n "$EXCLUSIVE" ]; then echo "$room"; return; fi  # one after another: all the time there is
  local limit=$(( room - FIGURES_RESERVE ))
  [ "$limit" -lt "$GROUP_MIN" ] && limit=$room
  [ "$limit" -gt "$GROUP_MAX" ] && limit=$GROUP_MAX
  echo "$limit"
}

run_step() {  # run_step STEP LIMIT COMMAND...: timeboxed, logged, recorded; never fails the script
  local step=$1 limit=$2; shift 2
  if [ "$limit" -lt 10 ]; then record "$step" "skipped" 0 "out of time (the check stops at ${BUDGET} s)"; return; fi
  if [ -n "$PLAN_ONLY" ]; then record "$step" "dry run (limit ${limit} s)" 0 "planned only"; return; fi
  if [ -n "$DRY_RUN" ]; then
    case $step in cuda-tests|notebook-*) set -- "$@" --collect-only ;; *) set -- "$@" --dry-run ;; esac
  fi
  local home="$WORK/steps/$step"  # this step's own IPython, matplotlib, Jupyter and progress files
  mkdir -p "$home/ipython" "$home/mpl" "$home/jupyter"
  # and its own TMPDIR, short (Unix socket paths under it stay under 108 bytes); the grader makes
  # its own private scratch root there with a random name, so it keeps the machine's (shorter)
  local tmp="${TMPDIR:-/tmp}"
  [ "$step" = grader ] || tmp="$(mktemp -d "$WORK/t.XXXX")"
  echo "running" > "$WORK/status/$step.running"
  {
    echo "# $step: limit ${limit} s${DRY_RUN:+ (dry run)}; IPYTHONDIR=$home/ipython MPLCONFIGDIR=$home/mpl TMPDIR=$tmp"
    echo "# COURSE_PROGRESS_FILE=$home/progress.json; command: $*"
  } > "$OUT/logs/$step.log"
  local t0=$SECONDS
  # SIGINT first: pytest then prints what ran so far; SIGKILL 15 s later if still alive
  TMPDIR="$tmp" IPYTHONDIR="$home/ipython" MPLCONFIGDIR="$home/mpl" COURSE_PROGRESS_FILE="$home/progress.json" \
    JUPYTER_RUNTIME_DIR="$home/jupyter" timeout -s INT -k 15 "$limit" "$@" >> "$OUT/logs/$step.log" 2>&1
  local code=$? took=$((SECONDS - t0)) state
  case $code in
    0) state="ok"; [ -n "$DRY_RUN" ] && state="dry run (limit ${limit} s)" ;;
    77) state="skipped" ;;
    124|137) state="TIMED OUT after ${limit} s" ;;
    *) state="FAILED (exit $code)" ;;
  esac
  record "$step" "$state" "$took" "$(summary_of "$OUT/logs/$step.log")"
  rm -f "$WORK/status/$step.running"
}

step() {  # step NAME LIMIT COMMAND...: run_step when selected, else record why not
  if selected "$1"; then run_step "$@"; else record "$1" "skipped" 0 "not in GPU_CHECK_ONLY"; fi
  render
}

spend() {  # spend SECONDS: in a dry run, the clock moves as if a step had used them all
  [ -n "$DRY_RUN" ] && [ "$1" -gt 0 ] && SPENT=$((SPENT + $1))
  return 0
}

headline() {  # the report's first lines: results, why, time, and how to rerun one step
  local ok=0 bad=0 skipped=0 running=0 first_bad="" bad_lines=() order=() step state took said
  local -A skipped_for=()  # reason -> the steps skipped for it
  for step in "${STEPS[@]}"; do
    if [ -f "$WORK/status/$step" ]; then
      IFS='|' read -r state took said < "$WORK/status/$step"
      case $state in
        ok|dry\ run*) ok=$((ok + 1)) ;;
        skipped)
          skipped=$((skipped + 1)); said=${said#skipped: }; said=${said:-no reason given}
          [ -n "${skipped_for[$said]+set}" ] || order+=("$said")
          skipped_for[$said]+="${skipped_for[$said]:+, }$step" ;;
        *) bad=$((bad + 1)); first_bad=${first_bad:-$step}; bad_lines+=("- **$state: $step**: $said") ;;
      esac
    else
      running=$((running + 1))
    fi
  done
  local what="ok"; [ -n "$DRY_RUN" ] && what="ok (dry run)"
  local verdict="$ok $what, $bad failed, $skipped skipped"
  [ "$running" -gt 0 ] && verdict="$verdict, $running not done yet"
  echo "**Result: $verdict; $((SECONDS - STARTED)) s of a ${BUDGET} s budget${DRY_RUN:+ (planned worst case: $(elapsed) s)}.**"
  echo
  [ "$bad" -gt 0 ] && printf '%s\n' "${bad_lines[@]}"
  if [ -n "$REASON" ]; then
    echo "- skipped, every GPU step: $REASON"
  else
    for said in "${order[@]}"; do echo "- skipped: ${skipped_for[$said]} ($said)"; done
  fi
  echo "- rerun one step: \`${RERUN_ENV}GPU_CHECK_ONLY=\"${first_bad:-STEP}\" bash benchmarks/gpu_check.sh $OUT-rerun\`" \
       "(steps: ${STEPS[*]})"
  echo
}

render() {  # report.md from what is recorded so far
  local tmp="$OUT/report.md.$BASHPID.tmp"  # steps running at once each render
  {
    echo "# GPU check report"
    echo
    headline
    echo "## Machine"
    echo
    cat "$ENV_MD"
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
      case "$(cut -d'|' -f1 "$WORK/status/$step")" in ok|skipped|dry\ run*) continue ;; esac
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
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1  # logs show progress even when a step is cut short
PYTEST=("$PY" -m pytest -p no:cacheprovider -o addopts= -q -rs)

limit=$(limit_for $WHEELS_MAX)
step wheels "$limit" "$PY" benchmarks/gpu_wheels.py install "$WHEELS" "$WORK/site"
spend "$limit"

# The group: separate processes on one GPU, at once (one after another in an exclusive compute mode).
GROUP=$(group_limit)
CELL_TIMEOUT=$(clamp $((GROUP - 30)) 10 200)
mapfile -t CUDA_FILES < <(grep -lE "needs a CUDA GPU|mark\.cuda\b" tests/test_*.py)  # gpu_cuda_tests picks in them
XDIST=()
if [ -z "$EXCLUSIVE" ] && "$PY" -c "import xdist" 2>/dev/null; then XDIST=(-n 3); fi
[ -n "$DRY_RUN" ] && XDIST=()  # --collect-only lists the selection; the real run adds -n 3 when xdist is there
GPU_STEPS=()
for nb in "${NOTEBOOKS[@]}"; do GPU_STEPS+=("notebook-$(basename "$nb" .ipynb)"); done
GPU_STEPS+=(cuda-tests ddp-nccl "${TWO_GPU_STEPS[@]}")

group_step() {  # group_step NAME LIMIT: the command of each step of the group
  local name=$1 limit=$2
  case $name in
    notebook-*)
      COURSE_DEVICE=cuda OMP_NUM_THREADS=2 step "$name" "$limit" \
        "${PYTEST[@]}" --nbval-lax --nbval-cell-timeout="$(clamp $((limit - 30)) 10 "$CELL_TIMEOUT")" \
        "notebooks/${name#notebook-}.ipynb" ;;
    cuda-tests)
      step cuda-tests "$limit" env PYTHONPATH="$ROOT/benchmarks:$PYTHONPATH" \
        "${PYTEST[@]}" "${XDIST[@]}" -p gpu_cuda_tests "${CUDA_FILES[@]}" ;;
    ddp-nccl)
      step ddp-nccl "$limit" "$PY" benchmarks/gpu_ddp.py "$WORK/ddp" --deadline "$(clamp $(((limit - 20) / 2)) 10 120)" ;;
    two-gpu-*)
      step "$name" "$limit" "$PY" benchmarks/gpu_two.py "$WORK/$name" --path "${name#two-gpu-}" \
        --deadline "$(clamp $(((limit - 20) / 2)) 10 120)" ;;
    grader)
      step grader "$limit" "$PY" benchmarks/gpu_grading.py "$WORK/grading" --workers 4 \
        --seconds $((limit > 40 ? limit - 25 : 15)) ;;
  esac
}

group_start=$(elapsed)
group_step grader "$GROUP" &  # its processes hide the GPU: it runs beside the others in any mode
if [ -z "$EXCLUSIVE" ]; then
  for name in "${GPU_STEPS[@]}"; do group_step "$name" "$GROUP" & done
else
  remaining=${#GPU_STEPS[@]}
  for name in "${GPU_STEPS[@]}"; do
    share=$(( (GROUP - ($(elapsed) - group_start)) / remaining ))
    group_step "$name" "$share"
    spend "$share"
    remaining=$((remaining - 1))
  done
fi
last_render=$SECONDS
while [ -n "$(jobs -rp)" ]; do  # the group's end is seen within 0.1 s; report.md every 2 s meanwhile
  sleep 0.1
  if [ $((SECONDS - last_render)) -ge 2 ]; then render; last_render=$SECONDS; fi
done
render
wait
[ -z "$EXCLUSIVE" ] && spend "$GROUP"

# The figures, measured alone on the quiet GPU, with the time that is left.
limit=$(limit_for $FIGURES_MAX)
COURSE_DEVICE=cuda step figures "$limit" "$PY" benchmarks/gpu_figures.py "$OUT/figures.json" --skip ch05.compile
spend "$limit"
limit=$(limit_for $COMPILE_MAX)
COURSE_DEVICE=cuda step figures-compile "$limit" "$PY" benchmarks/gpu_figures.py "$OUT/figures.json" --only ch05.compile
spend "$limit"
render
failed=$(grep -L -E '^(ok|skipped|dry run[^|]*)\|' "$WORK/status/"* 2>/dev/null | grep -v '\.running$' | wc -l)
echo "GPU check${DRY_RUN:+ (dry run)} done in $((SECONDS - STARTED)) s: $failed step(s) not ok; report: $OUT/report.md"
[ "$failed" -eq 0 ]  # exit 1 when a step failed (every result is in the report either way)
