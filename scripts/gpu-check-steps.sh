# The steps of scripts/gpu-check (sourced by it, and by each step's own shell). Each prints its
# log and ends with a one-line verdict: exit 0 pass, 77 skip (no GPU: the CPU half ran, the
# line says what the GPU half needs), anything else fail. Uses: $here $out $prefix $build $work
# $jobs $python $logs, and $cohort once built. Runs go to $work/runs/NAME (metrics.jsonl, NAME.log).
#
# Bounds on loss curves are relative differences, |a - b| / |b|, step by step over the first
# steps of runs that start from the same weights (the model is built on the CPU from train.seed,
# then moved) and read the same batches; each check's comment says why its bound is what it is.

have_gpu() { nvidia-smi -L >/dev/null 2>&1; }
multiarch=x86_64-linux-gnu
runs=$work/runs
export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}  # cuBLAS's reproducible reductions
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
mkdir -p "$runs"

# The Python helpers the checks share (metrics.jsonl readers).
pylib=$work/gpu_check_lib.py
cat >"$pylib" <<'PY'
import json, os
RUNS = os.path.join(os.environ["work"], "runs")
def records(run):
    return [json.loads(line) for line in open(f"{RUNS}/{run}/metrics.jsonl")]
def curve(run):
    return {int(r["step"]): r["loss"] for r in records(run) if r.get("event") == "step"}
def summaries(run):
    return [r for r in records(run) if r.get("event") == "summary"]
def rel(a, b, steps):
    return max(abs(a[s] - b[s]) / max(abs(b[s]), 1e-12) for s in steps)
def sums(run, step):
    m = json.load(open(f"{RUNS}/{run}/checkpoints/step-{step:08d}/manifest.json"))
    return {t["name"]: [s["checksum"] for s in t["slices"]] for t in m["tensors"]}
def trained(c):
    s = sorted(c)
    return sum(c[k] for k in s[-5:]) < sum(c[k] for k in s[:5])
PY
py() { PYTHONPATH=$work "$python" - "$@"; }

# train_run NAME ARGS...: `cohort train` into runs/NAME, its output in runs/NAME.log; its exit status.
train_run() {
  local name=$1
  shift
  rm -rf "${runs:?}/$name"
  "$cohort" train --set train.run_dir="$runs/$name" --set train.log_every=0 \
    --set monitor.console=lines "$@" >"$runs/$name.log" 2>&1 ||
    { local rc=$?; echo "cohort train $name: exit $rc"; tail -n 15 "$runs/$name.log"; return $rc; }
}

# The data sets, made once per machine (cheap).
datasets() {
  [ -f "$work/set.h5" ] || "$cohort" data make-synthetic --kind classification --samples 4096 \
    --features 32 --classes 10 --seed 4 --out "$work/set.h5" >/dev/null || return 1
  [ -f "$work/img.h5" ] || "$cohort" data make-synthetic --kind images --samples 2048 --seed 2 \
    --out "$work/img.h5" >/dev/null || return 1
  [ -f "$work/tok.h5" ] || "$cohort" data make-synthetic --kind tokens --tokens 400000 \
    --vocab 256 --seq-len 64 --seed 3 --out "$work/tok.h5" >/dev/null || return 1
}
# The three models at test sizes, 20 steps (train.epochs high: max_steps ends them). Their losses
# stay of order 1 over the first 10 steps (the MLP's 2.36 -> 1.40, the CNN's 2.23 -> 1.96, the
# GPT's 5.56 -> 5.42 on the CPU), so relative differences are not those of a loss near 0.
common=(--set train.seed=11 --set train.max_steps=20 --set train.epochs=1000
        --set monitor.summary_every=10)
MLP=(--set data.path="$work/set.h5" --set "model.hidden=512,512" --set optim.lr=0.01
     --set optim.momentum=0.9 --set data.batch_size=64)
CNN=(--set data.path="$work/img.h5" --set model.name=cnn --set model.width=16 --set model.blocks=1
     --set optim.lr=0.05 --set data.batch_size=64)
GPT=(--set data.path="$work/tok.h5" --set model.name=gpt --set model.width=128 --set model.heads=4
     --set model.blocks=2 --set model.context=64 --set optim.name=adamw --set optim.lr=3e-3
     --set data.batch_size=16)
ON_GPU=(--set parallel.backend=nccl)  # alone: the model goes to the rank's GPU

facts() {
  echo "host: $(uname -srm), $(nproc) cores"
  echo "C library: $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -1)"
  echo "compiler: $(${CXX:-c++} --version 2>&1 | head -1)"
  echo "cmake: $(cmake --version 2>&1 | head -1); ninja: $(ninja --version 2>&1 || echo none);" \
       "ccache: $(command -v ccache || echo none)"
  echo "nvcc: $(command -v nvcc || echo none) $(nvcc --version 2>&1 | tail -1)"
  nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
  "$python" - <<'PY' 2>&1 || true
import torch, torch.utils
print("python torch", torch.__version__, "cuda", torch.version.cuda, "cmake", torch.utils.cmake_prefix_path)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, "capability", f"{p.major}.{p.minor}", "SMs", p.multi_processor_count)
PY
  echo "nccl: $(nccl_root || echo 'no nccl.h in the nvidia wheels')"
  echo "$(getconf GNU_LIBC_VERSION 2>/dev/null), $(nproc) cores, $(command -v nvcc >/dev/null && echo nvcc || echo 'no nvcc')"
}

# The NCCL of the nvidia wheels (nvidia-nccl-cu12/cu13: nvidia/nccl/ or nvidia/cu13/), the folder
# holding include/nccl.h and lib/libnccl.so*.
nccl_root() {
  "$python" - <<'PY' 2>/dev/null
import glob, os, sys
try:
    import nvidia
except ImportError:
    sys.exit(1)
for root in list(nvidia.__path__):
    for header in sorted(glob.glob(os.path.join(root, "**", "include", "nccl.h"), recursive=True)):
        top = os.path.dirname(os.path.dirname(header))
        if glob.glob(os.path.join(top, "lib", "libnccl.so*")):
            print(top)
            sys.exit(0)
sys.exit(1)
PY
}

# Unpacks every carried .deb into $prefix with python3 alone (ar archive, then data.tar.*), and
# checks the C and C++ runtime versions the unpacked ELF files need against the machine's.
unpack() {
  ls "$here"/gpu-kit/debs/*.deb >/dev/null 2>&1 ||
    { echo "no gpu-kit/debs/*.deb: run scripts/gpu-kit where apt works, and carry gpu-kit"; return 1; }
  rm -rf "$prefix" && mkdir -p "$prefix"
  "$python" - "$prefix" "$here"/gpu-kit/debs/*.deb <<'PY' || return 1
import io, sys, tarfile
prefix, debs = sys.argv[1], sys.argv[2:]
for deb in debs:
    data = open(deb, "rb").read()
    assert data[:8] == b"!<arch>\n", f"{deb}: not an ar archive"
    pos = 8
    while pos < len(data):
        name = data[pos:pos + 16].decode().strip().rstrip("/")
        size = int(data[pos + 48:pos + 58].decode().strip())
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
                kw = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
                tar.extractall(prefix, **kw)
print(f"unpacked {len(debs)} packages into {prefix}")
PY
  # What update-alternatives would have linked on Debian.
  local bin=$prefix/usr/bin lib=$prefix/usr/lib/$multiarch
  for tool in mpicc mpicxx mpirun mpiexec orterun; do
    [ -e "$bin/$tool.openmpi" ] && ln -sf "$tool.openmpi" "$bin/$tool"
  done
  [ -e "$bin/orterun" ] && [ ! -e "$bin/mpirun" ] && ln -sf orterun "$bin/mpirun"
  ln -sf openmpi/lib/libmpi.so "$lib/libmpi.so"
  # A library link that leads nowhere makes the build take a static archive or the machine's own
  # copy instead (the kit once lacked libxxhash0, so libxxhash.a, without its dispatch
  # functions, failed the link at the end of the build).
  local dangling
  dangling=$(find "$prefix" -xtype l \( -name '*.so' -o -name '*.so.*' \) | head -5)
  [ -z "$dangling" ] ||
    { echo "library links of the kit lead outside it (run scripts/gpu-kit again): $dangling"; return 1; }
  check_runtime_versions "$lib"
}

# The newest versioned C library and libstdc++ symbols the unpacked libraries ask for, against
# what this machine's C library and libstdc++ define (python3 reads the ELF version sections).
check_runtime_versions() {
  local libstdcxx
  libstdcxx=$(${CXX:-c++} -print-file-name=libstdc++.so.6 2>/dev/null)
  "$python" - "$1" "$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)" "$libstdcxx" <<'PY'
import os, re, sys
root, libc, libstdcxx = sys.argv[1], sys.argv[2], sys.argv[3]
def key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))
need = {"GLIBC": "0", "GLIBCXX": "0"}
where = {}
for folder, _, files in os.walk(root):
    for f in files:
        path = os.path.join(folder, f)
        if os.path.islink(path) or ".so" not in f:
            continue
        blob = open(path, "rb").read()
        if blob[:4] != b"\x7fELF":
            continue
        for kind, v in re.findall(rb"\b(GLIBC|GLIBCXX)_(\d+\.\d+(?:\.\d+)?)\b", blob):
            kind, v = kind.decode(), v.decode()
            if key(v) > key(need[kind]):
                need[kind], where[kind] = v, os.path.relpath(path, root)
have_cxx = "0"
if os.path.exists(libstdcxx):
    for v in re.findall(rb"GLIBCXX_(\d+\.\d+(?:\.\d+)?)", open(libstdcxx, "rb").read()):
        have_cxx = max(have_cxx, v.decode(), key=key)
print(f"carried libraries need GLIBC_{need['GLIBC']} ({where.get('GLIBC')}), "
      f"GLIBCXX_{need['GLIBCXX']} ({where.get('GLIBCXX')})")
print(f"this machine has glibc {libc}, libstdc++ up to GLIBCXX_{have_cxx} ({libstdcxx})")
ok = key(libc) >= key(need["GLIBC"]) and key(have_cxx) >= key(need["GLIBCXX"])
print("the carried libraries fit this machine" if ok else
      "the carried libraries need a newer C or C++ runtime than this machine has")
sys.exit(0 if ok else 1)
PY
}

# Open MPI, PMIx and HDF5 were built for /usr: tell them where they are now.
kit_environment() {
  local lib=$prefix/usr/lib/$multiarch
  export OPAL_PREFIX=$prefix/usr
  export OPAL_LIBDIR=$lib/openmpi/lib OPAL_SYSCONFDIR=$prefix/etc/openmpi
  export OPAL_DATADIR=$prefix/usr/share/openmpi OPAL_PKGDATADIR=$prefix/usr/share/openmpi
  export PMIX_INSTALL_PREFIX=$prefix/usr
  export PMIX_MCA_mca_base_component_path=$lib/pmix2/lib/pmix
  export OMPI_MCA_mca_base_component_path=$lib/openmpi/lib/openmpi3
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_ess_singleton_isolated=1
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # the machine runs us as root
  # Ranks on this node only: Open MPI 4 still wants a remote-start agent on the PATH (the kit
  # carries no ssh) and refuses even a local start without one.
  export OMPI_MCA_plm_rsh_agent=false
  # Components for fabrics this machine lacks (psm, ofi...) fail to load: said on every start.
  export OMPI_MCA_mca_base_component_show_load_errors=0
  export LD_LIBRARY_PATH=$lib:$lib/openmpi/lib:$lib/hdf5/openmpi:$lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$prefix/usr/bin:$PATH
  export HWLOC_PLUGINS_PATH=$lib/hwloc
  # The .pc files say /usr: the sysroot puts the prefix in front of their paths.
  export PKG_CONFIG_PATH=$lib/pkgconfig:$prefix/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$prefix
  export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1  # /usr is not /usr here
}

configure() {
  local torch_prefix=${TORCH_CMAKE_PREFIX:-}
  [ -n "$torch_prefix" ] || torch_prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  [ -d "$torch_prefix" ] || { echo "no LibTorch CMake files at '$torch_prefix'"; return 1; }
  local lib=$prefix/usr/lib/$multiarch nccl=() generator=() launcher=() root
  if have_gpu; then
    if root=$(nccl_root); then
      nccl=(-DCOHORT_WITH_NCCL=ON -DNccl_INCLUDE_DIR="$root/include"
            -DNccl_LIBRARY="$(ls "$root"/lib/libnccl.so* | head -1)")
    else
      nccl=(-DCOHORT_WITH_NCCL=ON)  # CUDA's own tree (cmake/FindNccl.cmake)
    fi
  fi
  command -v ninja >/dev/null && generator=(-G Ninja)
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Protobuf is found before LibTorch by cmake/CohortDependencies.cmake itself (a wheel's LibTorch
  # otherwise leaves an empty stand-in protobuf::libprotobuf target behind).
  # The kit's multiarch headers (jconfig.h, which jpeglib.h includes, and others) are where a
  # Debian compiler looks by default (/usr/include/<multiarch>); this compiler does not know the
  # kit, so they are named for every file.
  # CMAKE_POLICY_VERSION_MINIMUM: CMake 4 (a Python wheel's) refuses any package file that asks
  # for policies older than 3.5 unless told; CMake 3 ignores it.
  cmake -S "$here" -B "$build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr;$lib/cmake" \
    -DCMAKE_FIND_ROOT_PATH="$prefix" \
    -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES="$prefix/usr/include/$multiarch" \
    -DCMAKE_C_STANDARD_INCLUDE_DIRECTORIES="$prefix/usr/include/$multiarch" \
    -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_HEADER_DIR="$lib/openmpi/include" \
    -DMPI_C_LIB_NAMES=mpi -DMPI_mpi_LIBRARY="$lib/openmpi/lib/libmpi.so" \
    -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun" \
    -DHDF5_ROOT="$lib/hdf5/openmpi" -DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON \
    -DHDF5_C_INCLUDE_DIR="$prefix/usr/include/hdf5/openmpi" \
    -DHDF5_C_LIBRARY_hdf5="$lib/libhdf5_openmpi.so" \
    -DBoost_ROOT="$prefix/usr" -DBoost_NO_SYSTEM_PATHS=ON \
    -DSlurm_INCLUDE_DIR="$prefix/usr/include" -DSlurm_LIBRARY="$lib/libslurm.so" \
    -DZLIB_ROOT="$prefix/usr" -DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf" \
    "${nccl[@]}" || return 1
  grep -E "Cohort: NCCL|CMAKE_CXX_COMPILER:|Torch_DIR:" "$build/CMakeCache.txt"
  kit_resolved
}

# Every dependency configure resolved, and whether it lies in the kit ($prefix): one found on the
# machine instead could differ in version from what the kit was checked for. The C library's
# own (libm, libdl, librt, libpthread) are the toolchain's. GPU_CHECK_KIT_ONLY=1 (the rehearsal,
# whose stand-in LibTorch brings some of these into /usr) makes one outside the kit a failure.
kit_resolved() {
  "$python" - "$build/CMakeCache.txt" "$prefix" "${GPU_CHECK_KIT_ONLY:-0}" <<'PY'
import re, sys
cache, prefix, strict = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
keys = re.compile(r"^(Boost_INCLUDE_DIR|Boost_\w+_LIBRARY_RELEASE|HDF5_C_LIBRARY_\w+|HDF5_C_INCLUDE_DIR"
                  r"|JPEG_\w+|MPI_mpi_LIBRARY|MPI_C_HEADER_DIR|PNG_\w+|Protobuf_INCLUDE_DIR"
                  r"|Protobuf_LIBRARY_RELEASE|Protobuf_PROTOC_EXECUTABLE|Slurm_\w+|ZLIB_\w+|civetweb_DIR"
                  r"|nlohmann_json_DIR|prometheus-cpp_DIR|pkgcfg_lib_\w+):(?:FILEPATH|PATH|STRING)=(.+)$")
libc = re.compile(r"/lib(m|dl|rt|pthread)\.(so|a)$")
inside, outside = 0, []
for line in open(cache):
    m = keys.match(line.strip())
    if not m or m.group(2).endswith("-NOTFOUND") or libc.search(m.group(2)):
        continue
    if m.group(2).startswith(prefix + "/"):
        inside += 1
    else:
        outside.append(f"{m.group(1)}={m.group(2)}")
for o in outside:
    print("outside the kit:", o)
verdict = f"{inside} dependency paths resolved inside the kit ({prefix}), {len(outside)} outside"
print(verdict + (": " + ", ".join(o.split("=")[0] for o in outside) if outside else ""))
sys.exit(1 if strict and outside else 0)
PY
}

# Release, the targets the checks run (cohort brings cohort-torch and cohort-exporter): no
# header-check TUs, no man pages, no benchmarks' tools: 217 translation units.
build_cohort() {
  local t0=$SECONDS
  cmake --build "$build" -j "$jobs" --target cohort_cli cohort_unit_tests cohort_mpi_tests ||
    return 1
  echo "built cohort, cohort_unit_tests, cohort_mpi_tests in $build: $((SECONDS - t0)) s on $jobs jobs"
}

# The rank's GPU, chosen from the launcher's variables (env::bind_gpu, train::choose_rank_device).
# The rules are pure functions with their own unit tests, run here on this machine's build. Then
# what a rank sees: `cohort env --json` as Slurm binds one GPU of four to a task (the task sees
# only its own, by UUID: ordinal 0) and with SLURM_STEP_GPUS=3 alone (a global id, never an
# ordinal); training under the first with `parallel.backend=nccl` alone (the model on that GPU:
# NVML, opened by UUID, reports it); and the refusals, each one line with exit 2: no GPU visible
# (CUDA_VISIBLE_DEVICES=''), and two ranks given one GPU (NCCL takes one rank per GPU). One GPU
# can only show ordinal 0: a binding that picks another device needs a machine with several.
check_device() {
  datasets || return 1
  "$build/tests/unit/cohort_unit_tests" --run_test=env_gpu_binding,train_rank_device \
    --log_level=test_suite --color_output=no || return 1
  local uuid fake=""
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
  [ -n "$uuid" ] || { uuid=GPU-8f3a2c1e-0000-4000-8000-000000000001; fake=" (a made-up UUID)"; }
  env CUDA_VISIBLE_DEVICES="$uuid" SLURM_STEP_GPUS=5 SLURM_GPUS_ON_NODE=4 "$cohort" env --json \
    >"$work/env-bound.json" || return 1
  env -u CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS=3 SLURM_GPUS_ON_NODE=1 "$cohort" env --json \
    >"$work/env-step.json" || return 1
  py "$work/env-bound.json" "$work/env-step.json" "$uuid" <<'PY' || return 1
import json, sys
bound, step = (json.load(open(p)) for p in sys.argv[1:3])
assert bound["gpus"] == [sys.argv[3]] and bound["cuda_device"] == 0 and not bound["gpu_shared"], bound
assert step["gpus"] == ["3"] and step["cuda_device"] == 0 and not step["gpu_shared"], step
print("cohort env --json: one GPU of four bound by UUID -> cuda_device 0, not shared; "
      "SLURM_STEP_GPUS=3 -> cuda_device 0 (an ordinal, not the global id)")
PY
  # The refusals: exit 2 and one line naming the cause, on every machine (here without a GPU
  # or without NCCL the cause is that).
  local rc line
  CUDA_VISIBLE_DEVICES='' train_run device-none "${MLP[@]}" "${common[@]}" "${ON_GPU[@]}"
  rc=$?
  line=$(grep -m1 -E "parallel.backend = nccl|not compiled" "$runs/device-none.log")
  echo "no GPU visible: exit $rc: $line"
  if [ "$rc" != 2 ] || [ -z "$line" ]; then echo "no GPU visible: not refused (exit 2, one line)"; return 1; fi
  rm -rf "$runs/device-two"
  mpirun -np 2 --bind-to none "$cohort" train "${MLP[@]}" "${common[@]}" "${ON_GPU[@]}" \
    --set train.run_dir="$runs/device-two" >"$runs/device-two.log" 2>&1
  rc=$?
  # With a GPU the cause is the sharing; without one, what is missing (NCCL, or a CUDA device).
  line=$(grep -m1 -E "$(have_gpu && echo share || echo 'share|not compiled|parallel.backend = nccl')" \
    "$runs/device-two.log")
  echo "two ranks, one GPU: exit $rc: $line"
  if [ "$rc" != 2 ] || [ -z "$line" ]; then echo "two ranks on one GPU: not refused (exit 2)"; return 1; fi
  if ! have_gpu; then
    echo "no GPU: CPU half passed (binding rules, cohort env under launcher variables$fake, both refusals); training on the bound GPU needs one"
    return 77
  fi
  CUDA_VISIBLE_DEVICES="$uuid" SLURM_STEP_GPUS=5 SLURM_GPUS_ON_NODE=4 \
    train_run device-bound "${MLP[@]}" "${common[@]}" "${ON_GPU[@]}" || return 1
  py <<'PY'
from gpu_check_lib import summaries
s = summaries("device-bound")
assert s and s[-1]["gpu"] and s[-1]["fields"]["gpu_memory_bytes"]["mean"] > 0, "NVML saw no GPU in use"
print(f"trained on the bound GPU (parallel.backend=nccl alone): NVML by UUID reports "
      f"{s[-1]['fields']['gpu_memory_bytes']['mean'] / 2**20:.0f} MiB in use")
PY
}

# tests/mpi/comm/test_nccl.cpp (its header says what each case checks), one rank: NCCL takes one
# rank per GPU, and the machine has one.
check_nccl() {
  "$build/tests/mpi/cohort_mpi_tests" --run_test=comm_nccl --log_level=message \
    --color_output=no 2>&1 | tee "$work/nccl-test.log"
  local rc=${PIPESTATUS[0]}
  if ! have_gpu; then
    # The NCCL cases skip, and the program says so with exit 79 (tests/test_skip.hpp).
    [ "$rc" = 79 ] || { echo "no GPU: expected the refusals to pass and the rest to skip (exit 79), got exit $rc"; return 1; }
    echo "no GPU: the refusals passed; skipped: $(grep -m1 -o 'SKIPPED.*' "$work/nccl-test.log")"
    return 77
  fi
  [ "$rc" = 0 ] || { echo "exit $rc: $(grep -m1 -o 'SKIPPED.*' "$work/nccl-test.log")"; return 1; }
  if grep -q SKIPPED "$work/nccl-test.log"; then
    echo "a GPU is here but NCCL cases were skipped: $(grep -m1 -o 'SKIPPED.*' "$work/nccl-test.log")"
    return 1
  fi
  echo "NCCL on cuda:0, one rank: $(grep -c -E '^(NCCL|p2p|keep-alive|rank device)' "$work/nccl-test.log") case groups passed (collectives = MPI's on the CPU, p2p, keep-alive, rank device)"
}

# The MLP, the CNN and the GPT, fp32 and bf16, 20 steps on the CPU and on the GPU (parallel.backend
# = nccl alone), from the same weights and batches; the first 10 steps' losses compared. Bounds:
#  - MLP, GPT fp32: 1e-4. Both sides compute in IEEE float32 (LibTorch's default keeps TF32 off
#    for matrix products); only the summation order differs (cuBLAS against the CPU's BLAS,
#    reductions), about 1e-7 relative per operation, which ten SGD or AdamW steps carry to about
#    1e-6: a hundredfold margin.
#  - CNN fp32: 2e-3. cuDNN runs float32 convolutions in TF32 by default (LibTorch's
#    allowTF32CuDNN: 10-bit mantissa, 2^-11 relative per input, 8 times finer than bf16's 2^-8):
#    expect an eighth of what bf16 does below, about 2e-5.
#  - bf16: 1e-2. Autocast rounds the inputs of matrix products and convolutions to bf16. On the
#    CPU, bf16 moves these runs' first 10 losses from fp32's by at most 3.8e-4 (MLP), 1.6e-4
#    (CNN), 1.3e-4 (GPT) (Debian 12's LibTorch, 2026-12-06); the GPU's run differs from the CPU's
#    by both sides' roundings (and CPU and CUDA autocast do not cast quite the same operations):
#    1e-2 leaves a margin of ten or more.
# Guards: every run's loss falls (a run that does not train passes any comparison), and the GPU
# run's summary says the GPU was in use (NVML, opened only for a model on CUDA).
check_train() {
  datasets || return 1
  local model precision args
  for model in MLP CNN GPT; do
    case $model in MLP) args=("${MLP[@]}") ;; CNN) args=("${CNN[@]}") ;; GPT) args=("${GPT[@]}") ;; esac
    for precision in fp32 bf16; do
      train_run "cpu-$model-$precision" "${args[@]}" "${common[@]}" \
        --set train.precision=$precision || return 1
      have_gpu || continue
      train_run "gpu-$model-$precision" "${args[@]}" "${common[@]}" "${ON_GPU[@]}" \
        --set train.precision=$precision || return 1
    done
  done
  py "$(have_gpu && echo gpu || echo cpu)" <<'PY'
import sys
from gpu_check_lib import curve, rel, summaries, trained
gpu = sys.argv[1] == "gpu"
bounds = {("MLP", "fp32"): 1e-4, ("GPT", "fp32"): 1e-4, ("CNN", "fp32"): 2e-3,
          ("MLP", "bf16"): 1e-2, ("CNN", "bf16"): 1e-2, ("GPT", "bf16"): 1e-2}
failed, parts = [], []
for (model, precision), bound in bounds.items():
    cpu = curve(f"cpu-{model}-{precision}")
    if len(cpu) != 20 or not trained(cpu):
        failed.append(f"{model} {precision} on the CPU did not train 20 steps")
        continue
    if not gpu:
        parts.append(f"{model} {precision} {cpu[1]:.3f}->{cpu[20]:.3f}")
        continue
    dev = curve(f"gpu-{model}-{precision}")
    s = summaries(f"gpu-{model}-{precision}")
    if len(dev) != 20 or not trained(dev):
        failed.append(f"{model} {precision} on the GPU did not train 20 steps")
    elif not (s and s[-1]["gpu"]):
        failed.append(f"{model} {precision}: the summary says no GPU was in use")
    d = rel(dev, cpu, range(1, 11)) if len(dev) == 20 else float("inf")
    parts.append(f"{model} {precision} {d:.1e} (<= {bound:.0e})")
    if d > bound:
        failed.append(f"{model} {precision}: GPU against CPU {d:.2e} > {bound:.0e}")
for f in failed:
    print("FAIL:", f)
if failed:
    print("; ".join(failed))
    sys.exit(1)
if not gpu:
    print("no GPU: CPU half trained (" + ", ".join(parts) + "); the GPU runs need one")
    sys.exit(77)
print("GPU against CPU, first 10 steps, max relative loss difference: " + ", ".join(parts))
PY
}

# train_more NAME ARGS...: train_run without starting over (a resume); output in runs/NAME.2.log.
train_more() {
  local name=$1
  shift
  "$cohort" train --set train.run_dir="$runs/$name" --set train.log_every=0 \
    --set monitor.console=lines "$@" >"$runs/$name.2.log" 2>&1 ||
    { local rc=$?; echo "cohort train $name (again): exit $rc"; tail -n 15 "$runs/$name.2.log"; return $rc; }
}
where() { if have_gpu; then echo "${ON_GPU[@]}"; fi; }

# A GPT with dropout 0.1 on the GPU (its masks come from the GPU's generator), checkpointed at
# step 10, stopped, resumed to 20: bit-identical to 20 steps straight (every tensor's checksum in
# the step-20 manifests, every loss). A resume that restored the weights but not the GPU's
# generator would draw other masks from step 11 and differ there.
check_resume() {
  datasets || return 1
  local dev ck=(--set checkpoint.every_steps=10 --set checkpoint.keep_last=0 --set model.dropout=0.1)
  read -r -a dev <<<"$(where)"
  train_run resume-straight "${GPT[@]}" "${common[@]}" "${ck[@]}" "${dev[@]}" || return 1
  train_run resume-split "${GPT[@]}" "${common[@]}" "${ck[@]}" "${dev[@]}" \
    --set train.max_steps=10 || return 1
  train_more resume-split "${GPT[@]}" "${common[@]}" "${ck[@]}" "${dev[@]}" || return 1
  grep -q "resumed from .*step-00000010" "$runs/resume-split.2.log" ||
    { echo "the second run did not resume from step 10"; return 1; }
  py "$(have_gpu && echo GPU || echo CPU)" <<'PY'
import sys
from gpu_check_lib import curve, sums
a, b = sums("resume-straight", 20), sums("resume-split", 20)
assert a == b, "the resumed run's step-20 checkpoint differs from the straight run's: " + \
    ", ".join(k for k in a if a[k] != b.get(k))[:300]
ca, cb = curve("resume-straight"), curve("resume-split")
assert len(ca) == len(cb) == 20 and all(ca[s] == cb[s] for s in ca), \
    [s for s in ca if ca[s] != cb.get(s)]
where = sys.argv[1]
line = f"GPT with dropout 0.1 on the {where}, stopped at 10, resumed to 20: {len(a)} tensors bit-identical, 20 losses identical"
if where == "CPU":
    print("no GPU: CPU half passed (" + line + "); the GPU's generator needs one")
    sys.exit(77)
print(line)
PY
}

# Activation recompute (model.recompute=blocks) on the GPU, the GPT with dropout 0.1, in fp32 and
# in bf16 autocast: the recomputed forward must draw the same dropout masks (the GPU's generator
# restored) under the same autocast state, so the loss curve equals the run without recompute.
# Bound: twice what two identical runs without recompute differ by (the device's own
# run-to-run noise), at least 1e-6; 0 is expected (the kernels are deterministic with
# CUBLAS_WORKSPACE_CONFIG set). Noise above 1e-3 makes the check unable to judge: a failure.
check_recompute() {
  datasets || return 1
  local dev precision run r=(--set model.dropout=0.1)
  read -r -a dev <<<"$(where)"
  for precision in fp32 bf16; do
    for run in none again blocks; do
      train_run "recompute-$run-$precision" "${GPT[@]}" "${common[@]}" "${r[@]}" "${dev[@]}" \
        --set train.precision=$precision \
        --set "model.recompute=$([ $run = blocks ] && echo blocks || echo none)" || return 1
    done
  done
  py "$(have_gpu && echo GPU || echo CPU)" <<'PY'
import sys
from gpu_check_lib import curve, rel, trained
where, parts, failed = sys.argv[1], [], []
for p in ("fp32", "bf16"):
    none, again, blocks = (curve(f"recompute-{r}-{p}") for r in ("none", "again", "blocks"))
    steps = range(1, 21)
    if not (len(none) == len(again) == len(blocks) == 20 and trained(none)):
        failed.append(f"{p}: the runs did not train 20 steps")
        continue
    noise, diff = rel(again, none, steps), rel(blocks, none, steps)
    bound = max(1e-6, 2 * noise)
    parts.append(f"{p} {diff:.1e} (noise {noise:.1e}, bound {bound:.1e})")
    if noise > 1e-3:
        failed.append(f"{p}: two identical runs differ by {noise:.1e}: too noisy to judge")
    elif diff > bound:
        failed.append(f"{p}: recompute moved the loss curve by {diff:.2e} > {bound:.1e}")
if failed:
    print("; ".join(failed))
    sys.exit(1)
line = f"recompute=blocks on the {where}, GPT dropout 0.1, 20 steps against none: " + ", ".join(parts)
if where == "CPU":
    print("no GPU: CPU half passed (" + line + "); the GPU's generator and autocast need one")
    sys.exit(77)
print(line)
PY
}

# The peak dense bf16 rate of one GPU: the published figure for the chips known here (what MFU
# figures are quoted against), else SMs x the maximum SM clock x the dense bf16 FLOP per SM per
# clock of the architecture (Hopper 4096, Ampere 2048); 0 (no MFU) for others.
peak_tflops() {
  local mhz
  mhz=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1 | tr -d ' ')
  "$python" - "$mhz" <<'PY'
import sys, torch
p = torch.cuda.get_device_properties(0)
known = {"H100 80GB HBM3": 989.4, "H100 PCIe": 756.5, "H100 NVL": 835.0, "H200": 989.4,
         "GH200": 989.4, "A100": 312.0}
for name, tflops in known.items():
    if name in p.name:
        print(tflops)
        sys.exit(0)
per_sm = {(9, 0): 4096, (8, 0): 2048}.get((p.major, p.minor), 0)
print(f"{p.multi_processor_count * per_sm * float(sys.argv[1]) * 1e6 / 1e12:.1f}")
PY
}

# The GPT at GPT-2 small's shape (width 768, 12 heads, 12 blocks, context 512, ~85 M parameters
# with a 256-token vocabulary), batch 32, bf16 autocast, 300 steps on the GPU: samples/s,
# tokens/s and MFU from the last summary (Cohort's FLOPs per sample, PaLM's count, against the
# peak above). The compass goal is 40 % MFU on an H100: printed, not failed on. The monitor's
# NVML figures in the same summary are checked against nvidia-smi, sampled every 0.5 s during the
# run: memory in use within [0.5, 1.1] of nvidia-smi's peak, utilisation above 10 %, power within
# [0.5, 2] of nvidia-smi's mean. The windows differ (the summary's 50 steps, nvidia-smi's whole
# run), so the bounds catch a wrong unit or device (x1000, x2^20, another GPU's idle figures),
# not drift.
check_gpt() {
  have_gpu || { echo "no GPU: the bf16 GPT's MFU and the NVML figures need one"; return 77; }
  local peak smi
  peak=$(peak_tflops)
  echo "peak dense bf16: $peak TFLOP/s"
  [ -f "$work/tokens512.h5" ] || "$cohort" data make-synthetic --kind tokens --tokens 8388608 \
    --vocab 256 --seq-len 512 --seed 1 --out "$work/tokens512.h5" >/dev/null || return 1
  nvidia-smi --query-gpu=memory.used,utilization.gpu,power.draw --format=csv,noheader,nounits \
    -lms 500 >"$work/smi.csv" 2>/dev/null &
  smi=$!
  train_run gpt-mfu --set data.path="$work/tokens512.h5" --set data.batch_size=32 \
    --set model.name=gpt --set model.width=768 --set model.heads=12 --set model.blocks=12 \
    --set model.context=512 --set model.dropout=0 --set optim.name=adamw --set optim.lr=3e-4 \
    --set train.precision=bf16 --set train.max_steps=300 --set train.epochs=100 \
    --set monitor.summary_every=50 --set monitor.peak_tflops="$peak" "${ON_GPU[@]}"
  local rc=$?
  kill "$smi" 2>/dev/null
  wait "$smi" 2>/dev/null
  [ "$rc" = 0 ] || return 1
  py "$work/smi.csv" <<'PY'
import sys
from gpu_check_lib import summaries
s = summaries("gpt-mfu")[-1]
f = s["fields"]
rows = [[float(x) for x in line.split(",")] for line in open(sys.argv[1]) if line.count(",") == 2
        and "N/A" not in line]
assert rows, "nvidia-smi gave no samples"
smi_mem = max(r[0] for r in rows) * 2**20
smi_power = sum(r[2] for r in rows) / len(rows)
mem, util, power = (f[k]["mean"] for k in ("gpu_memory_bytes", "gpu_util_percent", "gpu_power_watts"))
print(f"nvidia-smi: {len(rows)} samples, peak memory {smi_mem / 2**30:.1f} GiB, mean power {smi_power:.0f} W")
print(f"GPT 85M bf16: {s['samples_per_s']:.1f} samples/s, {s['tokens_per_s']:.0f} tokens/s, "
      f"{s['model_flops_per_s'] / 1e12:.0f} TFLOP/s")
problems = []
if not s["gpu"]:
    problems.append("the summary says no GPU in use")
if not 0.5 * smi_mem <= mem <= 1.1 * smi_mem:
    problems.append(f"NVML memory {mem / 2**30:.2f} GiB against nvidia-smi's peak {smi_mem / 2**30:.2f} GiB")
if not 10 < util <= 100:
    problems.append(f"NVML utilisation {util:.0f} %")
if not 0.5 * smi_power <= power <= 2 * smi_power:
    problems.append(f"NVML power {power:.0f} W against nvidia-smi's {smi_power:.0f} W")
line = (f"MFU {100 * s['mfu']:.1f} % (compass goal >= 40 %), {s['tokens_per_s']:.0f} tokens/s; "
        f"NVML: {util:.0f} % busy, {mem / 2**30:.1f} GiB, {power:.0f} W, as nvidia-smi")
if problems:
    print("; ".join(problems))
    sys.exit(1)
print(line)
PY
}

# `cohort doctor`'s GPU check (src/ops/doctor.cpp, env::gpu_health: NVML's uncorrected ECC
# errors, pending page retirements, hardware slowdown) on this node: a healthy lent GPU passes.
check_doctor() {
  datasets || return 1
  "$cohort" doctor "${MLP[@]}" --set train.run_dir="$runs/doctor" --json \
    --output "$work/doctor.json" >"$work/doctor.out" 2>&1
  echo "cohort doctor: exit $?"
  cat "$work/doctor.out"
  py "$work/doctor.json" "$(have_gpu && echo gpu || echo cpu)" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
gpu = [c for c in report["nodes"][0]["checks"] if c["name"] == "gpu"][0]
line = f"cohort doctor gpu check: {gpu['status']}: {gpu['detail']}"
if sys.argv[2] == "cpu":
    assert gpu["status"] == "skip", gpu
    print("no GPU: " + line)
    sys.exit(77)
assert gpu["status"] == "pass", line
print(line)
PY
}

# parallel.zero 1, 2 and 3 on the GPU (placed by parallel.devices=cuda:0, the explicit list), the
# MLP, 20 steps: every loss and the step-20 parameters equal zero 0's. One rank: ZeRO keeps no shards at world size 1 (src/ddp: a communicator of one
# rank is "lone": no flat buffers, no gathers), so this checks the settings' path on the device,
# not zero 3's freeing and re-allocating of a unit's storage under the CUDA caching allocator,
# which needs two GPUs or more.
check_zero() {
  datasets || return 1
  local dev z
  read -r -a dev <<<"$(where)"
  # parallel.devices given (the list's path: its one entry must be the rank's own GPU).
  have_gpu && dev+=(--set parallel.devices=cuda:0)
  for z in 0 1 2 3; do
    train_run "zero-$z" "${MLP[@]}" "${common[@]}" "${dev[@]}" --set parallel.zero=$z \
      --set checkpoint.every_steps=20 || return 1
  done
  py "$(have_gpu && echo GPU || echo CPU)" <<'PY'
import sys
from gpu_check_lib import curve, sums
ref, params = curve("zero-0"), sums("zero-0", 20)
for z in (1, 2, 3):
    c = curve(f"zero-{z}")
    assert len(c) == 20 and all(c[s] == ref[s] for s in ref), f"zero {z}: losses differ from zero 0's"
    mine = sums(f"zero-{z}", 20)
    assert all(mine.get(k) == v for k, v in params.items() if k.startswith("model.")), \
        f"zero {z}: step-20 parameters differ from zero 0's"
line = (f"zero 1, 2, 3 on the {sys.argv[1]}: 20 losses and the step-20 parameters equal zero 0's (one rank: no shards, the "
        "in-place free/re-allocate of zero 3 needs two GPUs)")
if sys.argv[1] == "CPU":
    print("no GPU: CPU half passed (" + line + ")")
    sys.exit(77)
print(line)
PY
}

check_pinned() {
  "$build/tests/unit/cohort_unit_tests" --run_test=data_reader --log_level=test_suite --color_output=no || return 1
  have_gpu || { echo "no GPU: batches checked unpinned (the same test asserts pinned with CUDA)"; return 77; }
  echo "data reader: page-locked batches with CUDA present"
}

# `cohort bench allreduce --backend nccl`, one rank, 64 MiB at most: the command's NCCL path (its
# communicator on the rank's GPU) and the algorithm bandwidth of one GPU's in-place all-reduce.
# One rank moves no bus traffic (bus bandwidth = algorithm bandwidth x 2(n-1)/n = 0): a figure of
# the interconnect needs two GPUs or more.
check_bench() {
  "$cohort" bench allreduce --backend nccl --max-bytes 67108864 --seconds 0.2 --json \
    >"$work/bench.json" 2>"$work/bench.err"
  local rc=$?
  cat "$work/bench.json" "$work/bench.err"
  if ! have_gpu; then
    [ "$rc" = 2 ] || { echo "no GPU: expected a refusal (exit 2), got exit $rc"; return 1; }
    local refusal
    refusal=$(grep "^cohort: " "$work/bench.err")
    [ "$(printf '%s\n' "$refusal" | grep -c .)" = 1 ] ||
      { echo "no GPU: the refusal is not one cohort line: $refusal"; return 1; }
    echo "no GPU: refused in one line (exit 2): ${refusal:0:200}"
    return 77
  fi
  [ "$rc" = 0 ] || return 1
  py "$work/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["rows"]
assert rows and all(x["algbw_gbs"] > 0 for x in rows), rows
big = rows[-1]
print(f"cohort bench allreduce on NCCL, {r['ranks']} rank: {len(rows)} sizes, {big['bytes'] >> 20} MiB "
      f"in {big['cohort_ms']:.3f} ms ({big['algbw_gbs']:.0f} GB/s algorithm bandwidth)")
PY
}
