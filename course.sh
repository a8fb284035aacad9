#!/usr/bin/env bash
# One entry point for learners, teachers and CI (Linux, macOS). It runs course.py, which does
# the same on Windows or without bash: `python course.py start|test|doctor`.
#   ./course.sh start   install into .venv (first time) and open the course in JupyterLab
#   ./course.sh test    install into .venv (first time) and run the whole test suite
#   ./course.sh doctor  install, then print the environment report
# Set COURSE_VENV to use another virtual environment folder.
# torch is installed first, pinned (TORCH_VERSION in course.py). On Linux, PyPI's torch==2.13.0
# is a CUDA 13 build: it uses an NVIDIA GPU with a driver of the 580 series or newer; with an
# older driver torch.cuda.is_available() is False and the course runs on the CPU (doctor says why).
set -euo pipefail
cd "$(dirname "$0")"

pick_python() {
  for p in python3.11 python3.12 python3.10 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
      echo "$p"; return
    fi
  done
  echo "course.sh: Python 3.10 or newer is needed (3.11 recommended)" >&2
  exit 1
}

PYTHON="$(pick_python)"
exec "$PYTHON" course.py "$@"
