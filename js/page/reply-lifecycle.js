// @ts-check
// Replies through the page's lifecycle: going away, frozen, coming back, back online.
//
// The text so far is saved on `pagehide`, `freeze` and when the page is hidden (a
// phone's WebView may be killed in the background with no other warning), with the
// answer's resumable stream and the last event painted (`stream`, from `chat.stream`
// and `chat.delta.event`: bridge/PROTOCOL.md, "Resumable streams"). The answer goes on
// on the gateway meanwhile. On the next visit (a reload, a WebView the OS or a host
// restarted) it is taken up from there when its conversation is shown (replies.js,
// `resumeStream`): the rest streams in place, nothing doubled, nothing sent again. A
// page that comes back from being frozen (`resume`, or the back/forward cache), or a
// device back `online`, asks the core to reconnect its answers in flight
// (`chat.reconnect`). Only an answer the gateway no longer has (`stream_gone`), or one
// with no stream (another server), is shown `interrupted`, with Retry: never sent again
// by itself.
// https://developer.chrome.com/docs/web-platform/page-lifecycle-api

/** Keep `replies` (replies.js) through the lifecycle of `win`'s page; `connection`:
 * offline.js's, whose `online` event also lets what waits in the outbox go. */
export function followLifecycle(replies, { win, connection }) {
  connection?.addEventListener('online', () => {
    replies.outboxSender.online();
    reconnectAll(replies, { interrupt: false });
    replies.outboxSender.flush();
  });
  // Saved while the page can still save: `pagehide` (reload, navigation, bfcache),
  // `freeze` (Chromium's lifecycle: a background tab or app frozen), and `hidden`,
  // the last event a phone's WebView reliably gets before it may be killed.
  const save = () => saveInFlight(replies);
  win.addEventListener('pagehide', save);
  win.document.addEventListener('freeze', save);
  win.document.addEventListener('visibilitychange', () => {
    if (win.document.visibilityState === 'hidden') save();
  });
  win.document.addEventListener('resume', () => reconnectAll(replies));
  win.addEventListener('pageshow', (e) => {
    if (e.persisted) reconnectAll(replies);
  });
}

/** Save the answers in flight as they are now (their text so far, and `streaming`, which
 * a next visit reads as interrupted). */
function saveInFlight(replies) {
  if (!replies.live.size) return;
  replies.painter.paint(false);
  for (const r of replies.live.values()) {
    r.store.rescue?.(r.reply.entry); // synchronously: the IndexedDB write may not commit
    r.store.save(r.reply.entry);
  }
}

/** The page was frozen and came back, or the device is back online: the connections
 * of its answers in flight may be dead. Those on a resumable stream reconnect (the
 * core resumes after the last event it took); the others, unless `interrupt` is
 * false, are stopped and shown interrupted (their connection did not survive, and
 * before any text the core would otherwise send the request again by itself). */
function reconnectAll(replies, { interrupt = true } = {}) {
  for (const [id, r] of replies.live) {
    if (r.reply.entry.stream) {
      replies.link.send({ type: 'chat.reconnect', id });
    } else if (interrupt) {
      r.interrupted = true;
      replies.abort(id);
    }
  }
}
