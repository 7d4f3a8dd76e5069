"""Builds the kcv Python package with the project's CMake (pyproject.toml; docs/python-api.md).

    pip install --no-build-isolation .          # configures and builds build/pip (Release, no tests)
    KCV_CMAKE_BUILD_DIR=build pip install ...   # reuses a configured build tree instead

The package holds kcv/__init__.py (python/kcv), the extension kcv._kcv, and kcv/_data: bin/kcv-worker,
include/{kcv,glr} and share/kcv/adapters, which the package points kcv at (KCV_WORKER,
KCV_INCLUDE_DIR, KCV_ADAPTERS_DIR, unless set) so that an installed kcv needs no source tree.
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("KCV_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build", "pip")
        build = os.path.abspath(build)
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DBUILD_TESTING=OFF", f"-DPython3_EXECUTABLE={sys.executable}"])
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build, "--target", "kcv_python", "kcv-worker", "-j", jobs])
        built = glob.glob(os.path.join(build, "python", "kcv", "_kcv*.so"))
        if not built:
            raise RuntimeError(f"kcv: the CMake build in {build} made no kcv._kcv (are pybind11-dev and python3-dev installed?)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(built[0], target)
        data = os.path.join(os.path.dirname(target), "_data")
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(os.path.join(data, "bin"))
        shutil.copy2(os.path.join(build, "kcv-worker"), os.path.join(data, "bin", "kcv-worker"))
        for d in ("kcv", "glr"):
            shutil.copytree(os.path.join(ROOT, "include", d), os.path.join(data, "include", d))
        shutil.copytree(os.path.join(ROOT, "adapters"), os.path.join(data, "share", "kcv", "adapters"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(
    packages=["kcv"],
    package_dir={"kcv": "python/kcv"},
    ext_modules=[Extension("kcv._kcv", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own scratch (lib.*, bdist.*) beside CMake's trees, not in the source root's build/.
    options={"build": {"build_base": os.path.join("build", "setuptools")}, "egg_info": {"egg_base": os.path.join("build", "setuptools")}},
    zip_safe=False,
)
