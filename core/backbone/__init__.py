"""The backbone: the ones the studio names (`packaged`: MiniLM, the default, and SmolLM2), where a model's files are
(`locate`: a named one, a local folder, or a hub id in the local Hugging Face cache), what its config file says
(`facts`), the opt-in download (`download`), the device and
precision (`device`), and turning texts into vectors (`encode`). Importing this package imports neither torch nor
transformers."""

from core.backbone.facts import attention_dropout, default_train_layers, depth, pass_work, width
from core.backbone.locate import (
                                  DEFAULT_TITLE,
                                  Backbone,
                                  BackboneError,
                                  CachedModel,
                                  adapted_backbones,
                                  adapted_name,
                                  backbone_label,
                                  cached_models,
                                  hub_cache_dir,
                                  is_hub_id,
                                  prepare_backbone,
                                  resolve_backbone,
)

__all__ = ["DEFAULT_TITLE", "Backbone", "BackboneError", "CachedModel", "adapted_backbones", "adapted_name",
           "attention_dropout", "backbone_label", "cached_models", "default_train_layers",
           "depth", "hub_cache_dir", "is_hub_id", "pass_work", "prepare_backbone",
           "resolve_backbone", "width"]
