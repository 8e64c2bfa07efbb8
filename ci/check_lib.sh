# Sourced by the integration checks (ci/vllm_check.sh, ci/sglang_check.sh, ci/client_check.sh):
# what they share. Each keeps its venvs and the pinned wheels its tests read code from in one cache
# folder that outlives CI runs, and fails on a skip as on a failure (a skip there means a venv or a
# wheel is not what the check set up).
#
#   TENSORB64_CI_CACHE  that folder (default /var/cache/tensorb64-ci)
cache=${TENSORB64_CI_CACHE:-/var/cache/tensorb64-ci}
mkdir -p "$cache"

# cached_venv DIR PYTHON STAMP INSTALL: the venv DIR, reused while its stamp (STAMP and PYTHON's
# version) is unchanged, else made anew from PYTHON and filled by the function INSTALL, called with
# DIR. Its log lines go to stderr.
cached_venv() {
  local venv=$1 python=$2 install=$4 stamp
  stamp="$3 | $("$python" -c 'import sys; print(sys.version.split()[0])')"
  if [[ -x $venv/bin/python && "$(cat "$venv/.tensorb64-requirements" 2>/dev/null)" == "$stamp" ]]; then
    echo "reusing $venv" >&2
    return
  fi
  echo "building $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$install" "$venv" >&2
  echo "$stamp" >"$venv/.tensorb64-requirements"
  echo "built $venv at $SECONDS s" >&2
}

# fetched PIP NAME==VERSION FILE_GLOB: the path of that release's wheel in the cache folder,
# downloaded (without its dependencies) by the pip PIP the first time.
fetched() {
  local pip=$1 found
  found=$(compgen -G "$cache/$3" | head -1 || true)
  if [[ -z $found ]]; then
    "$pip" download -q --no-deps -d "$cache" "$2" >&2
    found=$(compgen -G "$cache/$3" | head -1)
  fi
  echo "$found"
}

# run_tests LABEL PYTHON PYTEST_ARGUMENTS...: pytest in that interpreter, its last lines shown;
# exits the check on a failure and on a skip.
run_tests() {
  local label=$1 python=$2 log status=0
  shift 2
  log=$(mktemp /tmp/tensorb64-check.XXXXXX)
  "$python" -m pytest -p no:cacheprovider -q -rs "$@" 2>&1 | tee "$log" | tail -15 || status=$?
  if [[ $status == 0 ]] && grep -qE '[0-9]+ skipped' "$log"; then echo "$label: a test skipped" >&2; status=1; fi
  [[ $status != 0 ]] || echo "$label: $(grep -E '^[0-9]+ passed' "$log" | tail -1) (at $SECONDS s)"
  rm -f "$log"
  [[ $status == 0 ]] || exit 1
}
