// @ts-check
// What compression did to a prompt, said under the user's message in words a person
// reads at a glance: "sent 1,204 tokens instead of 1,256 (−4%)", from `chat.prepared`
// (bridge/PROTOCOL.md); "sent ≈ 1,204 tokens instead of ≈ 1,256" when the core says its
// counts are estimates (`exact: false`: Claude, whose tokenizer is not published). A tap (or Enter) on it opens a short explanation: a <details>,
// which every browser and screen reader already knows how to open, announce and close.

const PASS_WORDS = {
  json: 'pretty JSON written compactly',
  code: 'comments and blank lines dropped from code',
  docs: 'docstrings and the remaining comments dropped',
  tables: 'table padding removed',
  whitespace: 'runs of spaces and blank lines squeezed',
  repeats: 'text pasted again kept once',
};
const number = (n) => Math.round(n).toLocaleString('en');

// The report's `removed.comment_kinds` (py/firsttoken/compress/report.py), one and many.
const COMMENT_KINDS = {
  remark: ['remark', 'remarks'],
  license: ['licence header', 'licence headers'],
  commented_out_code: ['block of commented-out code', 'blocks of commented-out code'],
  decorative: ['rule or banner', 'rules or banners'],
  intent: ['TODO or question', 'TODOs or questions'],
};
const counted = (n, [one, many]) => `${number(n)} ${n === 1 ? one : many}`;

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
    parts.push(counted(removed.comments, ['comment', 'comments']) + (kinds.length ? ` (${kinds.join(', ')})` : ''));
  }
  if (removed.docstrings > 0) parts.push(counted(removed.docstrings, ['docstring', 'docstrings']));
  if (removed.blank_lines > 0) parts.push(counted(removed.blank_lines, ['blank line', 'blank lines']));
  if (!parts.length) return '';
  return parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
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
  const about = f.estimated ? '≈ ' : '';
  return `sent ${about}${number(f.sent)} ${f.unit} instead of ${about}${number(f.instead)} (−${f.percent}%)`;
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
    .map((p) => PASS_WORDS[p.name]);
  const text = document.createElement('p');
  const removed = removedSummary(msg.compression);
  const kept = msg.compression?.level !== 'max' && msg.compression?.removed?.comments > 0;
  text.textContent = [
    `Before sending, the conversation was compressed${how.length ? `: ${how.join(', ')}` : ''}.`,
    removed ? `Taken out of code: ${removed}.` : '',
    kept ? 'Comments with a TODO, FIXME, NOTE or a question were kept.' : '',
    'The model reads the same meaning for fewer tokens, which costs less and leaves more room in its context.',
    'What you typed is kept as you typed it, here and in the history.',
    'Settings has the switch to turn compression off.',
  ].filter(Boolean).join(' ');
  details.append(summary, text);
  li.append(details);
  return details;
}
