#!/usr/bin/env bash
# Install the device bundle's parts (scripts/device_bundle.sh) on the lent GPU machine, with no network.
#
#   eval "$(bash scripts/device_install.sh gl A B check)"
#
# Arguments, done in order:
#   A | B | FILE.tar.xz  unpack a part (.device/parts/partA.tar.xz, ... or a path) into $DEVICE_SITE/NAME, NAME being
#                        A for partA.tar.xz (the file's name less "part" and ".tar.xz"). A part already installed
#                        from the same archive (sha256) is skipped, and one whose archive was not carried this time
#                        but was installed by an earlier call on this warm machine is reused.
#   gl                   unpack the GL loader debs in .gl/ into / (the device tool's recipe; root only) + ldconfig
#   check                import ray.rllib, ray.tune, gymnasium, mujoco and dm_control.suite from the installed parts,
#                        check every requirement of their distributions against what is installed, and render one
#                        64x64 frame of cartpole with MUJOCO_GL (egl unless set); non-zero exit on any failure
# Logs go to stderr; stdout is one line to eval: the export of PYTHONPATH (every part installed under $DEVICE_SITE,
# then the PYTHONPATH you had), MUJOCO_GL=egl and PYOPENGL_PLATFORM=egl (and __EGL_VENDOR_LIBRARY_FILENAMES where the
# NVIDIA driver's EGL vendor file is only under /usr/local/nvidia, as the device tool's README says).
# Environment: DEVICE_SITE (.device/site), DEVICE_PARTS (.device/parts), GL_DIR (.gl), PYTHON (python3),
# CHECK_MODULES (the modules `check` imports: "ray ray.rllib ray.tune gymnasium mujoco dm_control.suite torch"),
# CHECK_RENDER (1; 0 skips the frame), DEVICE_TAR (python: unpack with Python's tarfile even where xz exists).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SITE=${DEVICE_SITE:-$ROOT/.device/site}
PARTS=${DEVICE_PARTS:-$ROOT/.device/parts}
GL_DIR=${GL_DIR:-$ROOT/.gl}
PY=${PYTHON:-python3}
mkdir -p "$SITE"
SITE=$(cd "$SITE" && pwd)

log() { echo "[device_install] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

part_dirs() {  # installed parts, in name order, ':'-joined
  local d out=""
  for d in "$SITE"/*/; do
    [ -f "$d/.device_part.sha256" ] || continue
    out+="${out:+:}${d%/}"
  done
  echo "$out"
}

extract() {  # extract ARCHIVE DIR (tar with xz when there, else Python's tarfile)
  if [ "${DEVICE_TAR:-}" != python ] && command -v xz >/dev/null && tar --version >/dev/null 2>&1; then
    tar -xJf "$1" -C "$2"
  else
    "$PY" - "$1" "$2" <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    kw = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    t.extractall(sys.argv[2], **kw)
EOF
  fi
}

install_part() {
  local arg=$1 archive name sum dest
  if [ -f "$arg" ]; then archive=$arg; else archive=$PARTS/part$arg.tar.xz; fi
  name=$(basename "$archive"); name=${name%.tar.xz}; name=${name#part}
  [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || die "bad part name '$name' (from $archive)"
  dest=$SITE/$name
  if [ ! -f "$archive" ]; then
    if [ -f "$dest/.device_part.sha256" ]; then
      log "part $name: $archive not here; reusing the one installed in $dest"; return
    fi
    die "part $name: no $archive (carry it: see benchmarks/results/gpu/bundle_notes.md) and none installed in $dest"
  fi
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  if [ -f "$dest/.device_part.sha256" ] && [ "$(cat "$dest/.device_part.sha256")" = "$sum" ]; then
    log "part $name: already installed in $dest"; return
  fi
  local t0=$SECONDS tmp=$SITE/.tmp-$name
  rm -rf "$tmp"; mkdir -p "$tmp"
  extract "$archive" "$tmp" || { rm -rf "$tmp"; die "part $name: could not unpack $archive"; }
  echo "$sum" > "$tmp/.device_part.sha256"
  rm -rf "$dest"; mv "$tmp" "$dest"
  log "part $name: installed $(du -sm "$dest" | cut -f1) MB into $dest in $((SECONDS - t0)) s"
}

install_gl() {
  compgen -G "$GL_DIR/*.deb" >/dev/null || die "gl: no .deb in $GL_DIR (carry .gl: see benchmarks/results/gpu/bundle_notes.md)"
  [ "$(id -u)" = 0 ] || die "gl: unpacking into / needs root"
  local f
  for f in "$GL_DIR"/*.deb; do dpkg -x "$f" /; done
  ldconfig
  log "gl: unpacked $(ls "$GL_DIR"/*.deb | wc -l) debs into /; $(ldconfig -p | grep -c -E 'libEGL\.so\.1|libOpenGL\.so\.0') of libEGL.so.1/libOpenGL.so.0 known to ldconfig"
}

# The device tool's README: where libglvnd finds no EGL vendor file, point it at the NVIDIA driver's. Prints the
# value for __EGL_VENDOR_LIBRARY_FILENAMES (the one already set, if any), or nothing.
egl_vendor() {
  local nv=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  if [ -n "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ]; then
    echo "$__EGL_VENDOR_LIBRARY_FILENAMES"
  elif [ -f "$nv" ] &&
     ! compgen -G '/usr/share/glvnd/egl_vendor.d/*nvidia*.json' >/dev/null &&
     ! compgen -G '/etc/glvnd/egl_vendor.d/*nvidia*.json' >/dev/null; then
    echo "$nv"
  fi
}

check() {
  local pp ev; pp=$(part_dirs); ev=$(egl_vendor)
  [ -z "$ev" ] || export __EGL_VENDOR_LIBRARY_FILENAMES=$ev
  [ -n "$pp" ] || die "check: no part installed in $SITE"
  PYTHONPATH="$pp${PYTHONPATH:+:$PYTHONPATH}" MUJOCO_GL=${MUJOCO_GL:-egl} \
    PYOPENGL_PLATFORM=${PYOPENGL_PLATFORM:-${MUJOCO_GL:-egl}} "$PY" - "$pp" <<'EOF'
import importlib, importlib.metadata as md, os, pathlib, sys, time
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as canon
EXTRAS = {"ray": {"rllib", "tune"}, "etils": {"epath"}}
problems = []
print(f"[device_install] check: Python {sys.version.split()[0]} at {sys.executable}", file=sys.stderr)
# 1. every requirement of every distribution in the parts is installed, at a version that meets it
for part in sys.argv[1].split(":"):
    for info in sorted(pathlib.Path(part).glob("*.dist-info")):
        dist = md.Distribution.at(info)
        name = canon(dist.metadata["Name"])
        for line in dist.requires or []:
            req = Requirement(line)
            extras = EXTRAS.get(name, set()) | {""}
            if req.marker is not None and not any(req.marker.evaluate({"extra": x}) for x in extras):
                continue
            try:
                have = md.version(req.name)
            except md.PackageNotFoundError:
                problems.append(f"{name} needs {req}: not installed")
                continue
            if req.specifier and not req.specifier.contains(have, prereleases=True):
                problems.append(f"{name} needs {req}: {have} is installed")
# 2. the imports our code needs
for mod in os.environ.get("CHECK_MODULES", "ray ray.rllib ray.tune gymnasium mujoco dm_control.suite torch").split():
    t0 = time.time()
    try:
        m = importlib.import_module(mod)
        where = os.path.dirname(getattr(m, "__file__", "") or "?")
        print(f"[device_install] check: import {mod} ok ({time.time() - t0:.1f} s) from {where}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001
        problems.append(f"import {mod}: {type(e).__name__}: {e}")
# 3. one rendered frame (MUJOCO_GL as set; egl by default)
if os.environ.get("CHECK_RENDER", "1") == "0":
    print("[device_install] check: render skipped (CHECK_RENDER=0)", file=sys.stderr)
else:
    try:
        from dm_control import suite
        env = suite.load("cartpole", "swingup")
        env.reset()
        frame = env.physics.render(64, 64, camera_id=0)
        assert frame.shape == (64, 64, 3) and frame.any(), f"bad frame {frame.shape}"
        print(f"[device_install] check: rendered a 64x64 frame with MUJOCO_GL={os.environ['MUJOCO_GL']}",
              file=sys.stderr)
    except Exception as e:  # noqa: BLE001
        problems.append(f"render with MUJOCO_GL={os.environ.get('MUJOCO_GL')}: {type(e).__name__}: {e}")
for p in problems:
    print(f"[device_install] check: PROBLEM: {p}", file=sys.stderr)
print(f"[device_install] check: {'FAILED' if problems else 'ok'}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
}

[ $# -gt 0 ] || { sed -n '2,20p' "${BASH_SOURCE[0]}" >&2; exit 2; }
rc=0
for a in "$@"; do
  case "$a" in
    gl) install_gl ;;
    check) check || rc=1 ;;
    *) install_part "$a" ;;
  esac
done
pp=$(part_dirs)
[ -n "$pp" ] || die "no part installed in $SITE"
extra=$(egl_vendor); extra=${extra:+ __EGL_VENDOR_LIBRARY_FILENAMES=$extra}
echo "export PYTHONPATH=$pp\${PYTHONPATH:+:\$PYTHONPATH} MUJOCO_GL=egl PYOPENGL_PLATFORM=egl$extra"
exit $rc
