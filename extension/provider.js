/*
 * Latchkey passkey provider — isolated world, every frame, registered with provider-main.js
 * while provider mode is on. A frame is served only where its permissions policy grants it
 * `publickey-credentials-get` / `-create` (read here, out of the page's reach); where the browser
 * does not tell an extension (Firefox ESR), frames are left to the browser.
 *
 * Takes the page's create()/get() from provider-main.js and hands them to the background,
 * which asks the person in Latchkey's prompt — a window of the extension's own, out of the
 * page's reach — and runs the ceremony on the user's key through the native host, or leaves the
 * call to the browser. In the page it draws only the hint under a username field for a
 * conditional get(): the same whatever the key holds, no account in it, shown only on the
 * person's own input. It also tells the background when a password form is submitted (and
 * for which user name) and when a page loads, which is how a conditional create() knows that
 * user just signed in with a password.
 */
(function () {
  'use strict';

  const api = globalThis.browser ?? globalThis.chrome;
  if (!api || !api.runtime) return;
  // A sandboxed document (CSP sandbox) has an opaque origin while its URL names the site: it
  // may not speak for the site (native WebAuthn refuses it too), and Firefox would report the URL.
  if (self.origin === 'null') return;

  // The hint's geometry, fixed so that a test driver can click it by position (it cannot reach
  // into a closed shadow root): one row HINT_HEIGHT high, 2 px under the field.
  const HINT_HEIGHT = 40;
  // A focus that follows a person's Tab key within this long is theirs; a script's focus() is not.
  const TAB_FOCUS_MS = 300;
  // JSON characters of a request's options (the background refuses more, as the host would).
  const MAX_OPTIONS = 64 * 1024;
  // A click or key in the field this recent, while a conditional request was being checked, is
  // the person asking for it once it is registered.
  const RECENT_INPUT_MS = 30000;

  const pageOrigin = location.origin;
  const isTop = window.top === window;

  /** WebAuthn's sameOriginWithAncestors: every frame up to the top is of this origin. */
  function sameOriginWithAncestors() {
    try {
      for (let w = window; w !== w.parent; w = w.parent) if (w.parent.location.origin !== pageOrigin) return false;
      return true;
    } catch (e) {
      return false; // another origin's location cannot be read
    }
  }

  /**
   * Whether this document may use WebAuthn's `feature` ("publickey-credentials-get" or
   * "-create"): its permissions policy as the browser computed it — the embedder's `allow`
   * attribute and headers, every ancestor's. Chromium exposes it (document.featurePolicy, read in
   * this isolated world, which the page's scripts cannot replace); Firefox ESR does not (the API
   * is behind a preference), so there a top-level page counts as granted, as before, and a frame
   * as unknown: the browser answers it. A browser whose policy does not know the feature (an
   * older Chromium without publickey-credentials-create) is read as Firefox is.
   */
  function featureAllowed(feature) {
    const policy = document.featurePolicy;
    if (policy && typeof policy.allowsFeature === 'function'
        && (typeof policy.features !== 'function' || policy.features().includes(feature))) {
      return policy.allowsFeature(feature) === true;
    }
    return isTop;
  }

  /**
   * What the background needs to know of this document's place, from this isolated world:
   * whether it is cross-origin with any ancestor (WebAuthn's sameOriginWithAncestors, for
   * clientDataJSON's crossOrigin: also true for a frame of the top's origin inside another's),
   * and the top-level origin as the browser tells this document (Chromium's
   * location.ancestorOrigins), which the background checks against the tab's.
   */
  function frameContext() {
    const ancestors = location.ancestorOrigins;
    return {
      crossOrigin: !sameOriginWithAncestors(),
      ancestorTop: ancestors && ancestors.length > 0 ? String(ancestors[ancestors.length - 1]) : null,
    };
  }
  let conditional = null; // {id, options, opened}: the page's conditional get(), waiting for the person
  let latestConditional = null; // the id of the newest conditional get(), also while it is checked
  let hint = null; // {host, field}
  const sent = new Set(); // ids of requests the background holds (for aborts)

  function reply(id, message) {
    window.postMessage(Object.assign({ __latchkeyProvider: 1, direction: 'reply', id }, message), pageOrigin);
  }

  /** Asks the background; resolves with an outcome ({outcome: 'credential' | 'error' | 'browser' | …}). */
  async function background(message) {
    try {
      const answer = await api.runtime.sendMessage(Object.assign({ type: 'provider', frame: isTop ? null : frameContext() }, message));
      if (answer && typeof answer === 'object' && typeof answer.outcome === 'string') return answer;
    } catch (e) {
      console.warn('Latchkey passkey provider: the extension is not reachable:', e);
    }
    // The extension is gone (updated, turned off): the browser answers, as without Latchkey.
    return { outcome: 'browser' };
  }

  /** A request the background answers (a prompt, an upgrade); its outcome goes to the page. */
  async function forward(id, message) {
    sent.add(id);
    const answer = await background(Object.assign({ requestId: id }, message));
    sent.delete(id);
    return answer;
  }

  // ---------------------------------------------------------------------------
  // Requests from provider-main.js

  window.addEventListener('message', (event) => {
    if (event.source !== window || event.origin !== pageOrigin) return;
    const data = event.data;
    if (data === null || typeof data !== 'object' || data.__latchkeyProvider !== 1 || data.direction !== 'request') return;
    if (typeof data.id !== 'string') return;
    if (data.operation === 'abort') {
      if (conditional && conditional.id === data.id) closeConditional();
      if (latestConditional === data.id) latestConditional = null;
      if (sent.has(data.id)) background({ operation: 'abort', requestId: data.id });
      return;
    }
    if (data.operation !== 'get' && data.operation !== 'create') return;
    if (data.options === null || typeof data.options !== 'object') return;
    onRequest(data.id, data.operation, String(data.mediation), data.options).catch((e) => {
      console.warn('Latchkey passkey provider:', e);
      reply(data.id, { outcome: 'browser' });
    });
  });

  /**
   * Nothing here asks the key: what the page sees until the person acts is the same whatever
   * the key holds. A modal request opens Latchkey's prompt at once (the browser's own dialog
   * is one click away in it); a conditional get() waits for the person to open it from the field.
   */
  async function onRequest(id, operation, mediation, options) {
    if (operation === 'get' && mediation === 'silent') return reply(id, { outcome: 'browser' });
    // Not granted (or not known to be): the browser answers, with its own NotAllowedError
    // for a frame its embedder did not allow.
    if (!featureAllowed(operation === 'get' ? 'publickey-credentials-get' : 'publickey-credentials-create')) {
      return reply(id, { outcome: 'browser' });
    }
    // WebAuthn L3 §5.1.3: a create() from a frame of another origin needs the person's recent
    // input in that frame (transient activation), as browsers require.
    if (!sameOriginWithAncestors() && operation === 'create' && !(navigator.userActivation && navigator.userActivation.isActive)) {
      return reply(id, { outcome: 'error', name: 'NotAllowedError', message: 'A frame may create a passkey only right after the person used it.' });
    }
    if (JSON.stringify(options).length > MAX_OPTIONS) {
      return reply(id, { outcome: 'error', name: 'TypeError', message: `the options are over ${MAX_OPTIONS} characters` });
    }
    // A browser serves WebAuthn to the focused, visible document only (NotAllowedError
    // otherwise): a background tab cannot throw Latchkey's window over another site.
    if (mediation !== 'conditional' && (document.visibilityState !== 'visible' || !document.hasFocus())) {
      return reply(id, { outcome: 'error', name: 'NotAllowedError', message: 'The document is not focused.' });
    }
    if (operation === 'get' && mediation === 'conditional') {
      if (conditional) {
        if (sent.has(conditional.id)) background({ operation: 'abort', requestId: conditional.id });
        reply(conditional.id, { outcome: 'error', name: 'AbortError', message: 'a newer conditional request replaced this one' });
      }
      closeConditional();
      latestConditional = id;
      const checked = await background({ operation: 'check', options });
      if (latestConditional !== id) {
        // Aborted, or replaced by a newer one, while it was checked.
        return reply(id, { outcome: 'error', name: 'AbortError', message: 'a newer conditional request replaced this one' });
      }
      // An RP ID the page may not claim, or provider mode turned off meanwhile.
      if (checked.outcome === 'error' || checked.outcome === 'browser') return reply(id, checked);
      conditional = { id, options, opened: false };
      // The person clicked or typed in the field while the request was being checked (the
      // native host may take seconds to start): their input shows the hint now.
      if (lastFieldInput && lastFieldInput.field === document.activeElement
          && performance.now() - lastFieldInput.at <= RECENT_INPUT_MS) showHint(lastFieldInput.field);
      return undefined;
    }
    if (operation === 'create' && mediation === 'conditional') {
      // Automatic passkey upgrade: no UI; the background decides (a recent password sign-in
      // of this very user on this origin), else NotAllowedError.
      return reply(id, await forward(id, { operation: 'upgrade', options }));
    }
    return reply(id, await forward(id, { operation: 'prompt', kind: operation, mediation, options }));
  }

  /** The person asked for Latchkey's passkeys from the field: the prompt opens. */
  async function openConditionalPrompt() {
    const request = conditional;
    if (!request || request.opened) return;
    request.opened = true;
    closeHint();
    const answer = await forward(request.id, { operation: 'prompt', kind: 'get', mediation: 'conditional', options: request.options });
    if (conditional !== request) return; // aborted or replaced meanwhile
    if (answer.outcome === 'dismissed') {
      request.opened = false; // closed without a choice: the request goes on waiting
      return;
    }
    conditional = null;
    if (answer.outcome !== 'aborted') reply(request.id, answer);
  }

  // ---------------------------------------------------------------------------
  // The hint under a username field (conditional get). It says the same thing whatever the key
  // holds and shows no account: names and the choice are in the prompt window only.

  function isWebAuthnField(element) {
    if (!(element instanceof HTMLInputElement) && !(element instanceof HTMLTextAreaElement)) return false;
    const tokens = (element.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
    return tokens.includes('webauthn');
  }

  function closeConditional() {
    conditional = null;
    closeHint();
  }

  function closeHint() {
    if (!hint) return;
    hint.host.remove();
    hint = null;
  }

  const STYLE = `
    :host { all: initial; }
    button { display: block; width: 100%; height: ${HINT_HEIGHT}px; padding: 4px 12px; margin: 0;
             box-sizing: border-box; background: #fff; color: #1b1b1b; border: 1px solid #c4c4c4;
             border-radius: 8px; box-shadow: 0 4px 16px rgba(0,0,0,.2); text-align: left; cursor: pointer;
             font: 14px system-ui, sans-serif; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    button:hover, button:focus-visible { background: #e8f0fe; outline: none; }
  `;

  function showHint(field) {
    if (!conditional || conditional.opened) return;
    if (hint && hint.field === field) return;
    closeHint();
    const rect = field.getBoundingClientRect();
    const host = document.createElement('div');
    host.setAttribute('data-latchkey-provider', '');
    host.setAttribute('style', `position: fixed; left: ${rect.left}px; top: ${rect.bottom + 2}px;`
      + ` width: ${Math.max(rect.width, 260)}px; z-index: 2147483647; margin: 0; padding: 0; border: 0; display: block;`);
    const root = host.attachShadow({ mode: 'closed' });
    const css = document.createElement('style');
    css.textContent = STYLE;
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'Sign in with a passkey from Latchkey…';
    // Keep the focus in the field while the person clicks.
    button.addEventListener('mousedown', (event) => event.preventDefault());
    button.addEventListener('click', (event) => {
      if (event.isTrusted) openConditionalPrompt();
    });
    root.append(css, button);
    // On the root element, not the body, so the page's body styles do not reach it.
    document.documentElement.appendChild(host);
    hint = { host, field };
  }

  // The hint follows its field when the page scrolls or resizes (it is position: fixed).
  function placeHint() {
    if (!hint) return;
    const rect = hint.field.getBoundingClientRect();
    hint.host.style.left = `${rect.left}px`;
    hint.host.style.top = `${rect.bottom + 2}px`;
  }
  window.addEventListener('scroll', placeHint, true);
  window.addEventListener('resize', placeHint);

  // Only the person's own input shows the hint: a trusted pointer press on the field, a key
  // pressed in it, or a focus that follows their Tab key. A script's focus() shows nothing.
  let tabPressedAt = -Infinity;
  let lastFieldInput = null; // {field, at}: the person's last click or key in a webauthn field
  document.addEventListener('pointerdown', (event) => {
    if (!event.isTrusted || !isWebAuthnField(event.target)) return;
    lastFieldInput = { field: event.target, at: performance.now() };
    if (conditional) showHint(event.target);
  }, true);
  document.addEventListener('keydown', (event) => {
    if (!event.isTrusted) return;
    if (event.key === 'Tab') {
      tabPressedAt = performance.now();
      return;
    }
    if (isWebAuthnField(event.target)) lastFieldInput = { field: event.target, at: performance.now() };
    if (!conditional || !isWebAuthnField(event.target)) return;
    if (event.key === 'ArrowDown' && hint && hint.field === event.target) {
      event.preventDefault();
      openConditionalPrompt();
    } else if (event.key === 'Escape') {
      closeHint();
    } else {
      showHint(event.target);
    }
  }, true);
  document.addEventListener('focusin', (event) => {
    if (conditional && isWebAuthnField(event.target) && performance.now() - tabPressedAt <= TAB_FOCUS_MS) {
      showHint(event.target);
    }
  }, true);
  document.addEventListener('focusout', (event) => {
    if (hint && event.target === hint.field) closeHint();
  }, true);

  // ---------------------------------------------------------------------------
  // Password sign-ins, for automatic passkey upgrades

  // Password fields a person typed into (trusted input events), by element: a script can fill
  // a hidden field and submit it from inside some click's user activation, but not type.
  const typedPasswords = new WeakSet();
  document.addEventListener('input', (event) => {
    const field = event.target;
    if (event.isTrusted && field instanceof HTMLInputElement && field.type === 'password') typedPasswords.add(field);
  }, true);

  document.addEventListener('submit', (event) => {
    if (!event.isTrusted) return;
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    // A person's click or Enter, not a script: requestSubmit() fires a trusted submit event
    // too, but only real input gives the page transient user activation.
    if (navigator.userActivation && !navigator.userActivation.isActive) return;
    const passwords = Array.from(form.querySelectorAll('input[type="password"]'));
    const typed = passwords.some((input) => input.value !== ''
      && typedPasswords.has(input) && input.getClientRects().length > 0
      && (typeof input.checkVisibility !== 'function' || input.checkVisibility({ opacityProperty: true, visibilityProperty: true })));
    if (!typed) return;
    // The account that signed in: an upgrade is for it alone. A form with no user name (a
    // password-styled search box, a PIN pad) is no sign-in.
    const userName = signInUserName(form, passwords[0]);
    if (userName !== '') background({ operation: 'passwordSubmitted', userName });
  }, true);

  /**
   * The user name a sign-in form submits, as a password manager finds it: the field marked
   * `autocomplete="username"` (or `webauthn`), else an email field, else the last visible text
   * field before the password.
   */
  function signInUserName(form, password) {
    const fields = Array.from(form.querySelectorAll('input')).filter((input) => input.type !== 'hidden'
      && input.type !== 'password' && input.value.trim() !== '');
    const marked = fields.find((input) => /(^|\s)(username|webauthn)(\s|$)/i.test(input.getAttribute('autocomplete') || ''));
    if (marked) return marked.value;
    const email = fields.find((input) => input.type === 'email');
    if (email) return email.value;
    const before = fields.filter((input) => (input.type === 'text' || input.type === '')
      && (input.compareDocumentPosition(password) & Node.DOCUMENT_POSITION_FOLLOWING) && input.getClientRects().length > 0);
    return before.length > 0 ? before[before.length - 1].value : '';
  }

  // The page is going away: whatever the background holds for it ends (the prompt closes).
  window.addEventListener('pagehide', () => {
    for (const id of sent) background({ operation: 'abort', requestId: id });
  });

  background({ operation: 'pageLoaded' });
})();
