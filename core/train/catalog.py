"""What the command line and a new sweep know of the methods before any is imported (torch and transformers
take seconds to import, and `python -m core --help` should not wait for them): the built-in methods' titles
(their classes read them from here) and the sweep's defaults."""

TITLES = {
    "finetune": "BERT fine-tuning",
    "adapter": "BERT + adapters",
    "ganbert": "GAN-BERT",
    "setfit": "SetFit",
    "tfidf-lr": "TF-IDF + LR",
    "features-lr": "Frozen features + LR",
}

# What a new sweep offers before the user chooses (the CLI's `sweep` and the Train page alike).
DEFAULT_METHODS = ("finetune", "ganbert")
DEFAULT_FRACTIONS = (0.01, 0.05, 0.1, 0.5)
DEFAULT_SEEDS = (0, 1, 2, 3, 4)  # at small labeled amounts one seed's draw moves accuracy by ±0.10
