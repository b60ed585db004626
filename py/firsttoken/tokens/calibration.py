"""Learning the gap between our prompt-token estimates and what the server reports."""

from __future__ import annotations

import math
import statistics
from collections import OrderedDict, deque
from typing import Any, Mapping

from firsttoken.tokens.models import model_info
from firsttoken.errors import CacheError

__all__ = ["Calibration"]

_FORMAT_VERSION = 1


class Calibration:
    """Per-model correction of `count_chat` estimates from the server's `usage.prompt_tokens`.

    For a model whose tokenizer we know, the error is additive (hidden formatting,
    a provider's injected system text), so `adjust` adds the median of recent
    `actual - estimate`. For an unknown model (e.g. a Llama served behind an
    OpenAI-compatible API, counted with o200k_base) the tokenizers differ, so the error
    grows with the text: `adjust` scales by the median of recent `actual / estimate`.
    Medians ignore the odd outlier. Fractions round up, since overestimating a prompt is
    the safe side of a context limit.

    Images are corrected apart from the text, when the caller says how many of an
    estimate's tokens were images (`images`: `ChatCount.images`). Their error grows with
    the images, not the text (a per-patch multiplier the guide gives wrong, Claude's
    approximate area rule: `firsttoken.tokens.images`), so a prompt with images teaches
    the text correction nothing and a text-only prompt teaches the image one nothing:
    text is corrected from the samples without images, as above; the images by the
    median of `(actual - corrected text) / images` over the samples with them.

    History is bounded: `max_samples` per model, and the `max_models` most recently
    recorded models. `to_dict`/`from_dict` give a JSON-safe form for storage.
    """

    def __init__(self, *, max_samples: int = 32, max_models: int = 64) -> None:
        if max_samples < 1 or max_models < 1:
            raise ValueError("max_samples and max_models must be >= 1")
        self.max_samples = max_samples
        self.max_models = max_models
        self._samples: OrderedDict[str, deque[tuple[int, int, int]]] = OrderedDict()

    def record(self, model: str, estimate: int, actual_prompt_tokens: int, images: int = 0) -> None:
        """Remember one request: our estimate, the server's prompt_tokens, and how many of
        the estimate's tokens were images."""
        for value in (estimate, actual_prompt_tokens, images):
            if type(value) is not int or value < 0:
                raise ValueError(f"token counts must be ints >= 0, not {value!r}")
        if images > estimate:
            raise ValueError(f"images ({images}) cannot exceed the estimate ({estimate})")
        history = self._samples.pop(model, None)
        if history is None:
            history = deque(maxlen=self.max_samples)
        history.append((estimate, actual_prompt_tokens, images))
        self._samples[model] = history  # most recent last
        while len(self._samples) > self.max_models:
            self._samples.popitem(last=False)

    def compare(
        self, model: str, estimate: int | None, actual_prompt_tokens: int | None, images: int = 0
    ) -> dict[str, Any]:
        """Our estimate of one request's prompt against the server's `prompt_tokens`:
        recorded when both are known, and reported with the next adjustment of
        `estimate` (`chat.done.prompt`: `{estimate, actual, adjusted}`)."""
        if isinstance(estimate, int) and isinstance(actual_prompt_tokens, int):
            self.record(model, estimate, actual_prompt_tokens, images)
        return {
            "estimate": estimate,
            "actual": actual_prompt_tokens,
            "adjusted": self.adjust(model, estimate, images) if isinstance(estimate, int) else None,
        }

    def samples(self, model: str) -> int:
        """How many samples are held for `model`."""
        return len(self._samples.get(model, ()))

    def adjust(self, model: str, estimate: int, images: int = 0) -> int:
        """`estimate` corrected by what was recorded for `model` (unchanged if nothing
        was); `images` of its tokens are images, corrected apart (see the class)."""
        history = self._samples.get(model)
        if not history:
            return estimate
        text_samples = [(est, actual) for est, actual, imgs in history if not imgs]
        text = self._adjust_text(model, estimate - images, text_samples)
        if not images:
            return text
        ratios = [
            max(0.0, (actual - self._adjust_text(model, est - imgs, text_samples)) / imgs)
            for est, actual, imgs in history
            if imgs
        ]
        if not ratios:
            return max(0, text + images)
        return max(0, text + math.ceil(images * statistics.median(ratios)))

    @staticmethod
    def _adjust_text(model: str, estimate: int, history: list[tuple[int, int]]) -> int:
        if not history:
            return estimate
        if model_info(model).known:
            offset = statistics.median(actual - est for est, actual in history)
            return max(0, estimate + math.ceil(offset))
        ratios = [actual / est for est, actual in history if est > 0]
        if not ratios:
            return estimate
        return max(0, math.ceil(estimate * statistics.median(ratios)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe state: `{"version", "max_samples", "max_models", "models": {model:
        [[estimate, actual] or [estimate, actual, images], …] oldest first}}`, models
        least recently recorded first (a sample without images keeps the older form)."""
        return {
            "version": _FORMAT_VERSION,
            "max_samples": self.max_samples,
            "max_models": self.max_models,
            "models": {m: [list(s) if s[2] else list(s[:2]) for s in h] for m, h in self._samples.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """Rebuild from `to_dict` output; anything malformed raises `CacheError`
        (the data came from storage and does not verify)."""
        try:
            if data.get("version") != _FORMAT_VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            calibration = cls(max_samples=data["max_samples"], max_models=data["max_models"])
            models = data["models"]
            if not isinstance(models, Mapping):
                raise ValueError("'models' is not an object")
            for model, history in models.items():
                if not isinstance(model, str) or not isinstance(history, list):
                    raise ValueError(f"bad entry for {model!r}")
                for sample in history:
                    if not isinstance(sample, list) or len(sample) not in (2, 3):
                        raise ValueError(f"bad sample {sample!r}")
                    calibration.record(model, *sample)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CacheError(f"calibration data does not verify: {exc}") from None
        return calibration
