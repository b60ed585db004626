// The clipboard, for Copy on messages (js/page/messages.js) and Copy code on code
// blocks (code-blocks.js): one way to copy, with one fallback.

/** Put `text` on the clipboard; resolves to whether it worked. The asynchronous
 * Clipboard API where there is one and it is allowed (secure contexts); else, or if it
 * refuses, the old way: a selected, off-screen textarea and `execCommand('copy')`,
 * which WebKit and Chromium still honour inside a click (it is the only way in an
 * insecure context, and where a WebView leaves `navigator.clipboard` out). */
export async function copyText(text) {
  if (globalThis.isSecureContext && navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch { /* denied or unsupported: the old way */ }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.setAttribute('aria-hidden', 'true');
  area.className = 'copy-buffer';
  const focused = document.activeElement;
  document.body.append(area);
  area.select();
  area.setSelectionRange(0, text.length);
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch { /* not supported */ }
  area.remove();
  focused?.focus?.({ preventScroll: true });
  return ok;
}
