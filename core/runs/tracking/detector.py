"""A studio run as an MLflow pyfunc model: `mlflow.pyfunc.load_model(uri).predict(DataFrame({"text": [...]}))`
gives one row per text, a probability column per class (named by the class) and a `label` column, in a process
that has the studio's packages but not its checkout, home or registry.

The model's artifacts are the run's checkpoint and, for a method that reads a backbone, the backbone's folder
as the run read it; `core` travels as the model's code. GAN-BERT's fake class is left out: its real classes'
probabilities are those `core predict` gives."""

from __future__ import annotations

from pathlib import Path

import mlflow.pyfunc
import pandas as pd

CHECKPOINT, BACKBONE = "trained_weights", "backbone"  # the model's artifacts: the run's checkpoint, its backbone
TEXT = "text"  # the input column


class StudioDetector(mlflow.pyfunc.PythonModel):
    """Loads the checkpoint with the method that trained it, its backbone read from the model's own copy."""

    def load_context(self, context) -> None:
        from core.environment import prepare

        prepare()  # offline: a backbone is read from the artifact, never the hub
        from core.paths import home_from_environment
        from core.train.checkpoint import load_predictor

        # where the run read its backbone, the model's own copy now; a serving process is an entry point, whose
        # studio home (for the feature store a frozen run reads) is its environment's
        self.model = load_predictor(Path(context.artifacts[CHECKPOINT]), home_from_environment(), "cpu",
                                    context.artifacts.get(BACKBONE))

    def predict(self, context, model_input, params=None) -> pd.DataFrame:
        from core.train.predict import classify

        if isinstance(model_input, pd.DataFrame):
            if TEXT not in model_input.columns:
                raise ValueError(f"the input needs a '{TEXT}' column; it has {list(model_input.columns)}")
            texts = model_input[TEXT]
        else:
            texts = pd.Series(model_input)
        predictions = classify(self.model, [str(t) for t in texts])
        frame = pd.DataFrame([p.probabilities for p in predictions], columns=list(self.model.labels))
        frame["label"] = [p.label for p in predictions]
        return frame
