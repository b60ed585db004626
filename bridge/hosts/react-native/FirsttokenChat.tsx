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

import React, { forwardRef, useImperativeHandle, useRef } from 'react';
import { WebView, WebViewMessageEvent } from 'react-native-webview';

export type FirsttokenEvent = { v: 1; type: string; id?: string; [field: string]: unknown };
/** The API dialect a chat speaks (bridge/PROTOCOL.md, "settings": `api`); null in
 * `settings.set` clears it, and the model decides. */
export type FirsttokenApi = 'chat_completions' | 'responses' | 'anthropic_messages';
export type FirsttokenHandle = { send(message: Record<string, unknown>): void };

export const FirsttokenChat = forwardRef<FirsttokenHandle, { url: string; onEvent(e: FirsttokenEvent): void }>(
  function FirsttokenChat({ url, onEvent }, ref) {
    const web = useRef<WebView>(null);
    useImperativeHandle(ref, () => ({
      send(message) {
        const text = JSON.stringify({ ...message, v: 1 });
        // JSON.stringify of a string is a valid JS string literal: the text is passed, never run.
        web.current?.injectJavaScript(`window.firsttoken.post(${JSON.stringify(text)}); true;`);
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
        onEvent(parsed as FirsttokenEvent);
      }
    };
    return <WebView ref={web} source={{ uri: url }} onMessage={onMessage} javaScriptEnabled domStorageEnabled />;
  },
);

// Usage:
//   const chat = useRef<FirsttokenHandle>(null);
//   <FirsttokenChat ref={chat} url="https://chat.example.com/" onEvent={(e) => { if (e.type === 'ready') … }} />
//   chat.current?.send({ type: 'settings.set', id: 's', settings: { model: 'gpt-4o', api_key: key } });
//   chat.current?.send({ type: 'connection.warm', id: 'w' }); // open the API's connection now
//   const api: FirsttokenApi = 'anthropic_messages';
//   chat.current?.send({ type: 'settings.set', id: 's', settings: { base_url: 'https://api.anthropic.com/v1', model: 'claude-sonnet-4-5', api, api_key: key } });
//   chat.current?.send({ type: 'chat.send', id: '1', messages: [{ role: 'user', content: 'Hi' }] });
