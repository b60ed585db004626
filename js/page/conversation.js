// What goes to the model, and the shape of the conversation as kept.
//
// The conversation is a list of turns: each user message is followed by exactly one
// answer entry, whatever became of it. An answer entry says how it ended in `state`:
//
//   queued       in the outbox (outbox.js): sent while offline, waiting for a connection
//   streaming    sent; its text arrives (or Python is still starting). With `stream`
//                ({id, base_url, after}: a firsttoken gateway runs it as a resumable
//                stream, and `after` is the last event painted), a page that went away
//                takes it up again when it shows the conversation (replies.js)
//   done         finished
//   error        failed: `error` ({code, message, status?, timeout_s?}) says why; its
//                `content` is whatever text arrived before (possibly none)
//   stopped      the user pressed Stop
//   interrupted  the page went away while it streamed (a reload, a WebView killed or
//                suspended in the background) and it could not be resumed: never sent
//                again by itself
//
// Keeping every answer entry, failed or empty, is what makes the conversation well
// formed after any failure and reload: the prompt keeps its answer (with its error and
// a Retry) instead of becoming an orphan that the next request would send beside the
// next prompt as two user turns in a row. Which turns go to the model is then decided
// here, by turn, not by looking at neighbouring roles.
//
// An answer's reasoning (`reasoning`, `reasoning_ms`: what the model thought, shown in
// its thinking row) is never sent back: it is the model's scratch work, and re-sent it
// costs context on every later turn and teaches models to imitate it (hermes-agent
// PR#9306: 55% of assistant messages began with `<think>` once it went back). What some
// APIs demand back (Anthropic's signed thinking blocks, Responses' encrypted reasoning
// items, DeepSeek's and OpenRouter's fields) is `replay`, opaque, as `chat.done.replay`
// gave it: it rides on its assistant message, and the core puts it where that API wants
// it, or drops it when the API or the model changed (bridge/PROTOCOL.md).
//
// The system prompt comes from Settings (a setting, not part of the conversation:
// changing it applies from the next message on). The core prepares it once and keeps it
// by hash, so a long one costs nothing to count or compress again.

import { validReplay } from './store/records.js';

/** Answer states that end a reply (the others are still on their way). */
export const SETTLED = new Set(['done', 'error', 'stopped', 'interrupted']);

/** OpenAI chat messages for `chat.send` and `tokens.count`: the system prompt, then
 * each turn whose answer has text (a partial answer counts: the user saw it), then the
 * turn being answered (a user message with no answer after it, the last one), then
 * `extra` (a draft being counted); system entries of the conversation stay where they
 * are. A turn whose answer has no text is left out whole, so no request can carry two
 * user turns in a row, by construction. `urlOf(image)`: the URL an image goes with
 * (`withImages`). */
export function conversation(system, entries, extra = [], urlOf = undefined) {
  const turn = (m) => turnOf(m, urlOf);
  const messages = system ? [{ role: 'system', content: system }] : [];
  for (let i = 0; i < entries.length; i++) {
    const m = entries[i];
    if (m.role === 'system') {
      // Kept in place (a conversation may start with its own, as tests and hosts seed).
      if (m.content) messages.push(turn(m));
      continue;
    }
    if (m.role !== 'user') continue;
    const answer = entries[i + 1];
    if (answer?.role === 'assistant') {
      if (answer.content) messages.push(turn(m), turn(answer));
      i += 1;
    } else if (i === entries.length - 1 && (m.content || m.images?.length)) {
      messages.push(turn(m)); // the turn being answered
    }
  }
  if (extra[0]?.role === 'user' && messages.at(-1)?.role === 'user') messages.pop();
  messages.push(...extra);
  return messages;
}

// A user message's images (attachments.js) go as Chat Completions content parts after its
// text; the core turns them into each API's own image part (firsttoken.stream.dialects).
const turnOf = ({ role, content, images, replay }, urlOf) => {
  const message = images?.length ? { role, content: withImages(content, images, urlOf) } : { role, content };
  if (role === 'assistant' && validReplay(replay)) message.replay = replay;
  return message;
};

/** `text` and `images` as content parts: the text part (when there is text), then one
 * `image_url` part an image; its URL is `urlOf(image)` (the live count sends headers
 * only: js/images/header.js, `headerOnly`). */
export function withImages(text, images, urlOf = (image) => image.url) {
  const parts = text ? [{ type: 'text', text }] : [];
  for (const image of images) {
    const url = urlOf(image);
    parts.push({ type: 'image_url', image_url: image.detail ? { url, detail: image.detail } : { url } });
  }
  return parts;
}

/** Make `entries` (as stored, oldest first) well formed, in place, and say whether
 * anything changed: every user message gets an answer entry (an orphan from older
 * versions gets an `interrupted` one, so it can be retried); an answer that was on its
 * way when the page went away (`streaming`, or an older version's `incomplete`)
 * becomes `interrupted`, unless it is in `inFlight` (still streaming in this page, or
 * about to be resumed from its stream).
 * `queued` answers stay: the outbox decides about them. */
export function wellFormed(entries, inFlight = new Set()) {
  let changed = false;
  for (let i = 0; i < entries.length; i++) {
    const m = entries[i];
    if (m.role === 'user' && entries[i + 1]?.role !== 'assistant') {
      entries.splice(i + 1, 0, { role: 'assistant', content: '', state: 'interrupted' });
      changed = true;
    } else if (m.role === 'assistant') {
      if (m.incomplete || (m.state === 'streaming' && !inFlight.has(m))) {
        m.state = 'interrupted';
        delete m.incomplete;
        changed = true;
      } else if (!m.state) {
        m.state = 'done';
        changed = true;
      }
    }
  }
  return changed;
}

/** The user message an answer entry answers (the entry before it), or null. */
export function promptOf(entries, answer) {
  const at = entries.indexOf(answer);
  return at > 0 && entries[at - 1].role === 'user' ? entries[at - 1] : null;
}

/** A fresh id for an entry (the outbox refers to answers by it). */
export function newEntryId() {
  return globalThis.crypto?.randomUUID?.() ?? `e${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
}
