"""Each method's own settings, declared by the method as scikit-learn's estimators declare theirs: a frozen dataclass
of fields with their defaults, help, choices and bounds (`core.train.settings.option`), checked when made.
A run's `TrainConfig` holds the settings every run has and its method's parameters (`TrainConfig.params`); the
catalog names each method's class. A field's name is unique across the house (`lr_c` is the logistic-regression
methods' one field, which SetFit's head shares), so a stored config and a flag stay flat: `--gan-preset tf`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from core.train.settings import check_fields, option

ADAPTER_KINDS = {"houlsby": "double_seq_bn", "pfeiffer": "seq_bn"}


@dataclass(frozen=True)
class MethodParams:
    """A method's settings, each checked when made against its field's choices and bounds. A method with rules
    between its fields extends `__post_init__`."""

    def __post_init__(self) -> None:
        check_fields(self)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class FinetuneParams(MethodParams):
    """Fine-tuning: the studio's measured recipe or the paper's BERT baseline."""

    finetune_preset: str = option("studio", "how fine-tuning runs: studio (defaults measured by "
                                            "bench/studies/defaults.py); paper, the BERT baseline of the GAN-BERT "
                                            "paper as crux82/ganbert's bert.py and run_experiment.sh train it: the "
                                            "encoder trained with AdamW 2e-5 (eps 1e-6, weight decay 0.01 off "
                                            "LayerNorm and biases), 10% warm-up then linear decay, gradients clipped "
                                            "at 1.0, batch 64, 3 epochs counted as bert.py counts steps "
                                            "(int(labeled / 64 x 3): 5 on the authors' 109 questions), the pooled CLS "
                                            "with dropout 0.1 under a head drawn from N(0, 0.02), the labeled rows "
                                            "alone (no validation). A setting given explicitly overrides the preset's",
                                  choices={"studio": "studio (measured)", "paper": "paper (crux82/ganbert bert.py)"},
                                  label="Fine-tuning preset")


@dataclass(frozen=True)
class AdapterParams(MethodParams):
    """Bottleneck adapters (AdapterHub): which architecture, and how narrow."""

    adapter_kind: str = option("houlsby", "adapter architecture: Houlsby (double_seq_bn) or Pfeiffer (seq_bn)",
                               choices=tuple(ADAPTER_KINDS), flag="--adapter", label="Adapter")
    reduction_factor: int = option(16, "adapter bottleneck: hidden size / this", low=1, label="Reduction factor")


@dataclass(frozen=True)
class LoraParams(MethodParams):
    """LoRA's low-rank update: its rank and scale."""

    lora_rank: int = option(8, "LoRA's rank r: the low-rank update of each attention query and value matrix (Hu et al. "
                               "2021 trained RoBERTa-base on GLUE at 8)", low=1, high=1024, label="LoRA rank")
    lora_alpha: float = option(8.0, "LoRA's alpha: the update is scaled by alpha / rank (Hu et al. 2021: alpha = rank, "
                                    "so a scale of 1)", low=0.0, high=4096.0, label="LoRA alpha")


@dataclass(frozen=True)
class GanBertParams(MethodParams):
    """GAN-BERT: its generator, the recipe it runs, its control, and how labeled rows fill its batches."""

    generator: str = option("noise", "GAN-BERT's generator: G1 noise into an MLP, or G2 conditioned on a bag of words",
                            choices={"noise": "G1: noise", "bow": "G2: bag of words"}, label="GAN-BERT generator")
    gan_preset: str = option("studio", "how GAN-BERT runs: studio (defaults measured by bench/studies/defaults.py); tf "
                                       "(crux82/ganbert ganbert.py and run_experiment.sh: dropout 0.1, AdamW 2e-5 "
                                       "with eps 1e-6 and weight decay 0.01 off LayerNorm and biases, 10% warm-up "
                                       "then linear decay, D's and G's gradients apart and clipped at 1.0, batch "
                                       "64, 3 epochs, pooled CLS); notebook (crux82/ganbert-pytorch "
                                       "GANBERT_pytorch.ipynb: dropout 0.2, AdamW 5e-5 for D and G at a constant "
                                       "rate, batch 64, 10 epochs, the summed gradients that code applies, no "
                                       "clipping, pooled CLS); seed-report (D 512-256-256, G1 100→256, Gaussian "
                                       "noise whatever the noise setting says). Both codes ran 64 tokens on short "
                                       "sentences; a preset leaves the max length to the studio's. Both counted "
                                       "epochs over thousands of texts: on the 141-text M4 sample tf's 3 epochs are "
                                       "9 steps, too few to learn. Pooled CLS vectors are other features than the "
                                       "studio's, so a frozen run with tf or notebook encodes its texts anew. A "
                                       "setting given explicitly (lr, batch size, steps or epochs, pooling) "
                                       "overrides the preset's",
                             choices={"studio": "studio (measured)", "tf": "tf (crux82/ganbert)",
                                      "notebook": "notebook (ganbert-pytorch)", "seed-report": "seed report"},
                             label="GAN-BERT preset")
    adversarial: bool = option(True, "GAN-BERT's adversarial game; off is its control: the same discriminator on the "
                                     "same rows and budget, trained by the supervised term alone (no generator, no "
                                     "real/fake terms)", choices={True: "on", False: "off: the control"},
                               label="Adversarial part (off: the control)", sweep=(True,),
                               sweep_label="GAN-BERT's adversarial part")
    noise: str = option("uniform", "G's noise: uniform (official code) or gaussian (seed report)",
                        choices=("uniform", "gaussian"), label="Noise")
    noise_dim: int = option(100, "size of G's noise vector", low=1, label="Noise size")
    batches_without_labels: float | None = option(
        None, "GAN-BERT: the largest share of batches that may hold no labeled text (0.05: one batch in 20). Each "
              "epoch repeats the labeled texts until that holds. The authors' rule repeats them int(log2(1/labeled "
              "share)) times, enough for their batches of 64, not for batches of 16 over a large unlabeled pool, "
              "where GAN-BERT with the encoder training fell to chance. 1: the authors' rule alone, as the tf and "
              "notebook presets run; empty: the preset's (0.05 for studio and seed-report). The control reads the "
              "same rows", low=0.001, high=1.0, label="Label-free batches, at most", unset="preset's",
        stored="the authors' rule alone")


@dataclass(frozen=True)
class LogisticParams(MethodParams):
    """The logistic-regression references: their one setting, C."""

    lr_c: float | None = option(None, "inverse L2 strength of the logistic-regression baselines and SetFit's head "
                                      "(scikit-learn's C; default: the method's, measured by "
                                      "bench/studies/defaults.py)",
                                low=1e-6, high=1e6, flag="--lr-c", label="LR C")


@dataclass(frozen=True)
class SetFitParams(LogisticParams):
    """SetFit: its pairs, and what its logistic-regression head (C: `lr_c`) reads."""

    setfit_features: str = option("layers", "what SetFit's logistic-regression head reads after the contrastive "
                                            "step: every layer's mean and CLS (standardized; on a causal LM, its "
                                            "pooled layer's mean), or the body's own sentence embedding, as "
                                            "published",
                                  choices={"layers": "all layers", "sentence": "sentence embedding (as published)"},
                                  label="SetFit head features")
    setfit_iterations: int = option(20, "SetFit: sentence pairs drawn per labeled text (its num_iterations); the "
                                        "default budget is these pairs over the batch, capped on a CPU", low=1,
                                    label="SetFit pairs per text")
