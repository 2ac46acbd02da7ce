# The steps of scripts/gpu-check (sourced by it; each prints its log and ends with a one-line
# verdict, exit 0 pass, 77 skip, anything else fail). Uses: $here $out $prefix $build $work $jobs
# $python, and $cohort once built.

have_gpu() { nvidia-smi -L >/dev/null 2>&1; }
multiarch=x86_64-linux-gnu

facts() {
  echo "host: $(uname -srm)"
  echo "C library: $(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -1)"
  echo "compiler: $(${CXX:-c++} --version 2>&1 | head -1)"
  echo "cmake: $(cmake --version 2>&1 | head -1); ninja: $(ninja --version 2>&1 || echo none)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -1 || echo none)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
  "$python" - <<'PY' 2>&1 || true
import os, torch, torch.utils
print("python torch", torch.__version__, "cuda", torch.version.cuda, "cmake", torch.utils.cmake_prefix_path)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, "capability", f"{p.major}.{p.minor}", "SMs", p.multi_processor_count)
try:
    import nvidia.nccl
    print("nccl", list(nvidia.nccl.__path__)[0])
except ImportError:
    print("nccl: no nvidia.nccl package")
PY
  echo "$(getconf GNU_LIBC_VERSION 2>/dev/null), $(nproc) cores"
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
  local lib=$prefix/usr/lib/$multiarch nccl=() generator=()
  if have_gpu; then
    local nccl_dir
    nccl_dir=$("$python" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
    if [ -n "$nccl_dir" ] && [ -f "$nccl_dir/include/nccl.h" ]; then
      nccl=(-DCOHORT_WITH_NCCL=ON -DNccl_INCLUDE_DIR="$nccl_dir/include"
            -DNccl_LIBRARY="$(ls "$nccl_dir"/lib/libnccl.so* | head -1)")
    else
      nccl=(-DCOHORT_WITH_NCCL=ON)  # CUDA's own tree (cmake/FindNccl.cmake)
    fi
  fi
  command -v ninja >/dev/null && generator=(-G Ninja)
  # CMAKE_POLICY_VERSION_MINIMUM: CMake 4 (a Python wheel's) refuses any package file that asks
  # for policies older than 3.5 unless told; CMake 3 ignores it.
  cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr;$lib/cmake" \
    -DCMAKE_FIND_ROOT_PATH="$prefix" \
    -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_HEADER_DIR="$lib/openmpi/include" \
    -DMPI_C_LIB_NAMES=mpi -DMPI_mpi_LIBRARY="$lib/openmpi/lib/libmpi.so" \
    -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun" \
    -DHDF5_ROOT="$lib/hdf5/openmpi" -DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON \
    -DHDF5_C_INCLUDE_DIR="$prefix/usr/include/hdf5/openmpi" \
    -DHDF5_C_LIBRARY_hdf5="$lib/libhdf5_openmpi.so" \
    -DBoost_ROOT="$prefix/usr" -DBoost_NO_SYSTEM_PATHS=ON \
    -DSlurm_INCLUDE_DIR="$prefix/usr/include" -DSlurm_LIBRARY="$lib/libslurm.so" \
    -DZLIB_ROOT="$prefix/usr" -DPKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf" \
    "${nccl[@]}" &&
    grep -E "Cohort: NCCL|CMAKE_CXX_COMPILER:|Torch_DIR:|MPI_mpi_LIBRARY:|HDF5_C_LIBRARY_hdf5:" \
      "$build/CMakeCache.txt"
}

build_cohort() {
  cmake --build "$build" -j "$jobs" --target cohort_cli cohort_unit_tests cohort_mpi_tests &&
    echo "built cohort, cohort_unit_tests, cohort_mpi_tests in $build"
}

check_env() {
  "$cohort" env >"$out/env.txt" && "$cohort" env --json >"$out/env.json" || return 1
  cat "$out/env.txt"
  "$python" - "$out/env.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
nccl = [b for b in e["backends"] if b["name"] == "nccl"]
line = (f"torch {e['torch']['version']} cuda_available={e['torch']['cuda_available']}, "
        f"nccl {nccl[0]['version'] if nccl and nccl[0]['compiled'] else 'not compiled'}, "
        f"hdf5 {e['hdf5']['version']}, libslurm {e['libslurm']['release']}, "
        f"onednn {e['onednn']['version'] or 'none'}")
print(line)
PY
}

check_nccl() {
  "$build/tests/mpi/cohort_mpi_tests" --run_test=comm_nccl --log_level=message --color_output=no || return 1
  have_gpu || { echo "no GPU: the NCCL all-reduce was skipped (the test says why above)"; return 77; }
  ! grep -q SKIPPED "$out/nccl.log" || { echo "a GPU is here but the NCCL all-reduce was skipped"; return 1; }
  echo "NCCL communicator: all-reduce on cuda:0 checked"
}

check_pinned() {
  "$build/tests/unit/cohort_unit_tests" --run_test=data_reader --log_level=test_suite --color_output=no || return 1
  have_gpu || { echo "no GPU: batches checked unpinned (the same test asserts pinned with CUDA)"; return 77; }
  echo "data reader: page-locked batches with CUDA present"
}

# train_mlp RUN_DIR [--set ...]: the MLP on the synthetic set, one rank, no launcher.
train_mlp() {
  local dir=$1
  shift
  "$cohort" train --set data.path="$work/set.h5" --set data.batch_size=64 \
    --set model.hidden=512,512 --set optim.lr=0.05 --set optim.momentum=0.9 --set train.seed=11 \
    --set train.epochs=2 --set train.log_every=0 --set train.run_dir="$work/$dir" "$@"
}

check_ddp() {
  "$cohort" data make-synthetic --kind classification --samples 4096 --features 256 \
    --classes 10 --seed 4 --out "$work/set.h5" >/dev/null || return 1
  rm -rf "$work"/ddp-*
  train_mlp ddp-cpu || return 1
  have_gpu || { echo "no GPU: the CPU run passed, the cuda:0 run was skipped"; return 77; }
  train_mlp ddp-gpu --set parallel.devices=cuda:0 --set parallel.backend=nccl || return 1
  "$python" - "$work" <<'PY'
import json, sys
def curve(d):
    return [r["loss"] for r in map(json.loads, open(f"{sys.argv[1]}/{d}/metrics.jsonl")) if r["event"] == "step"]
cpu, gpu = curve("ddp-cpu"), curve("ddp-gpu")
assert len(cpu) == len(gpu) > 10, (len(cpu), len(gpu))
rel = [abs(a - b) / abs(b) for a, b in zip(cpu[:10], gpu[:10])]
assert max(rel) < 1e-3 and gpu[-1] < 0.7 * gpu[0], (max(rel), gpu[0], gpu[-1])
print(f"DDP on cuda:0 over NCCL: {len(gpu)} steps, loss {gpu[0]:.4f} -> {gpu[-1]:.4f}; "
      f"against the CPU run: relative difference <= {max(rel):.1e} over the first 10 steps")
PY
}

check_resume() {
  [ -f "$work/set.h5" ] || "$cohort" data make-synthetic --kind classification --samples 4096 \
    --features 256 --classes 10 --seed 4 --out "$work/set.h5" >/dev/null || return 1
  local device=() where=CPU
  if have_gpu; then device=(--set parallel.devices=cuda:0 --set parallel.backend=nccl); where=cuda:0; fi
  export CUBLAS_WORKSPACE_CONFIG=:4096:8  # cuBLAS's deterministic reductions
  rm -rf "$work"/resume-*
  local ck=(--set checkpoint.every_steps=20 --set checkpoint.keep_last=0 --set train.max_steps=40)
  train_mlp resume-a "${device[@]}" "${ck[@]}" || return 1
  train_mlp resume-b "${device[@]}" "${ck[@]}" --set train.max_steps=20 || return 1
  train_mlp resume-b "${device[@]}" "${ck[@]}" >"$out/resume-b2.txt" || return 1
  grep -q "resumed from .*/step-00000020 " "$out/resume-b2.txt" ||
    { echo "the second run did not resume from step 20"; return 1; }
  "$python" - "$work" "$where" <<'PY'
import json, sys
work, where = sys.argv[1:3]
def sums(run):
    m = json.load(open(f"{work}/{run}/checkpoints/step-00000040/manifest.json"))
    return {t["name"]: [s["checksum"] for s in t["slices"]] for t in m["tensors"]}
def curve(run):
    return {r["step"]: r["loss"] for r in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if r["event"] == "step"}
a, b = sums("resume-a"), sums("resume-b")
assert a == b, "the resumed run's checkpoint differs from the straight run's"
ca, cb = curve("resume-a"), curve("resume-b")
assert all(ca[s] == cb[s] for s in cb) and len(cb) == 40, "loss curves differ"
print(f"resume on {where}: {len(a)} tensors bit-identical at step 40, loss curve identical")
PY
}

# The peak dense bf16 rate from nvidia-smi's maximum SM clock: SMs x clock x dense bf16 FLOP per
# SM per clock of the architecture (Hopper 4096, Ampere 2048; others unknown, no MFU).
peak_tflops() {
  local mhz
  mhz=$(nvidia-smi --query-gpu=clocks.max.sm --format=csv,noheader,nounits | head -1 | tr -d ' ')
  "$python" - "$mhz" <<'PY'
import sys, torch
p = torch.cuda.get_device_properties(0)
per_sm = {(9, 0): 4096, (8, 0): 2048}.get((p.major, p.minor), 0)
print(f"{p.multi_processor_count * per_sm * float(sys.argv[1]) * 1e6 / 1e12:.1f}")
PY
}

check_gpt() {
  have_gpu || { echo "no GPU: the bf16 GPT run needs one"; return 77; }
  local peak
  peak=$(peak_tflops)
  echo "peak dense bf16 from nvidia-smi's max SM clock: $peak TFLOP/s"
  "$cohort" data make-synthetic --kind tokens --tokens 8388608 --vocab 256 --seq-len 512 \
    --seed 1 --out "$work/tokens.h5" >/dev/null || return 1
  rm -rf "$work/gpt"
  "$cohort" train --set data.path="$work/tokens.h5" --set data.batch_size=32 --set model.name=gpt \
    --set model.width=768 --set model.heads=12 --set model.blocks=12 --set model.context=512 \
    --set model.dropout=0 --set optim.name=adamw --set optim.lr=3e-4 --set train.precision=bf16 \
    --set train.max_steps=300 --set train.epochs=100 --set train.log_every=50 \
    --set monitor.summary_every=50 --set monitor.peak_tflops="$peak" \
    --set parallel.devices=cuda:0 --set parallel.backend=nccl --set train.run_dir="$work/gpt" ||
    return 1
  "$python" - "$work/gpt/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in rows if r["event"] == "summary"][-1]
f = s["fields"]
assert s["gpu"] and f["gpu_memory_bytes"]["mean"] > 0, "no NVML figures in metrics.jsonl"
print(f"GPT 85M bf16 on the GPU: {s['samples_per_s']:.1f} samples/s, {s['tokens_per_s']:.0f} tokens/s, "
      f"MFU {100 * s['mfu']:.1f}%; NVML: utilisation {f['gpu_util_percent']['mean']:.0f}%, "
      f"memory {f['gpu_memory_bytes']['mean'] / 2**30:.1f} GiB, power {f['gpu_power_watts']['mean']:.0f} W")
PY
}

check_allreduce() {
  have_gpu || { echo "no GPU: the NCCL benchmark needs one"; return 77; }
  "$cohort" bench allreduce --backend nccl --max-bytes 1073741824 --json >"$out/allreduce.json" ||
    return 1
  cat "$out/allreduce.json"
  "$python" - "$out/allreduce.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("cohort bench allreduce on NCCL, one rank:", json.dumps(r)[:250])
PY
}
