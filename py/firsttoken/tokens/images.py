"""What an image costs a model, and the size the model keeps of it, from its pixels.

`image_tokens(model, width, height, detail)` is the count; `image_target_size(...)` the
dimensions the provider resizes the image to before it looks at it. The page resizes to
exactly that size before sending (nothing the model would keep is lost, nothing it would
throw away is uploaded), and counting the target gives the same tokens as counting the
original. `part_image(part)` reads an image content part in any of the three dialects;
its pixels come from the image's own header (`firsttoken.image_header`), never from its
byte length.

The rules, per family (`image_rule`):

* **Tiles** (OpenAI's "Images and vision" guide, platform.openai.com/docs/guides/images-vision,
  "Calculating costs": gpt-4o, gpt-4.1, gpt-4.5, gpt-4o-mini, gpt-5, o1, o3,
  computer-use-preview). `detail: "low"` costs the base tokens whatever the size ("the
  model receives a low-resolution 512px x 512px version of the image"). At "high" the
  image is scaled to fit a 2048 × 2048 square, then so that its shortest side is 768 px,
  and each 512-px tile covering it costs the tile tokens, plus the base once. Neither
  step scales up: a 128 × 64 image on gpt-4o is billed 85 + 170 (one tile) at high
  (measured: community.openai.com/t/1262691, "128x64 image", 267 tokens with 12 of text).
  Base/tile: 85/170 for gpt-4o, gpt-4.1, gpt-4.5; 2833/5667 for gpt-4o-mini; 70/140
  for gpt-5 and gpt-5-chat-latest; 75/150 for o1, o1-pro, o3; 65/129 for
  computer-use-preview. Measured against the API (the same thread, a 128 × 64 image
  and 11-12 tokens of text at low and high): gpt-4o, gpt-4.1, gpt-4.5 and gpt-4-turbo
  97/267, gpt-4o-mini 2845/8512, o3 86/236, as the table gives; o1 22/44, which it
  does not. Worked examples in the guide: 1024 × 1024 high = 765,
  2048 × 4096 high = 1105, 4096 × 8192 low = 85 (gpt-4o). The guide does not say how
  a scaled side is rounded; to the nearest pixel is what the API bills (2049 × 513 is
  billed 8 tiles and 2050 × 513 4 on gpt-4.1: community.openai.com/t/1281361).
* **Patches** (the same guide: gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini,
  gpt-5-nano). The image costs the 32 × 32 patches that cover it; past 1536 patches
  it is first scaled down by sqrt(1536 · 32² / (w · h)), and the factor trimmed so that
  a whole number of patches fits the tighter side; the patches (at most 1536) times a
  per-model multiplier are the tokens: 1.62 gpt-4.1-mini and gpt-5-mini, 2.46
  gpt-4.1-nano and gpt-5-nano, 1.72 o4-mini. Worked examples: 1024 × 1024 → 1024
  patches; 1800 × 2400 → 1056 × 1408 → 1452 patches. `detail` is not part of the rule,
  and "low" changes nothing on these models (measured: the same thread, o4-mini and
  gpt-4.1-mini bill 26 at low and at high). How the multiplied figure is rounded is not
  published: to the nearest token is what the API bills (see `_count`).
* **Area** (Anthropic's vision guide, platform.claude.com/docs/en/build-with-claude/vision,
  "Evaluate image size" / "Calculate image costs": every Claude model). "tokens =
  (width px * height px)/750", after "if your image's long edge is more than 1568
  pixels, or your image is more than ~1,600 tokens, it will first be scaled down,
  preserving aspect ratio". Its table: 200 × 200 ≈ 54, 1000 × 1000 ≈ 1334, 1092 × 1092
  ≈ 1590 (rounded up here, which gives all three). The rule is approximate by its own
  words ("~"; its table of largest unresized sizes overshoots 1,600 tokens by up to
  2%), and the guide now describes 28 × 28-pixel patches and larger native sizes for
  newer models: every Claude count is an estimate.

**Estimates.** A rule is `exact` only where the guide gives it with worked examples
and nothing measured contradicts it. Not exact: every Claude model; gpt-5-mini and
gpt-5-nano (billed at 1.2 and 1.5 per patch in measurements, not the 1.62 and 2.46 the
guide gives: community.openai.com/t/1344040, 1377015); o1 and o1-pro (billed far
below the table, above); later gpt-5.x models, o-series models the table leaves out, and
unknown models (counted by the nearest documented rule); `detail` "auto" or absent on a
tile model (the guide: the model decides; counted as "high", the dearer); a patch
model's image past 1536 patches (the API has billed other sizes than the guide's
scale-down gives; an image resized to its target size first never is). A prompt's
estimate is corrected from the server's `usage` by `Calibration`, its image tokens
(`ChatCount.images`) apart from its text.

The gateway's built-in model (firsttoken-sim) bills images by gpt-4o's tile rule, with
"auto" meaning "high": its counts are exact by definition (gateway/simulator.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..image_header import ImageHeader, read_base64_header, read_data_url_header
from .models import _TAIL as _T
from .models import _base_name

__all__ = [
    "ImageCount",
    "ImagePart",
    "ImageRule",
    "count_image_part",
    "image_rule",
    "image_target_size",
    "image_tokens",
    "is_image_part",
    "max_image_tokens",
    "part_image",
]

_TILE = 512
#: Tile models at "high": the square the image is first fitted in, then its short side.
_FIT_SIDE = 2048
_SHORT_SIDE = 768
#: Tile models at "low": "a low-resolution 512px x 512px version of the image".
_LOW_SIDE = 512
_PATCH = 32
_PATCH_CAP = 1536
#: Anthropic: the long edge and the tokens past which an image is scaled down.
_CLAUDE_LONG_EDGE = 1568
_CLAUDE_PIXELS_PER_TOKEN = 750
_CLAUDE_MAX_TOKENS = 1600

_DETAILS = ("low", "high")


@dataclass(frozen=True, slots=True)
class ImageRule:
    """How one model family bills an image. `kind`: "tile" (`base` + `per_tile` per
    512-px tile at high detail, `base` at low), "patch" (32-px patches, capped, times
    `multiplier`) or "area" (Anthropic's pixels / 750). `exact`: the rule is the
    provider's, documented with worked examples; `auto`: what detail "auto" (or none)
    means when that is known, else None (counted as "high", an estimate)."""

    name: str
    kind: str
    exact: bool
    base: int = 0
    per_tile: int = 0
    multiplier: float = 1.0
    auto: str | None = None


@dataclass(frozen=True, slots=True)
class ImageCount:
    """An image's tokens on a model, and the `width` × `height` the model keeps of it.
    `exact` is False when the rule, or the detail it was counted at, is an estimate."""

    tokens: int
    width: int
    height: int
    exact: bool
    rule: str
    #: Why the count is an estimate ("" when it is exact).
    note: str = ""


_GPT_4O = ImageRule("gpt-4o tiles", "tile", True, base=85, per_tile=170)
_SIM = ImageRule("firsttoken-sim (gpt-4o tiles)", "tile", True, base=85, per_tile=170, auto="high")
_UNKNOWN = ImageRule("unknown model: gpt-4o tiles", "tile", False, base=85, per_tile=170)
_GPT_5_MINI = ImageRule("gpt-5-mini patches ×1.62 (billed ×1.2 in measurements)", "patch", False, multiplier=1.62)
_GPT_5_NANO = ImageRule("gpt-5-nano patches ×2.46 (billed ×1.5 in measurements)", "patch", False, multiplier=2.46)
_CLAUDE = ImageRule("Claude: pixels / 750", "area", False)

# `(pattern, rule)`, first match wins, on the model's base name (`models._base_name`);
# a family name is followed by nothing or a separator, as in `models`.
_RULES: tuple[tuple[re.Pattern[str], ImageRule], ...] = tuple(
    (re.compile(pattern, re.DOTALL), rule)
    for pattern, rule in (
        (rf"firsttoken-sim{_T}", _SIM),
        (rf"(?:chat)?gpt-4o-mini{_T}", ImageRule("gpt-4o-mini tiles", "tile", True, base=2833, per_tile=5667)),
        (rf"gpt-4\.1-mini{_T}", ImageRule("gpt-4.1-mini patches ×1.62", "patch", True, multiplier=1.62)),
        (rf"gpt-4\.1-nano{_T}", ImageRule("gpt-4.1-nano patches ×2.46", "patch", True, multiplier=2.46)),
        (rf"o4-mini{_T}", ImageRule("o4-mini patches ×1.72", "patch", True, multiplier=1.72)),
        # Not in the guide's table; measured ×1.72 like o4-mini, which it is built on.
        (r"codex-mini-latest", ImageRule("codex-mini-latest: as o4-mini", "patch", False, multiplier=1.72)),
        (rf"gpt-5-mini{_T}", _GPT_5_MINI),
        (rf"gpt-5-nano{_T}", _GPT_5_NANO),
        (rf"gpt-5\.\d+-mini{_T}", ImageRule("gpt-5.x-mini: as gpt-5-mini", "patch", False, multiplier=1.62)),
        (rf"gpt-5\.\d+-nano{_T}", ImageRule("gpt-5.x-nano: as gpt-5-nano", "patch", False, multiplier=2.46)),
        (rf"(?:chat)?gpt-4o{_T}|gpt-4\.[15]{_T}|gpt-4-turbo{_T}", _GPT_4O),
        (r"gpt-5|gpt-5-chat-latest|gpt-5-\d{4}-\d{2}-\d{2}", ImageRule("gpt-5 tiles", "tile", True, base=70, per_tile=140)),
        (r"gpt-5(?:[-.:@].*)?", ImageRule("gpt-5.x: as gpt-5 tiles", "tile", False, base=70, per_tile=140)),
        (r"o3(?:-\d{4}-\d{2}-\d{2})?", ImageRule("o3 tiles", "tile", True, base=75, per_tile=150)),
        (rf"o[13]{_T}", ImageRule("o1/o-series: as o3 tiles", "tile", False, base=75, per_tile=150)),
        (rf"computer-use-preview{_T}", ImageRule("computer-use-preview tiles", "tile", True, base=65, per_tile=129)),
        (r"claude-.*", _CLAUDE),
    )
)


def image_rule(model: str) -> ImageRule:
    """The rule `model` bills images by (an unknown model: gpt-4o's, not exact)."""
    base = _base_name(model)
    for pattern, rule in _RULES:
        if pattern.fullmatch(base):
            return rule
    return _UNKNOWN


def image_target_size(model: str, width: int, height: int, detail: str | None = None) -> tuple[int, int]:
    """The `(width, height)` `model` keeps of a `width` × `height` image sent at `detail`
    ("low", "high", "auto" or None): the size the provider resizes it to before
    tokenizing it (never larger than the image). An image resized to exactly this size
    costs what the original does."""
    return _count(image_rule(model), width, height, detail)[1:3]


def image_tokens(model: str, width: int, height: int, detail: str | None = None) -> ImageCount:
    """What a `width` × `height` image sent at `detail` costs `model`, the size it keeps
    of it, and whether the count is exact (see the module's rules)."""
    rule = image_rule(model)
    tokens, w, h, known = _count(rule, width, height, detail)
    if not rule.exact:
        note = f"images counted by {rule.name}, an estimate"
    elif not known and rule.kind == "patch":
        note = f"images past {_PATCH_CAP} patches counted by the guide's scale-down, an estimate"
    elif not known:
        note = f"image detail {detail!r} counted as 'high'"
    else:
        note = ""
    return ImageCount(tokens, w, h, not note, rule.name, note)


def count_image_part(part: Any, model: str, *, detail_sent: bool = True) -> ImageCount | None:
    """What the image in content `part` (any dialect: `part_image`) costs `model`, or None
    when the part is not an image. `detail_sent=False`: the part's `detail` does not
    reach the provider (Anthropic's image blocks have none) and is not counted. An image whose bytes are not in the part (a URL) is
    counted at the most an image can cost (`max_image_tokens`), with `width` and `height`
    0. Raises `InvalidImage` / `ImageTooLarge` for image bytes that do not read."""
    image = part_image(part)
    if image is None:
        return None
    if not detail_sent:
        image = ImagePart(image.header, None)
    if image.header is None:
        rule = image_rule(model)
        return ImageCount(max_image_tokens(model, image.detail), 0, 0, False, rule.name,
                          "images given by URL counted at the most an image costs")
    return image_tokens(model, image.header.width, image.header.height, image.detail)


def max_image_tokens(model: str, detail: str | None = None) -> int:
    """The most one image can cost `model` at `detail`, whatever its size: what an image
    whose size cannot be read (a URL the provider fetches) is counted at."""
    rule = image_rule(model)
    if rule.kind == "patch":
        return math.floor(_PATCH_CAP * rule.multiplier + 0.5)
    if rule.kind == "area":
        return _CLAUDE_MAX_TOKENS
    if _effective_detail(rule, detail)[0] == "low":
        return rule.base
    # Fitted in 2048 × 2048 with its short side at most 768: 4 × 2 tiles at most.
    return rule.base + rule.per_tile * -(-_FIT_SIDE // _TILE) * -(-_SHORT_SIDE // _TILE)


def _effective_detail(rule: ImageRule, detail: str | None) -> tuple[str, bool]:
    """The detail a tile model applies, and whether that is known (not a guess)."""
    if detail in _DETAILS:
        return detail, True
    if detail in (None, "auto") and rule.auto is not None:
        return rule.auto, True
    return "high", False


def _count(rule: ImageRule, width: int, height: int, detail: str | None) -> tuple[int, int, int, bool]:
    """`(tokens, kept width, kept height, detail known)`."""
    if isinstance(width, bool) or isinstance(height, bool) or not (isinstance(width, int) and isinstance(height, int)):
        raise TypeError("width and height must be ints")
    if width < 1 or height < 1:
        raise ValueError(f"an image is at least 1 × 1 pixels, not {width} × {height}")
    if rule.kind == "tile":
        chosen, known = _effective_detail(rule, detail)
        if chosen == "low":
            w, h = _fit(width, height, _LOW_SIDE)
            return rule.base, w, h, known
        w, h = _fit(width, height, _FIT_SIDE)
        short = min(w, h)
        if short > _SHORT_SIDE:
            w, h = _scaled(w, short, _SHORT_SIDE), _scaled(h, short, _SHORT_SIDE)
        tiles = -(-w // _TILE) * -(-h // _TILE)
        return rule.base + rule.per_tile * tiles, w, h, known
    if rule.kind == "patch":
        patches, w, h, shrunk = _patches(width, height)
        # Rounded to the nearest token: what the API bills (1452 × 1.62 = 2352.24 and
        # 1536 × 1.62 = 2488.32 billed 2352 and 2488 on gpt-4.1-mini,
        # community.openai.com/t/1230130 and 1281361). The guide's scale-down is not always
        # what the API does (4000 × 1474 billed the full 1536 patches where the rule
        # gives 1449, the latter thread): a scaled-down count is an estimate.
        return math.floor(patches * rule.multiplier + 0.5), w, h, not shrunk
    w, h = _claude_size(width, height)
    return math.ceil(w * h / _CLAUDE_PIXELS_PER_TOKEN), w, h, True


def _scaled(side: int, of: int, to: int) -> int:
    """`side * to / of` rounded to the nearest pixel (halves up), in integers, at least 1."""
    return max(1, (2 * side * to + of) // (2 * of))


def _fit(width: int, height: int, box: int) -> tuple[int, int]:
    """Scaled down, keeping the aspect ratio, to fit a `box` × `box` square."""
    long = max(width, height)
    if long <= box:
        return width, height
    return _scaled(width, long, box), _scaled(height, long, box)


def _patches(width: int, height: int) -> tuple[int, int, int, bool]:
    """OpenAI's patch rule: `(patches, kept width, kept height, scaled down)`."""
    patches = -(-width // _PATCH) * -(-height // _PATCH)
    if patches <= _PATCH_CAP:
        return patches, width, height, False
    # The guide's factor can exceed 1 for a very thin image (few pixels, many patches):
    # it never scales up.
    shrink = min(1.0, math.sqrt(_PATCH_CAP * _PATCH * _PATCH / (width * height)))
    # Trim the factor so that the tighter side covers a whole number of patches (a side
    # already under one patch is left alone: its floor would be nothing).
    across = [side * shrink / _PATCH for side in (width, height)]
    shrink *= min(math.floor(a) / a if a >= 1 else 1.0 for a in across)
    w, h = max(1, math.floor(width * shrink)), max(1, math.floor(height * shrink))
    if -(-w // _PATCH) * -(-h // _PATCH) > _PATCH_CAP:
        # Only a thin image gets here (the guide's examples never do): its long side is
        # cut to the patches the cap leaves beside its short side.
        short_patches = -(-min(w, h) // _PATCH)
        limit = _PATCH_CAP // short_patches * _PATCH
        w, h = (min(w, limit), h) if w >= h else (w, min(h, limit))
    return min(_PATCH_CAP, -(-w // _PATCH) * -(-h // _PATCH)), w, h, True


def _claude_size(width: int, height: int) -> tuple[int, int]:
    """Scaled down, keeping the aspect ratio, until the long edge is at most 1568 px and
    the image at most ~1,600 tokens (1.2 MP); rounded down, so that both hold."""
    scale = min(1.0, _CLAUDE_LONG_EDGE / max(width, height),
                math.sqrt(_CLAUDE_MAX_TOKENS * _CLAUDE_PIXELS_PER_TOKEN / (width * height)))
    if scale >= 1.0:
        return width, height
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


# ---- image content parts, in the three dialects ---------------------------------------------


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image content part: its `header` (None when its bytes are not in the part: a
    URL or a file id the provider fetches) and the `detail` it asks for."""

    header: ImageHeader | None
    detail: str | None


#: The content parts that are images, in each dialect's shape (`part_image`).
_IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


def is_image_part(part: Any) -> bool:
    """Whether a content part is an image (as `part_image` reads them), without reading
    the image itself."""
    return isinstance(part, Mapping) and part.get("type") in _IMAGE_PART_TYPES


def part_image(part: Any) -> ImagePart | None:
    """The image in a content part, or None when the part is not an image:
    Chat Completions `{"type": "image_url", "image_url": {"url", "detail"}}` (or the
    URL as a bare string), Responses `{"type": "input_image", "image_url", "detail"}`,
    Anthropic `{"type": "image", "source": {"type": "base64", "media_type", "data"} |
    {"type": "url", "url"}}`. Raises `InvalidImage` / `ImageTooLarge` for image bytes that
    do not read or declare too many pixels."""
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, Mapping):
            return ImagePart(_header(image.get("url")), _detail(image.get("detail")))
        return ImagePart(_header(image), None)
    if kind == "input_image":
        return ImagePart(_header(part.get("image_url")), _detail(part.get("detail")))
    if kind == "image":
        source = part.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64" and isinstance(source.get("data"), str):
            return ImagePart(read_base64_header(source["data"]), None)
        if isinstance(source, Mapping) and source.get("type") == "url":
            return ImagePart(_header(source.get("url")), None)
        return ImagePart(None, None)
    return None


def _header(url: Any) -> ImageHeader | None:
    return read_data_url_header(url) if isinstance(url, str) else None


def _detail(value: Any) -> str | None:
    return value if isinstance(value, str) else None
