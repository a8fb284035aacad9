#!/usr/bin/env bash
# One entry point for learners, teachers and CI.
#   ./course.sh start   install into .venv (first time) and open the course in JupyterLab
#   ./course.sh test    install into .venv (first time) and run the whole test suite
#   ./course.sh doctor  install, then print the environment report
# Set COURSE_VENV to use another virtual environment folder.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${COURSE_VENV:-.venv}"
TORCH_VERSION="2.13.0"

pick_python() {
  for p in python3.11 python3.12 python3.10 python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
      echo "$p"; return
    fi
  done
  echo "course.sh: Python 3.10 or newer is needed (3.11 recommended)" >&2
  exit 1
}

install() {
  local stamp="$VENV/.course-installed"
  local want
  want="$(cat pyproject.toml course.sh | cksum)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  echo "== Installing the course into $VENV (first run only) =="
  [ -x "$VENV/bin/python" ] || "$(pick_python)" -m venv "$VENV"
  local pip=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
  # torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
  "${pip[@]}" "torch==$TORCH_VERSION"
  "${pip[@]}" -e ".[test]"
  echo "$want" > "$stamp"
}

cmd="${1:-start}"
case "$cmd" in
  start)
    install
    root_flag=()
    [ "$(id -u)" = 0 ] && root_flag=(--allow-root)  # Jupyter refuses root without it (containers)
    exec "$VENV/bin/jupyter" lab --ip=127.0.0.1 --notebook-dir=notebooks "${root_flag[@]}" "${@:2}"
    ;;
  test)
    install
    exec "$VENV/bin/python" -m pytest "${@:2}"
    ;;
  doctor)
    install
    exec "$VENV/bin/python" -m course_lib doctor "${@:2}"
    ;;
  *)
    echo "usage: ./course.sh [start|test|doctor] [extra arguments]" >&2
    exit 2
    ;;
esac
