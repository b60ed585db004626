// @ts-check
// The envelope of a protocol event, checked where the page receives it
// (bridge/PROTOCOL.md, "Envelope"): one JSON object sent as text, `v` 1, a `type` that
// this page knows, and an `id` that is a string when there is one. What fails is
// dropped, not acted on: a message the page cannot read must neither throw in the middle
// of a frame nor be taken for another one. Fields beyond the envelope are each event's
// own business (unknown ones are ignored, as the protocol asks).

import { EVENTS, PROTOCOL_VERSION } from './protocol.js';

/** Events made in JavaScript, not by the core (PROTOCOL.md, "Boot"): the boot loader's
 * and the snapshot maker's. */
const FROM_JAVASCRIPT = ['boot.progress'];

/** Every event type that reaches the page: the core's (js/link/protocol.js) and
 * those made in JavaScript. */
export const EVENT_TYPES = Object.freeze([...Object.keys(EVENTS), ...FROM_JAVASCRIPT]);
const KNOWN = new Set(EVENT_TYPES);

/** `text` read as an event: `{event}`, or `{reason}` saying why it is not one. Never throws. */
export function readEvent(text) {
  if (typeof text !== 'string') return { reason: `not text but ${text === null ? 'null' : typeof text}` };
  let msg;
  try {
    msg = JSON.parse(text);
  } catch {
    return { reason: 'not JSON' };
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return { reason: 'not a JSON object' };
  if (msg.v !== PROTOCOL_VERSION) return { reason: `protocol version ${short(msg.v)}, not ${PROTOCOL_VERSION}` };
  if (typeof msg.type !== 'string' || !KNOWN.has(msg.type)) return { reason: `unknown type ${short(msg.type)}` };
  if (Object.hasOwn(msg, 'id') && typeof msg.id !== 'string') return { reason: `id ${short(msg.id)} is not a string` };
  return { event: msg };
}

const short = (value) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
};
