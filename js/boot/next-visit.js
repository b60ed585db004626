// @ts-check
// What the page does once Python is ready, for the next visit: register the service
// worker (sw.js: the page offline), and, when Python did not come from a snapshot, have
// one made in a worker of its own (snapshot-worker.js). Both wait until Python is ready
// to keep them off the boot's critical path; a failure of either costs only the next
// visit's speed, never this one.

/** Register the service worker at `url` (scope: its folder). A page an app serves from
 * its own bundle (a custom scheme: `make bundle`) has every file locally already, and
 * service workers run only for http(s): there is nothing to register. */
export async function registerServiceWorker(url) {
  if (!url || typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return;
  if (!/^https?:$/.test(new URL(url).protocol)) return;
  try {
    await navigator.serviceWorker.register(url, { scope: new URL('./', url).href });
  } catch (error) {
    console.warn('firsttoken: service worker not registered:', error && error.message || error);
  }
}

let maker = null;

/** Make the interpreter's memory snapshot in the background. `report(text)` gets the
 * maker's one protocol message (`boot.progress`, stage `snapshot.stored` or
 * `snapshot.failed`), after which the maker is ended. */
export async function makeSnapshotInBackground(report) {
  if (maker || typeof caches === 'undefined') return;
  // Where Cache Storage is refused (a cross-site frame with third-party storage blocked:
  // every call rejects with SecurityError), a snapshot could not be kept: booting a
  // second interpreter to make one would cost a phone seconds of CPU for nothing.
  try {
    await caches.keys();
  } catch {
    return;
  }
  if (maker) return;
  maker = new Worker(new URL('./snapshot-worker.js', import.meta.url), { type: 'module' });
  const started = maker;
  const end = () => {
    started.terminate();
    if (maker === started) maker = null;
  };
  started.addEventListener('message', (event) => {
    report(event.data);
    end();
  });
  started.addEventListener('error', (event) => {
    event.preventDefault(); // the page goes on without a snapshot: not an uncaught error
    console.warn('firsttoken: the snapshot maker failed:', event.message);
    end();
  });
}
