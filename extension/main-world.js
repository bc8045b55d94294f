/*
 * Latchkey signal bridge — the page's MAIN world, at document_start.
 *
 * Wraps (Chromium) or defines (Firefox, which lacks them) the three static
 * methods of the WebAuthn Signal API on PublicKeyCredential, so that a signal
 * the page sends also reaches the extension, which forwards it to Latchkey.
 *
 * Nothing here is trusted. Page scripts share this world: they can replace the
 * built-ins used below, or post the very message forward() posts. That is fine,
 * because the message only carries what the page itself says; the background
 * takes the origin from the browser and checks everything again. The checks
 * here exist to give the page the spec's errors and to spare the extension
 * messages that would be refused anyway.
 *
 * Runs in every frame (all_frames); each frame has its own global, origin and
 * host, and so its own copy of this script.
 */
(function () {
  'use strict';

  const RpId = globalThis.LatchkeyRpId;
  // rpid.js ran just before us in this world; take our reference and remove the
  // global so the page does not see it (it is re-created, then removed again,
  // if the scripts are ever injected twice).
  try {
    delete globalThis.LatchkeyRpId;
  } catch (e) {
    // Not configurable: leave it.
  }
  if (!RpId || typeof RpId.checkSignal !== 'function') return;

  // PublicKeyCredential exists only in secure contexts of browsers with WebAuthn.
  const PKC = globalThis.PublicKeyCredential;
  if (typeof PKC !== 'function') return;

  // Guard against running twice in one frame (e.g. Firefox injecting content
  // scripts again into open tabs when the extension is reloaded): wrapping our
  // own wrappers would forward every signal twice. A registered symbol, since a
  // second run has no other way to find the first run's marker.
  const MARKER = Symbol.for('latchkey.signalBridge');
  if (Object.prototype.hasOwnProperty.call(PKC, MARKER)) return;
  Object.defineProperty(PKC, MARKER, { value: true });

  // The page's origin and host, fixed for the life of this document. The spec
  // uses the origin's effective domain; document.domain could change that, but
  // it is deprecated and no RP should rely on it, so the host is used.
  const pageOrigin = location.origin;
  const pageHost = pageOrigin === 'null' ? '' : location.hostname; // opaque origin: no host

  /**
   * Hands a validated signal to relay.js (the isolated world) through a message
   * to this very window, addressed to our own origin so no other frame sees it.
   * The message holds the plain copy checkSignal made — spec members only.
   */
  function forward(method, options) {
    try {
      window.postMessage({ __latchkeySignal: 1, method, options }, pageOrigin);
    } catch (e) {
      // e.g. an opaque origin, which has no serialization to address a message
      // to; nothing to forward then.
      console.debug('Latchkey signal bridge: could not forward', method, e);
    }
  }

  /** checkSignal for this page, with a throwing getter turned into its error. */
  function check(method, options) {
    try {
      return RpId.checkSignal(method, options, pageHost, null);
    } catch (e) {
      return { thrown: e };
    }
  }

  function errorOf(checked) {
    if ('thrown' in checked) return checked.thrown;
    if (checked.errorName === 'SecurityError') {
      return new DOMException(checked.message, 'SecurityError');
    }
    return new TypeError(checked.message);
  }

  // The browser's own methods, kept in this closure (the page may overwrite
  // the properties afterwards; that only affects the page).
  const originals = new Map();

  function handle(method, thisArg, args) {
    const checked = check(method, args[0]);
    const original = originals.get(method);

    if (original) {
      // Call the browser's method in every case, with the page's `this` and
      // arguments, so the browser (and its password manager) sees the signal,
      // and a page whose call we refuse still gets the browser's own answer.
      const result = Reflect.apply(original, thisArg, args);
      if (!checked.options || !result || typeof result.then !== 'function') return result;
      // Forward only once the browser accepted the signal too; the promise the
      // page gets settles as the browser's does.
      return result.then((value) => {
        forward(method, checked.options);
        return value;
      });
    }

    // The browser lacks the method (Firefox): ours is the implementation. The
    // spec resolves once the options are validated; the authenticator work
    // happens afterwards, here in the extension.
    if (!checked.options) return Promise.reject(errorOf(checked));
    forward(method, checked.options);
    return Promise.resolve(undefined);
  }

  // Method definitions (not arrow functions or `function`s) so each wrapper has
  // the right `name`, a `length` of 1 and no [[Construct]] — like the natives.
  const wrappers = {
    signalUnknownCredential(options) {
      return handle('signalUnknownCredential', this, arguments);
    },
    signalAllAcceptedCredentials(options) {
      return handle('signalAllAcceptedCredentials', this, arguments);
    },
    signalCurrentUserDetails(options) {
      return handle('signalCurrentUserDetails', this, arguments);
    },
  };

  for (const method of RpId.SIGNAL_METHODS) {
    const existing = Object.getOwnPropertyDescriptor(PKC, method);
    if (existing) {
      // Wrap only a plain, replaceable method; anything else is left alone.
      if (typeof existing.value !== 'function' || !existing.configurable) continue;
      originals.set(method, existing.value);
    }
    // Same attributes as the original. When defining the method ourselves, use
    // WebIDL's for a static operation: writable, enumerable, configurable.
    Object.defineProperty(PKC, method, {
      value: wrappers[method],
      writable: existing ? existing.writable : true,
      enumerable: existing ? existing.enumerable : true,
      configurable: true,
    });
  }
})();
