/*
 * Latchkey signal bridge — isolated world, at document_start, in every frame.
 *
 * main-world.js cannot reach the extension's APIs, so it posts each validated
 * signal to its own window; this script picks it up and hands it to the
 * background. It adds no authority: the message comes from the page (any page
 * script can post the same thing), and the background takes the origin from the
 * browser, never from here, and checks everything again.
 */
(function () {
  'use strict';

  const api = globalThis.browser ?? globalThis.chrome;
  if (!api || !api.runtime || typeof api.runtime.sendMessage !== 'function') return;

  const METHODS = new Set([
    'signalUnknownCredential',
    'signalAllAcceptedCredentials',
    'signalCurrentUserDetails',
  ]);

  // At most this many signals per second leave this frame; the rest are
  // dropped, so a page calling the Signal API in a loop cannot flood the
  // extension. (The background also limits each origin, across its frames.)
  const MAX_PER_SECOND = 50;
  let windowStart = -Infinity;
  let sentInWindow = 0;
  let droppedInWindow = 0;

  function underRateLimit() {
    const now = performance.now(); // monotonic, unlike Date.now()
    if (now - windowStart >= 1000) {
      if (droppedInWindow > 0) {
        console.debug(`Latchkey signal bridge: dropped ${droppedInWindow} signal(s) over ${MAX_PER_SECOND}/s`);
      }
      windowStart = now;
      sentInWindow = 0;
      droppedInWindow = 0;
    }
    if (sentInWindow >= MAX_PER_SECOND) {
      droppedInWindow++;
      return false;
    }
    sentInWindow++;
    return true;
  }

  /**
   * A fresh plain object with only the spec's members, and only when they are
   * strings (or, for allAcceptedCredentialIds, an array of strings). The
   * background does the real validation; this just keeps anything else out of
   * the message.
   */
  function copyOptions(options) {
    if (options === null || typeof options !== 'object') return null;
    const copy = {};
    for (const member of ['rpId', 'credentialId', 'userId', 'name', 'displayName']) {
      const value = options[member];
      if (typeof value === 'string') copy[member] = value;
    }
    const ids = options.allAcceptedCredentialIds;
    if (Array.isArray(ids)) {
      const list = [];
      for (let i = 0; i < ids.length; i++) {
        if (typeof ids[i] !== 'string') return null;
        list.push(ids[i]);
      }
      copy.allAcceptedCredentialIds = list;
    }
    return copy;
  }

  window.addEventListener('message', (event) => {
    // Only messages this window posted to itself, from its own origin.
    // A sandboxed document (CSP sandbox, iframe sandbox) has an opaque origin while its URL
    // names the site: it may not speak for the site, so nothing of it is relayed.
    if (self.origin === 'null') return;
    if (event.source !== window || event.origin !== location.origin) return;
    const data = event.data;
    if (data === null || typeof data !== 'object' || data.__latchkeySignal !== 1) return;
    const method = data.method;
    if (typeof method !== 'string' || !METHODS.has(method)) return;
    const options = copyOptions(data.options);
    if (options === null) return;
    if (!underRateLimit()) return;

    try {
      const sending = api.runtime.sendMessage({ type: 'signal', method, options });
      // Both browsers return a promise; it rejects when, e.g., the extension
      // was reloaded and this frame's script is orphaned. Nothing to do then.
      if (sending && typeof sending.then === 'function') {
        sending.then(undefined, (e) => {
          console.debug('Latchkey signal bridge: signal not delivered', e);
        });
      }
    } catch (e) {
      // Chromium throws synchronously once the extension context is invalidated.
      console.debug('Latchkey signal bridge: signal not delivered', e);
    }
  });
})();
