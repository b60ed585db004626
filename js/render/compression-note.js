// @ts-check
// What compression did to a prompt, said under the user's message in words a person
// reads at a glance: "sent 1,204 tokens instead of 1,256 (−4%)", from `chat.prepared`
// (bridge/PROTOCOL.md); "sent ≈ 1,204 tokens instead of ≈ 1,256" when the core says its
// counts are estimates (`exact: false`: Claude, whose tokenizer is not published). A tap (or Enter) on it opens a short explanation: a <details>,
// which every browser and screen reader already knows how to open, announce and close.

import { formatNumber, t } from '../page/i18n.js';

// The words are the reader's language's (js/page/i18n/*.js, `compression.*`): each
// phrase and sentence one whole message, with its count in it.
/** @type {Record<string, import('../page/i18n.js').Key>} */
const PASS_WORDS = {
  json: 'compression.pass.json',
  code: 'compression.pass.code',
  docs: 'compression.pass.docs',
  tables: 'compression.pass.tables',
  whitespace: 'compression.pass.whitespace',
  repeats: 'compression.pass.repeats',
};
const number = (n) => formatNumber(Math.round(n));

// The report's `removed.comment_kinds` (py/firsttoken/compress/report.py), one and many.
/** @type {Record<string, import('../page/i18n.js').Key>} */
const COMMENT_KINDS = {
  remark: 'compression.kind.remark',
  license: 'compression.kind.license',
  commented_out_code: 'compression.kind.commentedOutCode',
  decorative: 'compression.kind.decorative',
  intent: 'compression.kind.intent',
};
const counted = (n, key) => t(key, { count: n });
const list = (parts) => parts.join(t('list.separator'));

/** What kind of text compression took out of code, with the counts, from the
 * report's `removed` ("12 comments (7 remarks, 1 licence header, ...), 2 docstrings
 * and 5 blank lines"), or '' when it took none or the report predates the counts. */
export function removedSummary(report) {
  const removed = report?.removed;
  if (!removed) return '';
  const parts = [];
  if (removed.comments > 0) {
    const kinds = Object.entries(removed.comment_kinds ?? {})
      .filter(([kind, n]) => n > 0 && COMMENT_KINDS[kind])
      .map(([kind, n]) => counted(n, COMMENT_KINDS[kind]));
    const comments = counted(removed.comments, 'compression.comments');
    parts.push(kinds.length ? t('compression.commentsOfKinds', { comments, kinds: list(kinds) }) : comments);
  }
  if (removed.docstrings > 0) parts.push(counted(removed.docstrings, 'compression.docstrings'));
  if (removed.blank_lines > 0) parts.push(counted(removed.blank_lines, 'compression.blankLines'));
  if (!parts.length) return '';
  return parts.length === 1 ? parts[0] : t('list.and', { list: list(parts.slice(0, -1)), last: parts.at(-1) });
}

/** The figures of the note: `{sent, instead, unit, percent, estimated}`, or null when
 * nothing was saved. `estimated`: token counts the core did not call exact. */
export function compressionFigures(msg) {
  const saved = Array.isArray(msg.saved) ? msg.saved.reduce((a, b) => a + (b > 0 ? b : 0), 0) : 0;
  if (!(saved > 0)) return null;
  const report = msg.compression;
  let sent;
  let unit = msg.saved_unit === 'tokens' ? 'tokens' : 'characters';
  if (unit === 'tokens' && typeof msg.prompt_tokens === 'number' && !msg.dropped?.length && !msg.truncated?.length) {
    sent = msg.prompt_tokens; // the request as it left, chat format included
  } else if (unit === 'tokens' && typeof report?.tokens_after === 'number') {
    sent = report.tokens_after;
  } else if (typeof report?.chars_after === 'number') {
    unit = 'characters';
    sent = report.chars_after;
    return figures(sent, report.chars_before, unit, false);
  } else {
    return null;
  }
  return figures(sent, sent + saved, unit, msg.exact === false);
}

function figures(sent, instead, unit, estimated) {
  if (!(instead > sent)) return null;
  // Never "−0%" for a real saving.
  const percent = Math.max(1, Math.round((100 * (instead - sent)) / instead));
  return { sent, instead, unit, percent, estimated };
}

/** The note's one line. */
export function compressionSummary(f) {
  const about = (n) => (f.estimated ? t('compression.about', { n: number(n) }) : number(n));
  return t(f.unit === 'tokens' ? 'compression.sentTokens' : 'compression.sentChars',
    { sent: about(f.sent), instead: about(f.instead), percent: f.percent });
}

/** Show (or replace) the note under `li`, the user's message; returns it, or null. */
export function showCompressionNote(li, msg) {
  for (const child of li.children) if (child.classList.contains('saved')) child.remove();
  const f = compressionFigures(msg);
  if (!f) return null;
  const details = document.createElement('details');
  details.className = 'saved';
  const summary = document.createElement('summary');
  summary.textContent = compressionSummary(f);
  const how = (msg.compression?.passes ?? [])
    .filter((p) => (p.chars > 0 || p.tokens > 0) && PASS_WORDS[p.name])
    .map((p) => t(PASS_WORDS[p.name]));
  const text = document.createElement('p');
  const removed = removedSummary(msg.compression);
  const kept = msg.compression?.level !== 'max' && msg.compression?.removed?.comments > 0;
  text.textContent = [
    how.length ? t('compression.howWith', { how: list(how) }) : t('compression.how'),
    removed ? t('compression.removed', { removed }) : '',
    kept ? t('compression.kept') : '',
    t('compression.why'),
    t('compression.typed'),
    t('compression.off'),
  ].filter(Boolean).join(t('compression.sentenceGap'));
  details.append(summary, text);
  li.append(details);
  return details;
}
