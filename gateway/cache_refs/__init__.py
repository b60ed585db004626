"""Cache references: system messages a client sends once and then names by hash.

The extension (bridge/PROTOCOL.md, "Cache references"):

* Every response under /v1/ carries ``x-firsttoken-gateway: cache-refs=1``
  (`AdvertiseRefs`), which is how a client tells this gateway from any other
  OpenAI-compatible server.
* A client identifies itself with ``x-firsttoken-client: <random id>``. From such a
  client, every system text that arrives in full is stored (`RefStore`), keyed by
  SHA-256 of its UTF-8 text.
* Such a client may then send ``{"role": "system", "x_firsttoken_ref": "sha256:<hex>"}``
  (no content) instead of the text. `expand_refs` replaces it with the stored text
  before the request is validated or forwarded (gateway/chat_body.py runs it, once per
  request), so neither the validation nor an upstream ever sees the extension. A
  reference the store does not hold is answered 409 with code ``cache_ref_unknown``;
  the client then sends the text again, in full.

Where a system text, and so a reference, may stand depends on the dialect (a `Site`
each, listed by `chat_sites`, `responses_sites`, `messages_sites`):

* Chat Completions: a system or developer message (the form above).
* Responses: `instructions` (``{"x_firsttoken_ref": …}`` in place of the string), and
  a system or developer input item (the message form).
* Anthropic Messages: `system` as a string (``{"x_firsttoken_ref": …}`` in place of
  it) or each of its text blocks (``{"type": "text", "x_firsttoken_ref": …}``, other
  fields such as ``cache_control`` kept). Its messages are user and assistant turns
  only, so a reference there is a 400.

Each system text at those places that arrives in full is stored: a string content,
instructions or system, or one text block.

Isolation: entries are kept per client, its `owner` (gateway/access.py: SHA-256 over
the client's credential and its client id), so a reference resolves only for the
client that sent the text. Knowing or guessing a hash gives nothing to anyone else.
The store is bounded per client (entries, bytes) and in all (bytes), least recently
used first out.

One idea a module: `sites` (where references stand, their expansion: pure), `store`
(the texts, in memory or Redis, bounded), `advert` (the response header).
"""

from firsttoken.cache.refs import ADVERTISED, CLIENT_HEADER, GATEWAY_HEADER, REF_FIELD, UNKNOWN_REF_CODE

from .advert import AdvertiseRefs
from .sites import Site, chat_sites, expand_refs, messages_sites, referenced, responses_sites, system_entries
from .store import Entry, RefLimits, RefStore, RefStores, SharedRefStore, entry_of

__all__ = [
    "CLIENT_HEADER",
    "GATEWAY_HEADER",
    "ADVERTISED",
    "REF_FIELD",
    "UNKNOWN_REF_CODE",
    "RefLimits",
    "RefStore",
    "AdvertiseRefs",
    "Entry",
    "entry_of",
    "RefStores",
    "SharedRefStore",
    "Site",
    "chat_sites",
    "expand_refs",
    "messages_sites",
    "referenced",
    "responses_sites",
    "system_entries",
]
