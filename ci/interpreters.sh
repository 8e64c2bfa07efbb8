#!/usr/bin/env bash
# Provides one CPython interpreter for each version the wheels are built for, and prints
#
#   NAME PATH
#
# for each (NAME: 3.10 3.11 3.12 3.13 3.14 3.13t 3.14t, or those named as arguments; also
# 3.14t-tsan, a free-threaded 3.14 built with ThreadSanitizer for cpp/hardening/sanitize.sh):
#
#   ci/interpreters.sh [NAME ...]
#
# Where each comes from:
#   3.10 3.12 3.13   pyenv's build of that version (part of the CI machine's image)
#   3.11             $PYTHON (CI's own interpreter, Debian 12's python3.11), else pyenv's
#   3.14 3.13t 3.14t built from source with pyenv's python-build (3.13t/3.14t: --disable-gil)
#                    from Debian's orig tarball of CPython 3.13.15 / 3.14.7 (pinned below): no
#                    Debian suite packages a free-threaded build, sid's python3.14 needs sid's
#                    glibc (a chroot) while a build from the same tarball runs here, and Debian's
#                    archive (not python.org) is what CI can reach.
#
# Source builds go to a cache folder that survives between CI runs on the same machine,
# ${TENSORB64_CI_CACHE:-/var/cache/tensorb64-ci}/pythons, and are reused from there (about 4.5
# minutes each on 2 idle cores when absent, as on a fresh machine). A cached build is reused
# until the pinned release changes.
# Logs go to stderr; stdout holds only the NAME PATH lines.
set -euo pipefail
shopt -s inherit_errexit

cache="${TENSORB64_CI_CACHE:-/var/cache/tensorb64-ci}/pythons"
[[ $# -gt 0 ]] || set -- 3.10 3.11 3.12 3.13 3.14 3.13t 3.14t
log() { echo "interpreters: $*" >&2; }

# The newest pyenv build of a minor version, e.g. 3.10 -> ~/.pyenv/versions/3.10.13/bin/python3.10.
from_pyenv() {
  local minor="$1" root
  root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  local found
  found="$(ls -d "$root"/versions/"$minor".[0-9]* 2>/dev/null | grep -E "/$minor\.[0-9]+$" | sort -V | tail -1)"
  [[ -n "$found" && -x "$found/bin/python$minor" ]] || return 1
  echo "$found/bin/python$minor"
}

# The CPython releases built from source, pinned with their sha256: Debian's orig tarball of each
# is CPython's release tarball (Debian's 3.13.5 has the sha256 pyenv's definition gives for
# python.org's Python-3.13.5.tar.xz), and each sha256 here is the one Debian's .dsc lists.
declare -A release=([3.13]=3.13.15 [3.14]=3.14.7)
declare -A release_sha256=(
  [3.13.15]=1e66a7945a48390ee4c2a4268a0e4185884059a13c4aab6d148aa208deea4a76
  [3.14.7]=3b48dac8fb59f62eaa67ac83c1eb12bda1b7a08406dd286e252c11a66be27f81
)

# CPython MINOR (free-threaded when FT=t; VARIANT=-tsan: built with ThreadSanitizer) from Debian's
# orig tarball into the cache.
from_source() {
  local minor="$1" ft="$2" variant="${3:-}"
  local version="${release[$minor]}"
  local sha="${release_sha256[$version]}"
  local prefix="$cache/$version$ft$variant"
  # One build of a prefix at a time (another CI run, or a second call, waits for it).
  mkdir -p "$cache"
  exec {lock}>"$prefix.lock"
  flock "$lock"
  if [[ -f "$prefix/.complete" ]]; then
    echo "$prefix/bin/python$minor$ft"
    return
  fi
  mkdir -p "$cache/tarballs"
  local tarball="$cache/tarballs/Python-$version.tar.xz"
  if [[ ! -f "$tarball" ]]; then
    local url="${DEBIAN_MIRROR:-http://deb.debian.org/debian}/pool/main/p/python$minor/python${minor}_$version.orig.tar.xz"
    log "fetching $url"
    local partial
    partial="$(mktemp "$tarball.XXXXXX")"
    curl -fsS -o "$partial" "$url"
    echo "$sha  $partial" | sha256sum -c --quiet
    mv "$partial" "$tarball"
  fi
  # A python-build definition of our own (pyenv's list may not know this release yet): the same
  # steps as pyenv's own 3.13/3.14 definitions, with Debian's tarball under CPython's name.
  # --disable-test-modules: CPython's own test suite is neither built nor installed (time).
  local def="$cache/tarballs/definition-$version$ft"
  {
    [[ -z "$ft" ]] || echo "export PYTHON_BUILD_FREE_THREADING=1"
    echo "export PYTHON_BUILD_CONFIGURE_WITH_OPENSSL=1"
    echo "install_package \"Python-$version\" \"https://www.python.org/ftp/python/$version/Python-$version.tar.xz#$sha\" standard verify_py${minor/./} ensurepip"
  } > "$def"
  # --with-thread-sanitizer: CPython's own TSan configuration (its CI's), with clang, whose TSan
  # runtime the extension built for it links against too (cpp/hardening/sanitize.sh); static, so
  # the runtime is in the executable the extension is loaded into.
  local configure="--disable-test-modules" compiler=()
  [[ "$variant" != -tsan ]] || { configure+=" --with-thread-sanitizer --disable-shared"; compiler=(CC=clang CXX=clang++); }
  log "building CPython $version$ft$variant into $prefix (python-build, offline)"
  local start=$SECONDS
  rm -rf "$prefix"
  # Built in place (sysconfig keeps the prefix); .complete marks a finished build.
  # What makes a build cheaper without changing what the tests see (these interpreters build and
  # run the wheels; the extension's own flags come from its CMake build, not from these):
  #  * OPT (configure's optimisation flags, "-g -O3 -Wall" by default): -O1 and no debug
  #    information. -fno-strict-aliasing is what configure adds for gcc when it picks OPT itself
  #    (dtoa.c needs it), so it is kept.
  #  * COMPILEALL_OPTS=-lj0: `make install` byte-compiles only the top level of the standard
  #    library (-l), not every package three times over (-o 0 -o 1 -o 2): the rest is compiled
  #    when first imported.
  env "${compiler[@]}" OPT="-O1 -fno-strict-aliasing" PYTHON_BUILD_CACHE_PATH="$cache/tarballs" \
    PYTHON_CONFIGURE_OPTS="$configure" MAKE_OPTS="-j${JOBS:-2}" MAKE_INSTALL_OPTS="COMPILEALL_OPTS=-lj0" "$(pyenv root)/plugins/python-build/bin/python-build" "$def" "$prefix" >&2 \
    || { rm -rf "$prefix"; log "building CPython $version$ft failed"; return 1; }
  if [[ "$variant" == -tsan ]]; then
    # CPython's suppressions for its own known races under TSan (what its CI runs this build with).
    tar -xJOf "$tarball" "Python-$version/Tools/tsan/suppressions_free_threading.txt" > "$prefix/tsan_suppressions.txt"
  fi
  touch "$prefix/.complete"
  log "built CPython $version$ft in $((SECONDS - start)) s"
  echo "$prefix/bin/python$minor$ft"
}

for name in "$@"; do
  case "$name" in
    3.10 | 3.12 | 3.13) path="$(from_pyenv "$name")" || { log "no pyenv CPython $name (pyenv install $name)"; exit 1; } ;;
    3.11)
      path="$(command -v "${PYTHON:-python3}")"
      [[ "$("$path" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" == 3.11 ]] || path="$(from_pyenv 3.11)" ;;
    3.14) path="$(from_source 3.14 "")" ;;
    3.13t | 3.14t) path="$(from_source "${name%t}" t)" ;;
    3.14t-tsan) path="$(from_source 3.14 t -tsan)" ;;
    *) log "unknown interpreter '$name' (3.10 3.11 3.12 3.13 3.14 3.13t 3.14t 3.14t-tsan)"; exit 2 ;;
  esac
  # Each is checked to be what its name says (free-threaded or not).
  "$path" - "$name" <<'EOF' >&2
import sys, sysconfig
name = sys.argv[1]
ft = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
assert name.split("-")[0] == "%d.%d%s" % (sys.version_info[0], sys.version_info[1], "t" if ft else ""), (name, sys.version)
EOF
  echo "$name $path"
done
