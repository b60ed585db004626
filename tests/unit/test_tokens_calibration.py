"""Calibration: learning the server's prompt_tokens from our estimates."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firsttoken.errors import CacheError
from firsttoken.tokens import Calibration


def test_nothing_recorded_leaves_estimates_alone() -> None:
    calibration = Calibration()
    assert calibration.adjust("gpt-4o", 123) == 123
    assert calibration.samples("gpt-4o") == 0


def test_known_models_get_the_median_offset() -> None:
    calibration = Calibration()
    for estimate, actual in [(100, 110), (200, 212), (50, 58), (400, 900)]:  # last: an outlier
        calibration.record("gpt-4o", estimate, actual)
    # differences 10, 12, 8, 500 → median 11
    assert calibration.adjust("gpt-4o", 300) == 311
    assert calibration.adjust("gpt-4", 300) == 300  # per model


def test_fractional_medians_round_up() -> None:
    calibration = Calibration()
    calibration.record("gpt-4o", 100, 110)
    calibration.record("gpt-4o", 100, 111)  # median offset 10.5
    assert calibration.adjust("gpt-4o", 0) == 11


def test_offsets_never_go_below_zero() -> None:
    calibration = Calibration()
    calibration.record("gpt-4o", 100, 50)
    assert calibration.adjust("gpt-4o", 10) == 0


def test_unknown_models_get_the_median_ratio() -> None:
    """A model with another tokenizer: the error grows with the text."""
    calibration = Calibration()
    for estimate, actual in [(1000, 1100), (2000, 2400), (500, 575), (0, 7)]:
        calibration.record("llama-3.1-70b", estimate, actual)
    # ratios 1.1, 1.2, 1.15 (the zero estimate carries no ratio) → median 1.15
    assert calibration.adjust("llama-3.1-70b", 10_000) == 11_500
    only_zero = Calibration()
    only_zero.record("llama-3.1-70b", 0, 5)
    assert only_zero.adjust("llama-3.1-70b", 40) == 40


def test_history_is_bounded_per_model_and_in_models() -> None:
    calibration = Calibration(max_samples=3, max_models=2)
    for actual in (100, 100, 120, 130, 140):
        calibration.record("gpt-4o", 100, actual)
    assert calibration.samples("gpt-4o") == 3
    assert calibration.adjust("gpt-4o", 100) == 130  # only 20, 30, 40 remain
    calibration.record("gpt-4", 10, 11)
    calibration.record("gpt-4o", 10, 11)  # gpt-4o is now the most recent
    calibration.record("gpt-5", 10, 11)  # evicts gpt-4, the least recently recorded
    assert calibration.samples("gpt-4") == 0
    assert calibration.samples("gpt-4o") == 3 and calibration.samples("gpt-5") == 1


def test_record_rejects_bad_numbers() -> None:
    calibration = Calibration()
    for estimate, actual in [(-1, 5), (5, -1), (1.5, 2), (1, "2"), (True, 1)]:
        with pytest.raises(ValueError):
            calibration.record("gpt-4o", estimate, actual)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Calibration(max_samples=0)


def test_round_trip_through_json() -> None:
    calibration = Calibration(max_samples=4, max_models=3)
    for i in range(6):
        calibration.record("gpt-4o", 100 + i, 110 + 2 * i)
        calibration.record("mistral-large", 100 + i, 130 + i)
    restored = Calibration.from_dict(json.loads(json.dumps(calibration.to_dict())))
    assert restored.to_dict() == calibration.to_dict()
    for model in ("gpt-4o", "mistral-large", "gpt-4"):
        assert restored.adjust(model, 777) == calibration.adjust(model, 777)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"version": 2, "max_samples": 4, "max_models": 4, "models": {}},
        {"version": 1, "max_samples": "4", "max_models": 4, "models": {}},
        {"version": 1, "max_samples": 4, "max_models": 4, "models": []},
        {"version": 1, "max_samples": 4, "max_models": 4, "models": {"m": [[1]]}},
        {"version": 1, "max_samples": 4, "max_models": 4, "models": {"m": [[1, -2]]}},
        {"version": 1, "max_samples": 4, "max_models": 4, "models": {"m": "1,2"}},
        {"version": 1, "max_samples": 0, "max_models": 4, "models": {}},
    ],
)
def test_malformed_stored_data_is_a_cache_error(data: dict[str, Any]) -> None:
    with pytest.raises(CacheError):
        Calibration.from_dict(data)


@settings(max_examples=100, deadline=None)
@given(
    samples=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), max_size=40),
    estimate=st.integers(0, 10_000),
    model=st.sampled_from(["gpt-4o", "local-model"]),
)
def test_adjust_is_never_negative_and_survives_persistence(
    samples: list[tuple[int, int]], estimate: int, model: str
) -> None:
    calibration = Calibration(max_samples=8)
    for est, actual in samples:
        calibration.record(model, est, actual)
    assert calibration.samples(model) == min(len(samples), 8)
    adjusted = calibration.adjust(model, estimate)
    assert adjusted >= 0
    assert Calibration.from_dict(calibration.to_dict()).adjust(model, estimate) == adjusted
    # A constant offset is learnt exactly for a known model.
    if model == "gpt-4o" and samples and all(a - e == samples[0][1] - samples[0][0] for e, a in samples):
        assert adjusted == max(0, estimate + samples[0][1] - samples[0][0])


def test_images_are_corrected_apart_from_the_text() -> None:
    # gpt-5-mini: its text count is exact, its images billed ×1.2 where the guide says ×1.62.
    calibration = Calibration()
    for text, images in [(40, 1659), (120, 0), (60, 3318), (30, 0)]:
        actual_images = round(images / 1.62 * 1.2)
        calibration.record("gpt-5-mini", text + images, text + actual_images + 2, images)
    # Text-only prompts are corrected by the text-only samples alone: +2.
    assert calibration.adjust("gpt-5-mini", 500) == 502
    # Images by their own ratio, whatever their number.
    for images in (1659, 4977):
        expected = 100 + 2 + round(images / 1.62 * 1.2)
        assert abs(calibration.adjust("gpt-5-mini", 100 + images, images) - expected) <= 1
    # An image correction with no image sample yet leaves the images as counted.
    fresh = Calibration()
    fresh.record("claude-sonnet-4", 1000, 1100)
    assert fresh.adjust("claude-sonnet-4", 1000 + 1590, 1590) == 1100 + 1590


def test_samples_with_images_survive_storage() -> None:
    calibration = Calibration()
    calibration.record("gpt-4o", 100, 110)
    calibration.record("gpt-4o", 900, 905, 765)
    data = json.loads(json.dumps(calibration.to_dict()))
    assert data["models"]["gpt-4o"] == [[100, 110], [900, 905, 765]]
    assert Calibration.from_dict(data).adjust("gpt-4o", 900, 765) == calibration.adjust("gpt-4o", 900, 765)
    for bad in ([1, 2, 3, 4], [10, 20, 30]):  # too long; more images than the estimate
        with pytest.raises(CacheError):
            Calibration.from_dict({**data, "models": {"gpt-4o": [bad]}})
    assert calibration.compare("gpt-4o", 900, 903, images=765)["adjusted"] == calibration.adjust("gpt-4o", 900, 765)
