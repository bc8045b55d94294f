/*
 * Latchkey passkey provider — isolated world, top frame only, registered with provider-main.js
 * while provider mode is on.
 *
 * Takes the page's create()/get() from provider-main.js and decides who answers: Latchkey
 * (through the background and the native host, which runs the ceremony on the user's key), or
 * the browser. It draws what the user chooses from — the menu under a username field for a
 * conditional get(), the chooser for a modal get(), the offer for a modal create() — in closed
 * shadow roots the page cannot read, and acts only on the user's own (trusted) clicks and keys.
 * It also tells the background when a password form is submitted and when a page loads, which
 * is how a conditional create() knows the user just signed in with a password.
 */
(function () {
  'use strict';

  const api = globalThis.browser ?? globalThis.chrome;
  if (!api || !api.runtime || window.top !== window) return;
  // A sandboxed document (CSP sandbox) has an opaque origin while its URL names the site: it
  // may not speak for the site (native WebAuthn refuses it too), and Firefox would report the URL.
  if (self.origin === 'null') return;

  // The menu's and the dialogs' geometry, fixed so that a test driver can click an entry by its
  // position (it cannot reach into a closed shadow root): a header, then one row an account, then
  // (dialogs) one row a button, each ROW high.
  const MENU_HEADER = 28;
  const ROW = 44;
  const CHOOSER_TOP = 80;
  const CHOOSER_WIDTH = 360;
  const CHOOSER_HEADER = 56;
  // Clicks and keys reaching a menu or dialog sooner than this after it appeared are ignored, as
  // browsers do for their prompts: a page cannot put one under a click the user already aimed.
  const INPUT_DELAY_MS = 500;

  const pageOrigin = location.origin;
  let conditional = null; // {id, accounts, options, field, index}
  let menu = null; // {host, rows, field}
  let chooser = null; // {id, host, onKey, timer}
  const aborted = new Set(); // ids the page aborted while their request was on its way

  // A second modal request while Latchkey's dialog is open is refused, as a browser refuses
  // one while its own dialog is up; the first keeps its dialog.
  const PENDING = { outcome: 'error', name: 'NotAllowedError', message: 'A request is already pending.' };

  function reply(id, message) {
    window.postMessage(Object.assign({ __latchkeyProvider: 1, direction: 'reply', id }, message), pageOrigin);
  }

  async function background(message) {
    try {
      const answer = await api.runtime.sendMessage(Object.assign({ type: 'provider' }, message));
      if (answer && typeof answer === 'object') return answer;
      return { ok: false, error: 'InternalError', message: 'no answer from the extension' };
    } catch (e) {
      return { ok: false, error: 'InternalError', message: `the extension is not reachable (${e && e.message})` };
    }
  }

  /** A host reply turned into the page's outcome; `fallBack` for errors that mean "not here". */
  function outcomeOf(answer, fallBack) {
    if (answer.ok) return { outcome: 'credential', credential: answer.credential };
    if (answer.error === 'InternalError' && fallBack) return { outcome: 'browser' };
    // A browser says no more than NotAllowedError for what the host could not do.
    const name = answer.error === 'InternalError' ? 'NotAllowedError' : answer.error;
    return { outcome: 'error', name, message: answer.message || 'The operation either timed out or was not allowed.' };
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
      if (chooser && chooser.id === data.id) closeChooser();
      aborted.add(data.id);
      return;
    }
    const handler = data.operation === 'get' ? onGet : data.operation === 'create' ? onCreate : null;
    if (!handler || data.options === null || typeof data.options !== 'object') return;
    handler(data.id, String(data.mediation), data.options).catch((e) => {
      console.warn('Latchkey passkey provider:', e);
      reply(data.id, { outcome: 'browser' });
    });
  });

  async function onGet(id, mediation, options) {
    if (mediation === 'silent') return reply(id, { outcome: 'browser' });
    // The background narrows the accounts to the request's allowCredentials (provider-rules.js).
    const listed = await background({ operation: 'accounts', rpId: options.rpId, userVerification: options.userVerification,
      allowCredentials: options.allowCredentials });
    if (aborted.delete(id)) return undefined;
    if (!listed.ok) {
      // A SecurityError (an RP ID this origin may not claim) is the page's answer, as the
      // browser's would be; the host being unavailable leaves the call to the browser.
      return reply(id, outcomeOf(listed, true));
    }
    const accounts = listed.accounts;
    if (accounts.length === 0) return reply(id, { outcome: 'browser' });
    const choose = async (account) => {
      const answer = await background({ operation: 'get', options, credentialId: account.credentialId });
      if (aborted.delete(id)) return;
      reply(id, outcomeOf(answer, false));
    };
    if (mediation === 'conditional') {
      if (conditional) reply(conditional.id, { outcome: 'error', name: 'AbortError', message: 'a newer conditional request replaced this one' });
      closeConditional();
      conditional = { id, accounts, choose };
      const field = document.activeElement;
      if (isWebAuthnField(field)) openMenu(field);
      return undefined;
    }
    if (chooser) return reply(id, PENDING);
    return openChooser(id, `Sign in to ${listed.rpId}`, accounts, choose, options.timeout);
  }

  async function onCreate(id, mediation, options) {
    if (mediation === 'conditional') {
      // Automatic passkey upgrade: no UI at all. The background lets it through only after a
      // password sign-in on this origin in the last few minutes; otherwise NotAllowedError.
      const answer = await background({ operation: 'create', options, conditional: true });
      if (aborted.delete(id)) return undefined;
      return reply(id, outcomeOf(answer, false));
    }
    const settings = (await api.storage.local.get('provider')).provider || {};
    const rpId = options.rp && options.rp.id;
    const listed = await background({ operation: 'accounts', rpId });
    if (aborted.delete(id)) return undefined;
    if (!listed.ok) return reply(id, outcomeOf(listed, true));
    if (listed.accounts.length === 0 && !settings.newPasskeys) return reply(id, { outcome: 'browser' });
    if (chooser) return reply(id, PENDING);
    const user = options.user || {};
    const who = user.name || user.displayName || 'this account';
    return openOffer(id, `Save a passkey for ${who} on ${listed.rpId} in Latchkey?`, async () => {
      const answer = await background({ operation: 'create', options, conditional: false });
      if (aborted.delete(id)) return;
      reply(id, outcomeOf(answer, false));
    }, options.timeout);
  }

  // ---------------------------------------------------------------------------
  // The menu under a username field (conditional get)

  function isWebAuthnField(element) {
    if (!(element instanceof HTMLInputElement) && !(element instanceof HTMLTextAreaElement)) return false;
    const tokens = (element.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
    return tokens.includes('webauthn');
  }

  function closeConditional() {
    conditional = null;
    closeMenu();
  }

  function closeMenu() {
    if (!menu) return;
    menu.field.removeEventListener('keydown', onFieldKey, true);
    menu.host.remove();
    menu = null;
  }

  const STYLE = `
    :host { all: initial; }
    * { box-sizing: border-box; font-family: system-ui, sans-serif; }
    .panel { background: #fff; color: #1b1b1b; border: 1px solid #c4c4c4; border-radius: 8px;
             box-shadow: 0 4px 16px rgba(0,0,0,.2); overflow: hidden; }
    .head { height: ${MENU_HEADER}px; padding: 6px 12px; font-size: 12px; color: #555; }
    button.row { display: block; width: 100%; height: ${ROW}px; padding: 4px 12px; border: 0;
                 background: none; text-align: left; cursor: pointer; }
    button.row:hover, button.row.active { background: #e8f0fe; }
    .name { display: block; font-size: 14px; font-weight: 600; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    .user { display: block; font-size: 12px; color: #555; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    .title { height: ${CHOOSER_HEADER}px; padding: 12px 16px; font-size: 16px; font-weight: 600; }
    .actions button { display: block; width: 100%; height: ${ROW}px; padding: 4px 16px; border: 0;
                      border-top: 1px solid #e0e0e0; background: none; text-align: left; font-size: 14px; cursor: pointer; }
    .actions button:hover { background: #f1f3f4; }
    .actions button.primary { color: #1a73e8; font-weight: 600; }
  `;

  /** A host element with a closed shadow root holding `build(root)`'s content. */
  function shadowHost(style, build) {
    const host = document.createElement('div');
    host.setAttribute('data-latchkey-provider', '');
    host.setAttribute('style', style);
    const root = host.attachShadow({ mode: 'closed' });
    const css = document.createElement('style');
    css.textContent = STYLE;
    root.appendChild(css);
    build(root);
    // On the root element, not the body, so the page's body styles do not reach it.
    document.documentElement.appendChild(host);
    return host;
  }

  /** Whether the menu or dialog holding `element` has been up for INPUT_DELAY_MS. */
  function inputAllowed(element) {
    const shownAt = Number(element.dataset.shownAt || element.closest('[data-shown-at]')?.dataset.shownAt);
    return Number.isFinite(shownAt) && performance.now() - shownAt >= INPUT_DELAY_MS;
  }

  /** One button a passkey: display name over user name, as text (never markup). */
  function accountRow(account, onChoose) {
    const row = document.createElement('button');
    row.className = 'row';
    row.type = 'button';
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = account.displayName || account.name || '(no name)';
    const user = document.createElement('span');
    user.className = 'user';
    user.textContent = account.name || '';
    row.append(name, user);
    row.addEventListener('click', (event) => {
      if (event.isTrusted && inputAllowed(row)) onChoose(account);
    });
    return row;
  }

  function openMenu(field) {
    if (!conditional) return;
    closeMenu();
    const rect = field.getBoundingClientRect();
    const width = Math.max(rect.width, 260);
    const rows = [];
    const { accounts, choose } = conditional;
    const pick = (account) => {
      const request = conditional;
      closeConditional();
      if (request) choose(account);
    };
    const host = shadowHost(
      `position: fixed; left: ${rect.left}px; top: ${rect.bottom + 2}px; width: ${width}px; z-index: 2147483647;`
      + ' margin: 0; padding: 0; border: 0; display: block;',
      (root) => {
        const panel = document.createElement('div');
        panel.className = 'panel';
        panel.dataset.shownAt = String(performance.now());
        const head = document.createElement('div');
        head.className = 'head';
        head.textContent = 'Passkeys in Latchkey';
        panel.appendChild(head);
        for (const account of accounts) {
          const row = accountRow(account, pick);
          rows.push(row);
          panel.appendChild(row);
        }
        // Keep the focus in the field while the user clicks the menu.
        panel.addEventListener('pointerdown', (event) => event.preventDefault());
        panel.addEventListener('mousedown', (event) => event.preventDefault());
        root.appendChild(panel);
      });
    menu = { host, rows, field, index: -1, pick, accounts };
    field.addEventListener('keydown', onFieldKey, true);
  }

  function onFieldKey(event) {
    if (!menu || !event.isTrusted) return;
    const count = menu.rows.length;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      menu.index = (menu.index + (event.key === 'ArrowDown' ? 1 : count - 1)) % count;
      menu.rows.forEach((row, i) => row.classList.toggle('active', i === menu.index));
    } else if (event.key === 'Enter' && menu.index >= 0 && inputAllowed(menu.rows[menu.index])) {
      event.preventDefault();
      menu.pick(menu.accounts[menu.index]);
    } else if (event.key === 'Escape') {
      closeMenu();
    }
  }

  // The menu follows its field when the page scrolls or resizes (it is position: fixed).
  function placeMenu() {
    if (!menu) return;
    const rect = menu.field.getBoundingClientRect();
    menu.host.style.left = `${rect.left}px`;
    menu.host.style.top = `${rect.bottom + 2}px`;
  }
  window.addEventListener('scroll', placeMenu, true);
  window.addEventListener('resize', placeMenu);

  document.addEventListener('focusin', (event) => {
    if (conditional && isWebAuthnField(event.target)) openMenu(event.target);
  }, true);
  document.addEventListener('focusout', (event) => {
    if (menu && event.target === menu.field) closeMenu();
  }, true);

  // ---------------------------------------------------------------------------
  // The chooser (modal get) and the offer (modal create)

  function closeChooser() {
    if (!chooser) return;
    clearTimeout(chooser.timer);
    chooser.host.remove();
    document.removeEventListener('keydown', chooser.onKey, true);
    chooser = null;
  }

  /** A dialog over the page: `title`, then `fill(panel, done)` adds rows; buttons at the bottom. */
  function openDialog(id, title, fill, buttons, timeout) {
    closeChooser();
    let settled = false;
    const settle = (action) => {
      if (settled) return;
      settled = true;
      closeChooser();
      action();
    };
    const cancel = () => settle(() => reply(id, {
      outcome: 'error', name: 'NotAllowedError', message: 'The user cancelled the request.',
    }));
    const host = shadowHost(
      'position: fixed; inset: 0; z-index: 2147483647; margin: 0; padding: 0; border: 0; display: block;'
      + ' background: rgba(0,0,0,.35);',
      (root) => {
        const panel = document.createElement('div');
        panel.className = 'panel';
        panel.dataset.shownAt = String(performance.now());
        panel.setAttribute('role', 'dialog');
        panel.setAttribute('style', `position: absolute; top: ${CHOOSER_TOP}px; left: calc(50% - ${CHOOSER_WIDTH / 2}px);`
          + ` width: ${CHOOSER_WIDTH}px;`);
        const head = document.createElement('div');
        head.className = 'title';
        head.textContent = title;
        panel.appendChild(head);
        fill(panel, settle);
        const actions = document.createElement('div');
        actions.className = 'actions';
        for (const [label, primary, action] of buttons(settle).concat([['Cancel', false, cancel]])) {
          const button = document.createElement('button');
          button.type = 'button';
          button.textContent = label;
          if (primary) button.className = 'primary';
          button.addEventListener('click', (event) => {
            if (event.isTrusted && inputAllowed(button)) action();
          });
          actions.appendChild(button);
        }
        panel.appendChild(actions);
        root.appendChild(panel);
      });
    const onKey = (event) => {
      if (event.isTrusted && event.key === 'Escape') cancel();
    };
    document.addEventListener('keydown', onKey, true);
    // The request's lifetime (WebAuthn's timeout, kept as the host keeps it: 10 s to 10 min,
    // 5 min when the site gives none): then NotAllowedError, as a browser's dialog ends.
    const lifetime = Math.min(Math.max(Number(timeout) || 300000, 10000), 600000);
    const timer = setTimeout(() => settle(() => reply(id, {
      outcome: 'error', name: 'NotAllowedError', message: 'The operation timed out.',
    })), lifetime);
    chooser = { id, host, onKey, timer };
  }

  function openChooser(id, title, accounts, choose, timeout) {
    openDialog(id, title, (panel, settle) => {
      for (const account of accounts) panel.appendChild(accountRow(account, (chosen) => settle(() => choose(chosen))));
    }, (settle) => [["Use the browser's dialog", false, () => settle(() => reply(id, { outcome: 'browser' }))]], timeout);
  }

  function openOffer(id, title, save, timeout) {
    openDialog(id, title, () => {}, (settle) => [
      ['Save in Latchkey', true, () => settle(save)],
      ["Use the browser's dialog", false, () => settle(() => reply(id, { outcome: 'browser' }))],
    ], timeout);
  }

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
    const typed = Array.from(form.querySelectorAll('input[type="password"]')).some((input) => input.value !== ''
      && typedPasswords.has(input) && input.getClientRects().length > 0
      && (typeof input.checkVisibility !== 'function' || input.checkVisibility({ opacityProperty: true, visibilityProperty: true })));
    if (typed) background({ operation: 'passwordSubmitted' });
  }, true);

  background({ operation: 'pageLoaded' });
})();
