// React Native: the firsttoken page in react-native-webview, with the protocol relayed
// both ways (bridge/PROTOCOL.md, "Hosts"):
//
//   page → app   window.ReactNativeWebView.postMessage(text)  → onMessage
//   app → page   injectJavaScript("window.firsttoken.post(<JSON string literal>)")
//
// `source` is the page's URL: a firsttoken gateway, or the bundle (`make bundle`) served
// by the app (on iOS, a folder reference loaded with `originWhitelist` and
// `allowingReadAccessToURL`; on Android, WebViewAssetLoader as in ../android).
//
// Unverified here: no React Native toolchain on the machines that build firsttoken.

import React, { forwardRef, useCallback, useImperativeHandle, useRef, useState } from 'react';
import { WebView, WebViewMessageEvent } from 'react-native-webview';
import { Vibration } from 'react-native';

export type FirsttokenEvent = { v: 1; type: string; id?: string; [field: string]: unknown };
/** The API dialect a chat speaks (bridge/PROTOCOL.md, "settings": `api`); null in
 * `settings.set` clears it, and the model decides. */
export type FirsttokenApi = 'chat_completions' | 'responses' | 'anthropic_messages';
export type FirsttokenHandle = {
  send(message: Record<string, unknown>): void;
  /** Open conversation `id` (a reply-ready notification's tap): the page opens the one
   * its URL fragment names, `#conversation=<id>` (bridge/PROTOCOL.md, "Reply ready"). */
  openConversation(id: string): void;
  /** Forward what another app shared (a share intent or extension, e.g. through
   * react-native-share-menu) into the composer (bridge/PROTOCOL.md, "Share, for hosts"):
   * the page answers `composer.shared`, or an `error` with nothing changed. Only http(s)
   * links; images as base64 JPEG, at most 20, the whole under 8 MiB. */
  share(item: FirsttokenShare): void;
};
/** A share for the page's composer; `conversation`: 'new', or an id the app knows. */
export type FirsttokenShare = {
  text?: string; url?: string; images?: { data: string; type: string; name?: string }[]; conversation?: 'new' | string;
};
/** The phone's own speech recogniser (bridge/PROTOCOL.md, "Dictation, for hosts"), e.g.
 * @react-native-voice/voice: `start` listens in `locale` and calls `emit` with each
 * result (the utterance so far; `final` when settled) or an error ('denied',
 * 'unavailable', 'failed'); `stop` ends it, its last result final. */
export type FirsttokenRecognizer = {
  start(locale: string, emit: (r: { text?: string; final?: boolean; listening?: boolean; error?: string }) => void): void;
  stop(): void;
};
/** A local notification for `reply.ready`, posted by the app's notification library
 * (notifee: displayNotification({ id, title, body, data: { conversation } })): `id` is
 * one per conversation, so a later answer replaces it. */
export type FirsttokenNotification = { id: string; title: string; body: string; conversation: string };
/** How hard a reasoning model thinks: the page's Thinking levels, set with `settings.set`
 * (`reasoning`; `reasoning_summary` false asks for no summary of the thinking); null
 * clears it (bridge/PROTOCOL.md, "Reasoning, for hosts"). */
export type FirsttokenThinking = 'auto' | 'off' | 'low' | 'medium' | 'high';

export const FirsttokenChat = forwardRef<
  FirsttokenHandle,
  { url: string; onEvent(e: FirsttokenEvent): void; notify?(n: FirsttokenNotification): void; recognizer?: FirsttokenRecognizer }
>(
  function FirsttokenChat({ url, onEvent, notify, recognizer }, ref) {
    const web = useRef<WebView>(null);
    const post = (message: Record<string, unknown>) => {
      const text = JSON.stringify({ ...message, v: 1 });
      // JSON.stringify of a string is a valid JS string literal: the text is passed, never run.
      web.current?.injectJavaScript(`window.firsttoken.post(${JSON.stringify(text)}); true;`);
    };
    useImperativeHandle(ref, () => ({
      send: post,
      share(item) {
        post({ type: 'composer.share', id: `share-${Date.now()}`, conversation: 'new', ...item });
      },
      openConversation(id) {
        // A JSON string literal again: the id is passed, never run.
        web.current?.injectJavaScript(`location.hash = 'conversation=' + encodeURIComponent(${JSON.stringify(id)}); true;`);
      },
    }));
    const onMessage = (event: WebViewMessageEvent) => {
      // Only the page we loaded speaks for it (bridge/PROTOCOL.md, "Who is a host"):
      // not a document the view was navigated to.
      if (new URL(event.nativeEvent.url).origin !== new URL(url).origin) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(event.nativeEvent.data);
      } catch {
        return;
      }
      if (parsed && typeof parsed === 'object' && typeof (parsed as FirsttokenEvent).type === 'string') {
        // The page's haptics (bridge/PROTOCOL.md, "Haptics, for hosts"), paced by the
        // page; the app's own switch: settings.set {"haptics": false}. (Not compiled here.)
        if ((parsed as FirsttokenEvent).type === 'haptic') {
          Vibration.vibrate((parsed as { kind?: unknown }).kind === 'error' ? [0, 30, 60, 30] : 10);
          return;
        }
        // The screen kept on while the page's answer streams ("Screen awake, for hosts"):
        // with expo-keep-awake, activateKeepAwakeAsync() / deactivateKeepAwake(); here the
        // app gets the event (onEvent) to do it. (Not compiled here.)
        // reply.ready: an answer done while the page was hidden (the app in the
        // background; the page sends it only then): a local notification through `notify`.
        const e = parsed as FirsttokenEvent;
        // Say the app's recogniser to the page, once per page load (its `ready` without
        // our id); then the page's microphone asks it to listen (not compiled here).
        if (e.type === 'ready' && recognizer && e.id !== 'capabilities') {
          post({ type: 'hello', id: 'capabilities', capabilities: { dictation: true } });
        }
        if (e.type === 'composer.dictate' && recognizer) {
          if (e.on === true) {
            recognizer.start(typeof e.locale === 'string' ? e.locale : 'en', (r) => post({ type: 'composer.dictation', ...r }));
          } else {
            recognizer.stop();
          }
          return;
        }
        if (e.type === 'reply.ready' && notify) {
          const c = (e.conversation ?? {}) as { id?: unknown; title?: unknown };
          const conversation = typeof c.id === 'string' ? c.id : '';
          const title = typeof c.title === 'string' && c.title ? c.title : 'Reply ready';
          notify({ id: `firsttoken.reply.${conversation}`, title, body: typeof e.text === 'string' ? e.text : '', conversation });
        }
        onEvent(e);
      }
    };
    return <WebView ref={web} source={{ uri: url }} onMessage={onMessage} javaScriptEnabled domStorageEnabled />;
  },
);

/** What one reply is doing (bridge/PROTOCOL.md, "Reasoning, for hosts"): `thinking`
 * from the send until the first answer text, reasoning or not; `cut` when the output
 * limit went on thinking and no answer came (send it again with a larger `max_tokens`). */
export type ReplyStatus = {
  phase: 'thinking' | 'answering' | 'done' | 'cut' | 'failed';
  started: number; // Date.now() at the send (or at the observed chat's chat.prepared)
  reasoning: string; // so far; empty for a model that hides it, or a plain model
  thoughtForMs?: number; // from the send to the first answer text (or the end)
  error?: string; // chat.error's code
};

/** The next state of a reply, given one event about it (pure: usable in a reducer). */
export function nextReplyStatus(reply: ReplyStatus | undefined, e: FirsttokenEvent, now = Date.now()): ReplyStatus {
  const r: ReplyStatus = reply ?? { phase: 'thinking', started: now, reasoning: '' };
  if (e.type === 'chat.delta') {
    const reasoning = r.reasoning + (typeof e.reasoning === 'string' ? e.reasoning : '');
    if (r.phase === 'thinking' && typeof e.text === 'string' && e.text) {
      return { ...r, reasoning, phase: 'answering', thoughtForMs: now - r.started };
    }
    return { ...r, reasoning };
  }
  if (e.type === 'chat.done') {
    if (r.phase !== 'thinking') return { ...r, phase: 'done' };
    return { ...r, phase: e.finish_reason === 'length' ? 'cut' : 'done', thoughtForMs: now - r.started };
  }
  if (e.type === 'chat.error') return { ...r, phase: 'failed', error: String((e.error as { code?: string })?.code ?? 'error') };
  return r;
}

/** The line to show beside a reply: "Thinking… 3 s" until its answer begins, then
 * "Thought for 12 s" if it reasoned; null once there is just an answer to read. */
export function replyLabel(r: ReplyStatus, now = Date.now()): string | null {
  if (r.phase === 'thinking') return `Thinking… ${Math.floor((now - r.started) / 1000)} s`;
  if (r.phase === 'cut') return 'The model spent its whole budget thinking';
  if ((r.phase === 'answering' || r.phase === 'done') && r.reasoning && r.thoughtForMs !== undefined) {
    return `Thought for ${Math.max(1, Math.round(r.thoughtForMs / 1000))} s`;
  }
  return null;
}

/** Replies by request id: call `sent(id)` as the app sends a chat ("Thinking…" before any
 * byte) and `observe(e)` with every event (the page's chats observed start at their
 * `chat.prepared`). A label that counts seconds needs a 1 s re-render as well. */
export function useReplyStatus() {
  const [replies, setReplies] = useState<Record<string, ReplyStatus>>({});
  const sent = useCallback((id: string) => {
    setReplies((all) => ({ ...all, [id]: { phase: 'thinking', started: Date.now(), reasoning: '' } }));
  }, []);
  const observe = useCallback((e: FirsttokenEvent) => {
    const id = e.id;
    if (!id || !['chat.prepared', 'chat.delta', 'chat.done', 'chat.error'].includes(e.type)) return;
    setReplies((all) => ({ ...all, [id]: nextReplyStatus(all[id], e) }));
  }, []);
  return { replies, sent, observe };
}

// Usage:
//   const chat = useRef<FirsttokenHandle>(null);
//   <FirsttokenChat ref={chat} url="https://chat.example.com/" onEvent={(e) => { if (e.type === 'ready') … }} />
//   chat.current?.send({ type: 'settings.set', id: 's', settings: { model: 'gpt-4o', api_key: key } });
//   chat.current?.send({ type: 'connection.warm', id: 'w' }); // open the API's connection now
//   const api: FirsttokenApi = 'anthropic_messages';
//   chat.current?.send({ type: 'settings.set', id: 's', settings: { base_url: 'https://api.anthropic.com/v1', model: 'claude-sonnet-4-5', api, api_key: key } });
//   chat.current?.send({ type: 'chat.send', id: '1', messages: [{ role: 'user', content: 'Hi' }] });
//
// A reasoning model, with "Thinking…" until its answer begins:
//   const thinking: FirsttokenThinking = 'high';
//   chat.current?.send({ type: 'settings.set', id: 't', settings: { reasoning: thinking, reasoning_summary: true } });
//   const status = useReplyStatus();
//   <FirsttokenChat ref={chat} url={url} onEvent={status.observe} />
//   chat.current?.send({ type: 'chat.send', id: '2', messages }); status.sent('2');
//   const line = status.replies['2'] && replyLabel(status.replies['2']); // "Thinking… 2 s", "Thought for 4 s", null
//   <Text>{line}</Text> and, while thinking, <Text numberOfLines={1}>{status.replies['2'].reasoning.slice(-80)}</Text>
