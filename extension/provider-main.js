/*
 * Latchkey passkey provider — the page's MAIN world, every frame (provider.js decides which
 * are served), registered by the background only while the user has provider mode on (and not
 * on a site they excepted), so with it off a page sees exactly its browser.
 *
 * Wraps navigator.credentials.create()/get() and
 * PublicKeyCredential.isConditionalMediationAvailable(). A call is handed to provider.js (the
 * isolated world, which alone talks to the extension and draws Latchkey's menus) and answered
 * as it decides: by Latchkey (a credential built from the native host's JSON), by an error, or
 * by the browser's own method with the page's own arguments.
 *
 * Nothing here is trusted: page scripts share this world and can read or forge the messages.
 * A forged request is the same as calling the API; a forged reply fools only the page that
 * forged it. What the user sees and chooses (accounts, names) never enters this world until
 * the user chose, and the background takes the origin from the browser.
 */
(function () {
  'use strict';

  const Rules = globalThis.LatchkeyProviderRules;
  try {
    delete globalThis.LatchkeyProviderRules;
  } catch (e) {
    // Not configurable: leave it.
  }
  const PKC = globalThis.PublicKeyCredential;
  const Container = globalThis.CredentialsContainer;
  if (!Rules || typeof PKC !== 'function' || typeof Container !== 'function') return;
  // An opaque origin (a CSP-sandboxed document) may not speak for the site: provider.js does not
  // run there, so nothing would answer; the browser's own functions stay.
  if (self.origin === 'null') return;

  const MARKER = Symbol.for('latchkey.passkeyProvider');
  if (Object.prototype.hasOwnProperty.call(PKC, MARKER)) return;
  Object.defineProperty(PKC, MARKER, { value: true });

  const pageOrigin = location.origin;
  const originalGet = Container.prototype.get;
  const originalCreate = Container.prototype.create;
  const originalCapabilities = typeof PKC.getClientCapabilities === 'function' ? PKC.getClientCapabilities : null;
  const classes = {
    PublicKeyCredential: PKC,
    AuthenticatorAttestationResponse: globalThis.AuthenticatorAttestationResponse,
    AuthenticatorAssertionResponse: globalThis.AuthenticatorAssertionResponse,
  };

  const waiting = new Map(); // request id → {resolve}
  const idPrefix = Math.random().toString(36).slice(2);
  let nextId = 1;

  window.addEventListener('message', (event) => {
    if (event.source !== window || event.origin !== pageOrigin) return;
    const data = event.data;
    if (data === null || typeof data !== 'object' || data.__latchkeyProvider !== 1 || data.direction !== 'reply') return;
    const entry = waiting.get(data.id);
    if (!entry) return;
    waiting.delete(data.id);
    entry.resolve(data);
  });

  /** Asks provider.js; resolves with its reply ({outcome: 'browser' | 'credential' | 'error', …}). */
  function ask(operation, mediation, optionsJSON, signal) {
    const id = `${idPrefix}-${nextId++}`;
    return new Promise((resolve) => {
      waiting.set(id, { resolve });
      if (signal) {
        signal.addEventListener('abort', () => {
          if (!waiting.delete(id)) return;
          window.postMessage({ __latchkeyProvider: 1, direction: 'request', id, operation: 'abort' }, pageOrigin);
          resolve({ outcome: 'aborted', reason: signal.reason });
        }, { once: true });
      }
      window.postMessage({ __latchkeyProvider: 1, direction: 'request', id, operation, mediation, options: optionsJSON },
        pageOrigin);
    });
  }

  function abortError(signal) {
    return signal.reason !== undefined ? signal.reason : new DOMException('The operation was aborted.', 'AbortError');
  }

  async function handle(operation, thisArg, args) {
    const original = operation === 'get' ? originalGet : originalCreate;
    const request = args[0];
    const browser = () => Reflect.apply(original, thisArg, args);
    if (request === null || typeof request !== 'object' || request.publicKey === undefined) return browser();
    const signal = request.signal;
    if (signal && signal.aborted) throw abortError(signal);
    let optionsJSON;
    try {
      optionsJSON = operation === 'get'
        ? Rules.requestOptionsJSON(request.publicKey) : Rules.creationOptionsJSON(request.publicKey);
    } catch (e) {
      // Malformed options: the browser's own method throws its own TypeError for them.
      return browser();
    }
    if (Rules.unservedExtensions(request.publicKey).length > 0) return browser();
    const mediation = typeof request.mediation === 'string' ? request.mediation : 'optional';
    const reply = await ask(operation, mediation, optionsJSON, signal);
    switch (reply.outcome) {
      case 'credential':
        return Rules.buildCredential(reply.credential, classes);
      case 'error':
        throw new DOMException(String(reply.message), String(reply.name));
      case 'aborted':
        throw reply.reason !== undefined ? reply.reason : new DOMException('The operation was aborted.', 'AbortError');
      default:
        return browser();
    }
  }

  // Method definitions, so each has the native's name and length and no [[Construct]].
  const wrappers = {
    get(options) {
      return handle('get', this, arguments);
    },
    create(options) {
      return handle('create', this, arguments);
    },
    isConditionalMediationAvailable() {
      // Latchkey answers conditional get() on this site, whatever the browser would.
      return Promise.resolve(true);
    },
    getClientCapabilities() {
      // WebAuthn L3 §5.1.7: what a site feature-detects before a conditional get() or
      // create(). The browser's answer (where it has the method), with both conditional
      // mediations on, since Latchkey serves them here.
      const asked = originalCapabilities ? Reflect.apply(originalCapabilities, this, arguments) : Promise.resolve({});
      return Promise.resolve(asked).then((capabilities) => Object.assign({}, capabilities,
        { conditionalGet: true, conditionalCreate: true }));
    },
  };

  // get and create are wrapped only where the browser has them; the two static methods are
  // defined where it lacks them (as the signal bridge defines the Signal API for Firefox).
  for (const [target, name] of [[Container.prototype, 'get'], [Container.prototype, 'create'],
    [PKC, 'isConditionalMediationAvailable'], [PKC, 'getClientCapabilities']]) {
    const existing = Object.getOwnPropertyDescriptor(target, name);
    if (target === Container.prototype && (!existing || typeof existing.value !== 'function')) continue;
    if (existing && !existing.configurable) continue;
    Object.defineProperty(target, name, {
      value: wrappers[name],
      writable: existing ? existing.writable : true,
      enumerable: existing ? existing.enumerable : true,
      configurable: true,
    });
  }
})();
