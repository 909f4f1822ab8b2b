"""`make gpu-wheels`: what the GPU check (bench/gpu/check.py) carries to a CUDA machine that has its own Python,
torch and transformers but no network, in a git-ignored folder (`gpu-kit/`) that travels with the working tree.

The machine (see docs/testing.md) has a CUDA build of torch and transformers 5.x; the studio runs on that
transformers (its tests pass on 5.17 here), so the pinned 4.57.6 (a 12 MB wheel) stays behind, and with it the
adapters library, which pins 4.57.6 and cannot install beside 5.x. What is carried:
- `wheels/`: the packages the check needs that the machine lacks, at the versions `requirements.txt` pins or
  resolves to: SetFit and what it imports (datasets, evaluate, dill, multiprocess), for Python 3.12 there and
  for this interpreter's version (the CPU dry run installs from the same folder);
- `minilm/`: the bundled MiniLM's files, its weights stored as fp16 (43 MiB instead of 87; the check writes them
  back as fp32, and compares the GPU against the CPU on the same weights);
- `data/l2r.tar.xz`: the L2R corpus (12 MB of text, a few compressed), and `data/ganbert-trec.tar.xz`, the GAN-BERT
  authors' TREC split (the check's first study, bench/studies/trec.py);
- `manifest.json`: what is in it, and its size beside the tracked tree's, which together must stay under the
  device's 64 MiB (printed, and exit 1 when over).

Run: .venv/bin/python -m bench.gpu.kit [--kit gpu-kit]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "gpu-kit"
L2R = REPO.parent / "shared" / "data" / "l2r"
TREC = REPO.parent / "shared" / "data" / "ganbert-trec"  # the GAN-BERT authors' split: the check's first study
LIMIT_MIB = 64  # the device's limit on the working tree that travels: tracked files plus what is carried
# what the check imports that the GPU machine's image lacks (its package list: docs/testing.md)
CARRIED = ("setfit", "datasets", "evaluate", "dill", "multiprocess")
WEIGHTS = "model.safetensors"
HALF_WEIGHTS = "model.fp16.safetensors"


def download_wheels(folder: Path, python_versions: list[str]) -> list[str]:
    """The carried packages at the versions installed here, one wheel per Python version where a package has
    version-specific ones (multiprocess); pure wheels come once."""
    folder.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={metadata.version(name)}" for name in CARRIED]
    for version in python_versions:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--python-version", version, "--implementation", "cp", "--platform", "manylinux2014_x86_64",
                        "--platform", "manylinux_2_17_x86_64", "--platform", "any", "-d", str(folder), *pins],
                       check=True)
    return pins


def halve_minilm(source: Path, folder: Path) -> None:
    """MiniLM's small files as they are, and its fp32 weights as fp16: the largest part of the kit, halved. fp16
    keeps three more mantissa bits than bf16, and MiniLM's weights are well inside its range."""
    import torch
    from safetensors.torch import load_file, save_file

    folder.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name == WEIGHTS:
            continue
        (shutil.copytree if item.is_dir() else shutil.copy2)(item, folder / item.name)
    tensors = load_file(str(source / WEIGHTS))
    half = {k: v.to(torch.float16) if v.dtype == torch.float32 else v for k, v in tensors.items()}
    save_file(half, str(folder / HALF_WEIGHTS), metadata={"format": "pt", "stored_from": "float32"})


def pack_corpus(source: Path, archive: Path) -> None:
    """A corpus folder's files under its own name (`l2r/`, `ganbert-trec/`)."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        for item in sorted(source.iterdir()):
            tar.add(item, arcname=f"{source.name}/{item.name}")


def tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def tracked_bytes() -> int:
    """The tracked tree's size, as the device counts what travels (untracked files that git does not ignore
    travel too, and are counted)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.split(b"\0")
    return sum((REPO / name.decode()).stat().st_size for name in listed if name and (REPO / name.decode()).is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kit", type=Path, default=KIT)
    args = parser.parse_args()
    for corpus in (L2R, TREC):
        if not (corpus / "train.jsonl").exists():
            print(f"the corpus {corpus.name} is not at {corpus}: the kit carries it to the GPU machine",
                  file=sys.stderr)
            return 2
    from core.backbone.packaged import MINILM, package_file

    if args.kit.exists():
        shutil.rmtree(args.kit)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    pins = download_wheels(args.kit / "wheels", sorted({"3.12", here}))
    halve_minilm(package_file(MINILM), args.kit / "minilm")
    for corpus in (L2R, TREC):
        pack_corpus(corpus, args.kit / "data" / f"{corpus.name}.tar.xz")
    kit, tree = tree_bytes(args.kit), tracked_bytes()
    manifest = {"wheels": pins, "minilm": HALF_WEIGHTS, "corpora": ["data/l2r.tar.xz", "data/ganbert-trec.tar.xz"],
                "kit_mib": round(kit / 2**20, 1),
                "tree_mib": round(tree / 2**20, 1), "total_mib": round((kit + tree) / 2**20, 1),
                "limit_mib": LIMIT_MIB}
    (args.kit / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    for part in ("wheels", "minilm", "data"):
        print(f"{part:<8} {tree_bytes(args.kit / part) / 2**20:6.1f} MiB")
    print(f"kit {manifest['kit_mib']} MiB + tracked tree {manifest['tree_mib']} MiB = {manifest['total_mib']} MiB "
          f"(the device takes at most {LIMIT_MIB} MiB)")
    print(json.dumps(manifest))
    return 0 if kit + tree < LIMIT_MIB * 2**20 else 1


if __name__ == "__main__":
    raise SystemExit(main())
