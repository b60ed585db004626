// Main thread of bench/tokens_page.html: starts the Python worker and lets a test or a
// benchmark run Python in it, `await window.tokensPage.run(code, arg)` (Playwright's
// evaluate). `<html data-ready="yes">` marks the worker ready; "error" a failed start.

const worker = new Worker(new URL('tokens_page_worker.mjs', import.meta.url), { type: 'module' });
const waiting = new Map();
let nextId = 0;

worker.onmessage = ({ data }) => {
  if (data.type === 'ready') {
    document.documentElement.dataset.ready = 'yes';
    window.tokensPage.boot = data.boot;
    return;
  }
  if (data.type === 'failed') {
    window.tokensPage.error = data.error;
    document.documentElement.dataset.ready = 'error';
    return;
  }
  const { resolve, reject } = waiting.get(data.id);
  waiting.delete(data.id);
  if (data.ok) resolve(data.result);
  else reject(new Error(data.error));
};

window.tokensPage = {
  // Runs `code` (Python, top-level await allowed) with the string `arg` bound to ARG;
  // resolves to the value of its last expression, which must be a str (e.g. JSON).
  run(code, arg = '') {
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, code, arg });
    });
  },
};
