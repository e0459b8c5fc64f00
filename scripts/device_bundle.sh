#!/usr/bin/env bash
# Build the device bundle: the Python packages our code imports on the lent GPU machine that its image lacks
# (ray[rllib,tune], dm_control, mujoco, gymnasium and their missing deps), as compressed parts small enough to be
# carried by the device tool (64 MiB per call, working tree included). Run HERE (needs a package registry);
# scripts/device_install.sh unpacks the parts THERE (no network). See benchmarks/results/gpu/bundle_notes.md.
#
#   bash scripts/device_bundle.sh            # download (skips wheels already there), unpack, trim, write the parts
#   FORCE=1 bash scripts/device_bundle.sh    # rebuild the parts even when their manifest is unchanged
#   PYVER=3.11 bash scripts/device_bundle.sh # the same bundle for another CPython (used to test the trim here)
#
# Output (all ignored by git):
#   .device/wheels/cp312/*.whl               the downloaded wheels (cache)
#   .device/build/cp312/part{A,B}/           the unpacked, trimmed trees (what the parts hold)
#   .device/parts/part{A,B}.tar.xz           the parts (for PYVER=3.12; .device/parts-cp311/ for 3.11 etc.)
#   .device/parts/part{A,B}.manifest         wheels, trims and sizes of each part (the rebuild stamp)
#   .gl/*.deb                                the GL loader debs (README recipe of the device tool), GL=0 skips
# Environment: PYVER (3.12), PART_LIMIT_MIB (60), XZ_LEVEL (9), XZ_THREADS (1), GL (1), FORCE (0),
# STRIP (1: strip the ELF files' symbol tables; they load and run the same, and ray's three binaries shrink by 35 MB),
# PYTHON (the host python whose pip downloads and unpacks; .venv/bin/python, else python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYVER=${PYVER:-3.12}
TAG=cp${PYVER/./}
DEV=${DEVICE_DIR:-$ROOT/.device}
WHL=$DEV/wheels/$TAG
BUILD=$DEV/build/$TAG
if [ "$TAG" = cp312 ]; then PARTS=$DEV/parts; else PARTS=$DEV/parts-$TAG; fi
LIMIT_MIB=${PART_LIMIT_MIB:-60}
XZ_THREADS=${XZ_THREADS:-1}
XZ_LEVEL=${XZ_LEVEL:-9}
STRIP=${STRIP:-1}
GL=${GL:-1}
FORCE=${FORCE:-0}
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python
else PY=python3; fi

# What each part holds: exact pins (the versions pip resolved for ray[rllib,tune]==2.60.0 dm_control==1.0.50
# mujoco==3.17.0 gymnasium==1.2.2 for cp312 manylinux x86-64, minus what the device image already has; the closure
# check below re-derives this from the wheels' METADATA and fails on anything missing).
# Part A: Ray and what `import ray.rllib, ray.tune` needs beyond the image (gymnasium: ray[rllib] pins it).
PART_A=(
  ray==2.60.0
  gymnasium==1.2.2 farama-notifications==0.0.6
  dm-tree==0.1.10 lz4==4.4.5 ormsgpack==1.13.1 tensorboardX==2.6.5
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  typing-extensions==4.16.0         # the image has it, but pydantic 2.14.4 needs >=4.16.0 (image version unknown)
)
# Part B: MuJoCo, dm_control (suite + rendering) and theirs.
PART_B=(
  mujoco==3.17.0 dm-control==1.0.50 dm-env==1.6 glfw==2.11.0 pyopengl==3.1.10 labmaze==1.0.6 websockets==17.4
)
# Removed after unpacking (paths relative to the part's root). Everywhere also: __pycache__, *.pyc, bin/ (console
# scripts with this machine's interpreter in their shebang).
TRIM_A=(
  ray/jars                          # Java workers (33 MB)
  ray/dashboard/client/build        # dashboard web UI (the dashboard needs ray[default], absent on the device)
)
TRIM_B=(
  dm_control/locomotion             # 82 MB of soccer/maze assets; `from dm_control import suite` never imports it
  dm_control/manipulation           # manipulation tasks (imports locomotion-style assets)
  mujoco/include                    # C headers, for building plugins against libmujoco
  mujoco/experimental/studio        # MuJoCo Studio GUI (36 MB); `import mujoco` and rendering never import it
)
# Directories named `tests` are removed in both parts (test suites only; the import check covers what we import).

# The device image's Python packages (KINDS.md of the device tool, "Python packages already there", 2026-11-17).
DEVICE_HAS="absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers
flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib
kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py
markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind
narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc
nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir
onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging
pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham
simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore
threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig
werkzeug wheel wrapt xarray xxhash yarl zipp"
# Extras we use, per distribution (for the closure check).
EXTRAS="ray:rllib,tune etils:epath"

PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
  --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64)

log() { echo "[device_bundle] $*" >&2; }
norm() { echo "$1" | tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/_/g'; }

# The wheel file of NAME==VERSION in $WHL, if downloaded.
wheel_of() {
  local n v f b
  n=$(norm "${1%%==*}"); v=${1##*==}
  for f in "$WHL"/*.whl; do
    [ -e "$f" ] || continue
    b=$(basename "$f")
    if [ "$(norm "${b%%-*}")" = "$n" ] && [ "$(echo "$b" | cut -d- -f2)" = "$v" ]; then echo "$f"; return 0; fi
  done
  return 1
}

download() {
  mkdir -p "$WHL"
  local missing=() s
  for s in "${PART_A[@]}" "${PART_B[@]}"; do wheel_of "$s" >/dev/null || missing+=("$s"); done
  if [ ${#missing[@]} -eq 0 ]; then log "all $(( ${#PART_A[@]} + ${#PART_B[@]} )) wheels already in $WHL"; return; fi
  log "downloading ${#missing[@]} wheels for CPython $PYVER manylinux x86-64: ${missing[*]}"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    "${PLATFORMS[@]}" -d "$WHL" "${missing[@]}" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
  for s in "${missing[@]}"; do wheel_of "$s" >/dev/null || { log "ERROR: no wheel for $s in $WHL"; exit 1; }; done
}

gl_debs() {
  [ "$GL" = 1 ] || { log "GL=0: skipping the GL loader debs"; return; }
  local pk=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2) have=1 p
  for p in "${pk[@]}"; do compgen -G "$ROOT/.gl/${p}_*.deb" >/dev/null || have=0; done
  if [ $have = 1 ]; then log "GL loader debs already in .gl/"; return; fi
  if ! command -v apt-get >/dev/null; then
    log "WARNING: no apt-get here; fetch the GL loader debs as benchmarks/results/gpu/bundle_notes.md says"; return
  fi
  mkdir -p "$ROOT/.gl" /tmp/amd64/partial
  local o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  log "downloading the GL loader debs into .gl/ (${pk[*]})"
  if ! { apt-get "${o[@]}" update -qq >/dev/null && (cd "$ROOT/.gl" && apt-get "${o[@]}" download -qq "${pk[@]}"); }; then
    log "WARNING: apt-get download of the GL loader debs failed; see benchmarks/results/gpu/bundle_notes.md"
  fi
}

# Unpack (pip --target keeps the wheels' file modes: ray's gcs_server and raylet must stay executable) and trim.
build_part() {
  local name=$1; shift
  local -n specs=$1 trims=$2
  local dir=$BUILD/part$name files=() s
  for s in "${specs[@]}"; do files+=("$(wheel_of "$s")"); done
  rm -rf "$dir"; mkdir -p "$dir"
  log "part $name: unpacking ${#files[@]} wheels into ${dir#"$ROOT"/}"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --only-binary=:all: --python-version "$PYVER" \
    --implementation cp "${PLATFORMS[@]}" --no-warn-script-location --target "$dir" "${files[@]}" \
    2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
  local before; before=$(du -sm "$dir" | cut -f1)
  rm -rf "$dir/bin"
  for s in "${trims[@]}"; do
    [ -e "$dir/$s" ] || { log "WARNING: trim path $s not in part $name"; continue; }
    rm -rf "${dir:?}/$s"
  done
  find "$dir" -depth -type d \( -name __pycache__ -o -name tests \) -exec rm -rf {} +
  find "$dir" -type f -name '*.pyc' -delete
  if [ "$STRIP" = 1 ] && command -v strip >/dev/null; then
    # Only the symbol tables (.symtab, debug info) go; the dynamic symbols that loading needs stay.
    find "$dir" -type f \( -name '*.so' -o -name '*.so.*' -o -path '*/ray/core/src/ray/*' \) -size +1M -print0 |
      while IFS= read -r -d '' f; do
        head -c4 "$f" | grep -q 'ELF' || continue
        strip --strip-unneeded "$f" 2>/dev/null || log "WARNING: could not strip ${f#"$dir"/}"
      done
  fi
  log "part $name: ${before} MB unpacked -> $(du -sm "$dir" | cut -f1) MB after trimming"
}

# Every Requires-Dist (markers for CPython $PYVER on linux x86-64, our extras) of every wheel in the parts must be
# in a part or in the device image; prints the specifiers that the device's own versions must meet.
closure_check() {
  "$PY" - "$PYVER" "$BUILD" "$DEVICE_HAS" "$EXTRAS" <<'EOF'
import email.parser, pathlib, sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as canon
pyver, build, device_has, extras_s = sys.argv[1:5]
device = {canon(n) for n in device_has.split()}
extras = {canon(k): set(v.split(",")) for k, v in (e.split(":") for e in extras_s.split())}
env = {"python_version": pyver, "python_full_version": pyver + ".0", "sys_platform": "linux", "os_name": "posix",
       "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
       "platform_python_implementation": "CPython"}
dists = {}
for part in sorted(pathlib.Path(build).glob("part*")):
    for md in part.glob("*.dist-info/METADATA"):
        msg = email.parser.Parser().parsestr(md.read_text(encoding="utf-8"))
        dists[canon(msg["Name"])] = (part.name, msg)
bad, need_on_device = [], {}
for name, (part, msg) in sorted(dists.items()):
    for line in msg.get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is not None:
            if not any(req.marker.evaluate({**env, "extra": x}) for x in (extras.get(name, set()) | {""})):
                continue
        r = canon(req.name)
        if r in dists:
            ver = dists[r][1]["Version"]
            if req.specifier and not req.specifier.contains(ver, prereleases=True):
                bad.append(f"{name} needs {req}, the bundle has {r} {ver}")
        elif r in device:
            need_on_device.setdefault(r, set()).add(f"{req.specifier or 'any'} ({name})")
        else:
            bad.append(f"{name} ({part}) needs {req}: neither in the bundle nor on the device")
print(f"[device_bundle] closure: {len(dists)} distributions in the parts; from the device image:")
for r, why in sorted(need_on_device.items()):
    print(f"[device_bundle]   {r}: {', '.join(sorted(why))}")
for b in bad:
    print(f"[device_bundle] ERROR: {b}")
sys.exit(1 if bad else 0)
EOF
}

# Part manifest: the stamp that decides a rebuild (wheels, trims, options; FORCE=1 after changing the build logic).
manifest() {
  local name=$1; shift
  local -n specs=$1 trims=$2
  local s
  echo "# device bundle part $name for CPython $PYVER manylinux x86-64 (scripts/device_bundle.sh)"
  echo "strip=$STRIP xz=$XZ_LEVEL"
  for s in "${specs[@]}"; do echo "wheel $(basename "$(wheel_of "$s")")"; done
  for s in "${trims[@]}"; do echo "trim $s"; done
  echo "trim **/tests **/__pycache__ **/*.pyc bin"
}

pack() {
  local name=$1 dir=$BUILD/part$1 out=$PARTS/part$1.tar.xz
  cp "$PARTS/part$name.manifest.new" "$dir/DEVICE_PART_$name.txt"
  log "part $name: compressing (xz -$XZ_LEVEL, $XZ_THREADS thread(s)) -> ${out#"$ROOT"/}"
  tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - . |
    xz -"$XZ_LEVEL" -T"$XZ_THREADS" -c > "$out.tmp"
  mv "$out.tmp" "$out"
}

main() {
  log "CPython $PYVER ($TAG), pip from $PY"
  download
  [ "$TAG" = cp312 ] && gl_debs
  mkdir -p "$PARTS"
  local name
  for name in A B; do
    manifest "$name" "PART_$name" "TRIM_$name" > "$PARTS/part$name.manifest.new"
    if [ "$FORCE" != 1 ] && [ -f "$PARTS/part$name.tar.xz" ] && [ -d "$BUILD/part$name" ] &&
       cmp -s <(grep -v '^size' "$PARTS/part$name.manifest" 2>/dev/null) "$PARTS/part$name.manifest.new"; then
      log "part $name: up to date (FORCE=1 rebuilds)"; rm "$PARTS/part$name.manifest.new"; continue
    fi
    build_part "$name" "PART_$name" "TRIM_$name"
  done
  closure_check
  for name in A B; do
    [ -f "$PARTS/part$name.manifest.new" ] || continue
    pack "$name"
    { cat "$PARTS/part$name.manifest.new"; echo "size_unpacked_mb $(du -sm "$BUILD/part$name" | cut -f1)";
      echo "size_bytes $(stat -c%s "$PARTS/part$name.tar.xz")"; } > "$PARTS/part$name.manifest"
    rm "$PARTS/part$name.manifest.new"
  done
  local fail=0 f b
  for name in A B; do
    f=$PARTS/part$name.tar.xz; b=$(stat -c%s "$f")
    printf '[device_bundle] %s: %s bytes = %s MiB (%s MB unpacked)\n' "${f#"$ROOT"/}" "$b" \
      "$(awk -v b="$b" 'BEGIN{printf "%.2f", b/1048576}')" "$(du -sm "$BUILD/part$name" | cut -f1)" >&2
    if [ "$b" -gt $((LIMIT_MIB * 1048576)) ]; then log "ERROR: part $name is over $LIMIT_MIB MiB"; fail=1; fi
  done
  [ -d "$ROOT/.gl" ] && log ".gl: $(du -sk "$ROOT/.gl" | cut -f1) KiB ($(ls "$ROOT/.gl" | grep -c '\.deb$') debs)"
  return $fail
}

main "$@"
