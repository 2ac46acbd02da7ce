# Spack recipe for Cohort (a recipe to copy into a Spack repository; it is not run by the tests).
#   spack repo create myrepo && mkdir -p myrepo/packages/cohort && cp package.py myrepo/packages/cohort/
#   spack install cohort+cuda ^openmpi fabrics=ucx
# Cohort's CMake finds its dependencies the same way on Debian (scripts/install-deps) and under
# Spack; `spack load cohort` or the modulefiles Spack generates then put `cohort` on PATH.
from spack.package import *


class Cohort(CMakePackage, CudaPackage):
    """Distributed deep-learning training on Slurm clusters: MPI/NCCL data parallelism, HDF5
    datasets, sharded checkpoints, preemption-aware requeueing, monitoring."""

    homepage = "https://example.org/cohort"
    git = "https://example.org/cohort.git"
    maintainers("cohort-developers")
    license("Apache-2.0")

    version("main", branch="main")

    variant("tests", default=False, description="Build the tests (need a local Slurm and munge)")
    variant(
        "sanitizer",
        default="none",
        values=("none", "address", "undefined", "thread"),
        description="Build with a sanitizer",
    )

    depends_on("cmake@3.22:", type="build")
    depends_on("mpi")
    depends_on("slurm@22.05:")
    depends_on("hdf5@1.10:+mpi~cxx")
    depends_on("py-torch@1.13:")  # LibTorch: Spack's PyTorch installs its C++ library and headers
    depends_on("boost@1.74:+program_options+test")
    depends_on("nlohmann-json")
    depends_on("xxhash")
    depends_on("zlib")
    depends_on("openblas")
    depends_on("nccl", when="+cuda")

    def cmake_args(self):
        args = [
            self.define_from_variant("COHORT_BUILD_TESTS", "tests"),
            self.define("COHORT_WITH_NCCL", "ON" if self.spec.satisfies("+cuda") else "OFF"),
            self.define(
                "CMAKE_PREFIX_PATH",
                join_path(self.spec["py-torch"].package.cmake_prefix_paths[0]),
            ),
        ]
        if not self.spec.satisfies("sanitizer=none"):
            args.append(self.define("COHORT_SANITIZER", self.spec.variants["sanitizer"].value))
        return args
