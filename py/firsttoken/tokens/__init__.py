"""Token counting for OpenAI-style models: exact text counts, estimated chat overhead.

Text
----
`encode`, `decode`, `count` and `truncate` take a model name ("gpt-4o",
"openai/gpt-4o-mini", "ft:gpt-4o-mini:org::id") or an encoding name ("o200k_base",
"cl100k_base") or an `Encoder`. Text that looks like a special token ("<|endoftext|>")
is ordinary text here, as with tiktoken's `disallowed_special=()`: a user who pastes it
is sending those characters, not a control token.

`encoding_for_model(model) -> (encoding, known)`: o200k_base for gpt-4o*, chatgpt-4o*,
gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*, gpt-oss* (its o200k_harmony has the same
ranks); cl100k_base for gpt-4 / gpt-4-turbo / gpt-4-32k, gpt-3.5*, text-embedding-3-*,
text-embedding-ada-002. Unknown models get o200k_base with `known=False`; the count is
then a guess (the model may not use an OpenAI tokenizer at all), and `Calibration`
learns the ratio from the server's reports.

Backends
--------
An `Encoder` is any object with `name`, `encode(text) -> list[int]`,
`decode(ids) -> str` and `decode_bytes(ids) -> bytes` (and optionally `count`). A backend
is a factory `encoding name -> Encoder`; encoders are built on first use and cached per
(backend, encoding). On CPython the default backend "tiktoken" feeds tiktoken's Rust
core with ranks parsed from npm tiktoken's `encoders/<name>.json`, found via
`$FIRSTTOKEN_TOKENIZER_DATA` or `<repo>/node_modules/tiktoken/encoders`, and checked
(structure, rank order, pinned size and SHA-256). tiktoken is imported only there. The
page, which has no tiktoken wheel, registers a JavaScript-backed encoder
(`firsttoken.browser.tokenizer`, backend "js"): our own exact BPE (js/tokenizer/bpe.js)
over tiktoken's own vocabulary files, called synchronously in Python's own thread once
`await ensure_encoder(name)` has loaded it.

Chat prompts (`count_chat`, `count_chat_detailed`)
--------------------------------------------------
The rule is the OpenAI cookbook's "How to count tokens with tiktoken" (openai-cookbook,
examples/How_to_count_tokens_with_tiktoken.ipynb), which compared it with the API's
`usage.prompt_tokens`:

* each message costs `tokens_per_message` plus the tokens of its role and content; a
  `name` costs its tokens plus `tokens_per_name`; the reply is primed with 3 tokens
  (`<|start|>assistant<|message|>`);
* gpt-3.5-turbo (0613 and later), gpt-4, gpt-4o families: 3 per message, +1 per name;
  gpt-3.5-turbo-0301: 4 per message, -1 per name (the name replaces the role);
  newer o200k models (gpt-4.1, gpt-5, o-series) and unknown models are assumed to
  follow the gpt-4o rule: nothing published checks that.
* content as a list of parts: text (and refusal) parts are counted, each on its own;
  image parts (Chat Completions `image_url`, Responses `input_image`, Anthropic
  `image`) by the model's image rule from the pixel size in the image's own header
  (`image_tokens`, below); audio/file parts count 0, which makes the count inexact.
  An image part adds no tokens of its own beyond the image's: gpt-4o bills a 128×64
  image with five words of text 267 = 255 + 12 (community.openai.com/t/1262691).
* assistant `tool_calls`: function name + arguments + `TOOL_CALL_OVERHEAD` (7) each,
  our own estimate; other string fields (e.g. `tool_call_id`) are counted as text,
  as the cookbook does for every field.
* `tools` (function schemas), by the cookbook's function-calling rule: per function
  `func_init` (7 for gpt-4o-like, 10 for gpt-3.5/gpt-4) + tokens of
  "name:description" (one trailing period dropped); if it has properties, 3, and per
  property 3 + tokens of "key:type:description" (+ for an enum, -3 and 3 + tokens per
  item); plus 12 once at the end. The server renders schemas in a hidden format; this
  reproduces the cookbook's examples exactly but only approximates nested schemas,
  which it does not count.

* other API dialects (`api`: `firsttoken.settings.APIS`): a Responses prompt is counted
  by the same rule (an input item is rendered as a chat message is; the system messages
  joined into `instructions` as the messages they were), and so is an Anthropic
  Messages one; neither rule is verified against its API, so neither count is exact.
  Claude models have no public tokenizer (`public_tokenizer`): they are counted with
  o200k_base, an estimate, which `Calibration` scales by what the server reports.

`ChatCount.exact` is True only for text-only messages on a family the cookbook
verified, without tools, sent as Chat Completions; `notes` lists what was estimated. Even "exact" counts can drift
when a provider changes its hidden formatting, which `Calibration` corrects.

Images (`image_tokens`, `image_target_size`)
--------------------------------------------
`image_tokens(model, width, height, detail) -> ImageCount` (tokens, the width and
height the model keeps, exact or not) and `image_target_size(model, width, height,
detail) -> (width, height)`: OpenAI's tile and patch rules and Anthropic's area rule,
each cited in `firsttoken.tokens.images`. The size comes from the image's header
(`firsttoken.image_header.read_image_header`, `read_data_url_header`), never its byte
length; a header that does not read raises `InvalidImage`, one declaring more than
`MAX_IMAGE_PIXELS` raises `ImageTooLarge`. An image given by URL (not its bytes) is
counted at the most an image can cost the model, as an estimate.

Fitting (`fit_messages`)
------------------------
Keeps system/developer messages and the current turn (the newest user message and
what follows it), then the newest history that fits; cuts the text of the oldest kept
message when that lets more of it fit; never drops the newest user message (cuts it
instead, and reports it). System messages are never cut: if they cannot fit,
`ContextBudgetExceeded` is raised. `FitResult` reports kept and dropped indices, the
tokens cut from each truncated message, and the final count.

Budget (`budget_for`, `estimate_tokens`, `rough_count_chat`)
------------------------------------------------------------
The budget a prompt is fitted to is the context window less a reply reserve. Without
an encoder, a prompt is estimated at ~4 characters a token, each Chinese or Japanese
character at ~0.75 of a token in o200k (Korean ~0.55), plus the chat overhead
(`rough_count_chat`, also the gateway's built-in model's count when it has no data).
"""

from __future__ import annotations

from firsttoken.tokens.bpe_data import (
    DATA_ENV_VAR,
    EncodingData,
    data_dir,
    load_encoding_data,
    parse_bpe_ranks,
)
from firsttoken.tokens.budget import DEFAULT_REPLY_RESERVE, budget_for, estimate_tokens, reply_reserve, rough_count_chat
from firsttoken.tokens.calibration import Calibration
from firsttoken.tokens.chat import (
    IMAGE_TOKENS_DEFAULT,
    IMAGE_TOKENS_LOW,
    TOOL_CALL_OVERHEAD,
    ChatCount,
    count_chat,
    count_chat_detailed,
)
from firsttoken.tokens.encoders import (
    ENCODINGS,
    Encoder,
    EncoderFactory,
    TiktokenEncoder,
    available_backends,
    backend_name,
    clear_encoder_cache,
    count,
    decode,
    encode,
    get_encoder,
    register_backend,
    resolve_encoding,
    set_backend,
    tiktoken_backend,
    truncate,
)
from firsttoken.tokens.fit import FitResult, TruncatedMessage, fit_messages
from firsttoken.tokens.images import ImageCount, image_target_size, image_tokens
from firsttoken.tokens.models import (
    DEFAULT_CONTEXT_WINDOW,
    ModelInfo,
    api_of_model,
    context_window,
    encoding_for_model,
    model_info,
    public_tokenizer,
)

__all__ = [
    # text
    "count",
    "decode",
    "encode",
    "truncate",
    # models
    "ModelInfo",
    "DEFAULT_CONTEXT_WINDOW",
    "api_of_model",
    "context_window",
    "encoding_for_model",
    "model_info",
    "public_tokenizer",
    "resolve_encoding",
    # chat
    "ChatCount",
    "FitResult",
    "TruncatedMessage",
    "count_chat",
    "count_chat_detailed",
    "fit_messages",
    "IMAGE_TOKENS_DEFAULT",
    "IMAGE_TOKENS_LOW",
    "TOOL_CALL_OVERHEAD",
    "Calibration",
    # images
    "ImageCount",
    "image_target_size",
    "image_tokens",
    # budget
    "DEFAULT_REPLY_RESERVE",
    "budget_for",
    "estimate_tokens",
    "reply_reserve",
    "rough_count_chat",
    # backends
    "ENCODINGS",
    "Encoder",
    "EncoderFactory",
    "TiktokenEncoder",
    "available_backends",
    "backend_name",
    "clear_encoder_cache",
    "get_encoder",
    "register_backend",
    "set_backend",
    "tiktoken_backend",
    # data
    "DATA_ENV_VAR",
    "EncodingData",
    "data_dir",
    "load_encoding_data",
    "parse_bpe_ranks",
]
