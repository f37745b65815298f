"""Attention Atlas's model core: our own hookable transformer, its trace, tokenizers and loaders."""

from .cache import ActivationCache
from .config import ModelConfig
from .hooks import HookPoint, Run, act_name
from .lm import LanguageModel
from .loading import ModelLoadError, load, save
from .tokenizer import Tokenizer
from .trace import Trace
from .transformer import Transformer

__all__ = [
    "ActivationCache", "HookPoint", "LanguageModel", "ModelConfig", "ModelLoadError", "Run", "Tokenizer", "Trace",
    "Transformer", "act_name", "load", "save",
]  # fmt: skip
