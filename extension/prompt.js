/*
 * Latchkey passkey provider — the prompt: a window of the extension's own (windows.create),
 * where the person chooses an account for a sign-in or approves saving a passkey. Nothing the
 * page can reach: the page cannot read it, style it, cover it or click it, and account names
 * appear nowhere else. The background opened it for one request, named by the random token in
 * the URL's fragment, and is told what the person chose; closing the window cancels.
 *
 * Buttons take input only INPUT_DELAY_MS after the window appears (and after it regains the
 * focus), as browsers' own prompts do, so a page cannot open this window under a click the
 * person already aimed at something else. Its body's data-state says where it is: loading,
 * loaded (waiting out the delay), ready, working, pin (asking for the key's PIN), failed, done.
 */
(function () {
  'use strict';

  const api = globalThis.browser ?? globalThis.chrome;
  const INPUT_DELAY_MS = 500;
  const token = decodeURIComponent(location.hash.slice(1));
  const title = document.getElementById('title');
  const site = document.getElementById('site');
  const status = document.getElementById('status');
  const list = document.getElementById('accounts');
  const actions = document.getElementById('actions');
  const detail = document.getElementById('detail');
  let busy = false;
  let enableTimer = null;

  /**
   * Buttons take input INPUT_DELAY_MS after the window appeared, and again after it regained the
   * focus or became visible: a page cannot time this window under a click or key press aimed at
   * something else. No button has the focus at first, so a held Enter chooses nothing.
   */
  function enableAfterDelay() {
    clearTimeout(enableTimer);
    for (const element of document.querySelectorAll('button')) element.disabled = true;
    if (document.body.dataset.state === 'ready') document.body.dataset.state = 'loaded';
    enableTimer = setTimeout(() => {
      if (busy) return;
      for (const element of document.querySelectorAll('button')) element.disabled = false;
      if (document.body.dataset.state === 'loaded') document.body.dataset.state = 'ready';
    }, INPUT_DELAY_MS);
  }
  window.addEventListener('focus', () => { if (document.body.dataset.state === 'ready') enableAfterDelay(); });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && document.body.dataset.state === 'ready') enableAfterDelay();
  });

  /** One line of the details: a label, then the site's text isolated (<bdi>) from Latchkey's. */
  function detailLine(label, text) {
    const line = document.createElement('div');
    const value = document.createElement('bdi');
    value.textContent = text;
    line.append(`${label}: `, value);
    return line;
  }

  function send(operation, extra) {
    return api.runtime.sendMessage(Object.assign({ type: 'prompt', operation, token }, extra || {}))
      .then((answer) => answer || { ok: false, message: 'no answer from the extension' },
        (e) => ({ ok: false, message: `the extension is not reachable (${e && e.message})` }));
  }

  function say(text, isError) {
    status.textContent = text;
    status.className = isError ? 'error' : '';
  }

  /** A button that acts once, after the input delay, and never while another action runs. */
  function button(label, action, attributes, withPIN) {
    if (withPIN) action.withPIN = withPIN; // the same action again, with the PIN the key asks for
    const element = document.createElement('button');
    element.type = 'button';
    element.disabled = true;
    if (typeof label === 'string') element.textContent = label;
    else element.append(...label);
    for (const [name, value] of Object.entries(attributes || {})) element.setAttribute(name, value);
    element.addEventListener('click', (event) => {
      if (!event.isTrusted || busy || element.disabled) return;
      act(action);
    });
    return element;
  }

  async function act(action) {
    busy = true;
    for (const element of document.querySelectorAll('button')) element.disabled = true;
    document.body.dataset.state = 'working';
    const answer = await action();
    if (answer && answer.ok === false && answer.pin) {
      askForPIN(answer.pin, action);
      return;
    }
    if (answer && answer.ok === true && Array.isArray(answer.accounts)) {
      // Verified on the key: the list now holds what a verified sign-in may use.
      busy = false;
      say(answer.accounts.length === 0 ? 'Latchkey holds no passkey for this site.' : '');
      renderAccounts(answer.accounts);
      actions.replaceChildren(...requestButtons({ kind: 'get', mediation: currentRequest.mediation, verified: true }));
      document.body.dataset.state = 'loaded';
      enableAfterDelay();
      return;
    }
    if (answer && answer.ok === false) {
      // The ceremony failed (the key refused, timed out…): said here, and the page was told.
      say(answer.message || 'It did not work.', true);
      document.body.dataset.state = 'failed';
      const close = button('Close', async () => window.close(), { 'data-action': 'close' });
      actions.replaceChildren(close);
      close.disabled = false;
      busy = false;
      return;
    }
    document.body.dataset.state = 'done';
    window.close();
  }

  /**
   * The key wants its PIN: asked here, in the extension's own window (never in the page). The
   * chosen action runs again with it; a wrong PIN says how many attempts are left.
   */
  function askForPIN(need, action) {
    const retry = action.withPIN || action;
    const wording = {
      required: 'Enter the PIN of your Latchkey key.',
      wrong: 'Wrong PIN. Try again.',
      tooShort: `The key's PIN has at least ${need.minLength || 4} characters.`,
    }[need.state] || 'Enter the PIN of your Latchkey key.';
    const left = Number.isInteger(need.retries) ? ` ${need.retries} attempt${need.retries === 1 ? '' : 's'} left before the key blocks its PIN.` : '';
    say(wording + left, need.state !== 'required');
    const form = document.createElement('form');
    form.id = 'pin-form';
    const field = document.createElement('input');
    field.type = 'password';
    field.id = 'pin';
    field.autocomplete = 'off';
    field.setAttribute('aria-label', 'PIN');
    field.style.cssText = 'display:block;width:calc(100% - 32px);margin:8px 16px;padding:8px;font:inherit;font-size:14px;';
    const submit = async () => {
      const pin = field.value;
      field.value = '';
      say('Approve on your Latchkey key…');
      return retry(pin);
    };
    submit.withPIN = retry; // a wrong PIN asks again for the same action
    const go = button('Continue', submit, { 'data-action': 'pin', class: 'primary' });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (event.isTrusted && !busy && field.value !== '') act(submit);
    });
    form.appendChild(field);
    list.replaceChildren();
    actions.replaceChildren(form, go, button('Cancel', () => send('cancel'), { 'data-action': 'cancel' }));
    busy = false;
    document.body.dataset.state = 'pin';
    for (const element of document.querySelectorAll('button')) element.disabled = false;
    field.focus();
  }

  function accountButton(account) {
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = account.displayName || account.name || '(no name)';
    const user = document.createElement('span');
    user.className = 'user';
    user.textContent = account.name || '';
    const item = document.createElement('li');
    const choose = (pin) => send('choose', { credentialId: account.credentialId, pin: pin || verifiedPIN });
    item.appendChild(button([name, user], () => {
      say('Approve the sign-in on your Latchkey key…');
      return choose();
    }, { 'data-action': 'account', 'data-credential-id': account.credentialId }, choose));
    return item;
  }

  let currentRequest = null;
  let verifiedPIN; // the PIN the person verified with, for the sign-in they then choose (this window only)

  function renderAccounts(accounts) {
    list.replaceChildren(...accounts.map(accountButton));
  }

  /** The buttons under the list: verify (a sign-in, not yet verified), the browser, cancel. */
  function requestButtons(request) {
    const buttons = [];
    if (request.kind === 'get') {
      if (!request.verified) {
        // Passkeys a site protected (credProtect) are listed only once the key has verified
        // you, as the key itself answers: the same button whatever the key holds.
        const verify = (pin) => {
          say('Verify on your Latchkey key…');
          if (pin) verifiedPIN = pin;
          return send('verify', { pin });
        };
        buttons.push(button('Show all passkeys (verify on your key first)', () => verify(), { 'data-action': 'verify' }, verify));
      }
      buttons.push(button(request.mediation === 'conditional' ? 'Use a passkey from another device or the browser'
        : "Use the browser's dialog", () => send('browser'), { 'data-action': 'browser' }));
    } else {
      const save = (pin) => send('save', { pin });
      buttons.push(button('Save in Latchkey', () => {
        say('Approve on your Latchkey key…');
        return save();
      }, { 'data-action': 'save', class: 'primary' }, save));
      buttons.push(button("Use the browser's dialog", () => send('browser'), { 'data-action': 'browser' }));
    }
    buttons.push(button('Cancel', () => send('cancel'), { 'data-action': 'cancel' }));
    return buttons;
  }

  function render(request) {
    currentRequest = request;
    // A frame of another site says so, as a browser's dialog names the page around it.
    site.textContent = typeof request.topOrigin === 'string' ? `${request.origin} (in a frame of ${request.topOrigin})` : request.origin;
    if (request.kind === 'get') {
      title.textContent = `Sign in to ${request.rpId}`;
      renderAccounts(request.accounts);
      if (request.notice) say(request.notice, true);
      else if (request.accounts.length === 0) say(`No passkey for ${request.rpId} without verifying you first.`);
    } else {
      title.textContent = 'Save a passkey in Latchkey?';
      detail.append(detailLine('Site', request.rpId), detailLine('Account', request.userName || '(no name)'));
      if (request.userDisplayName && request.userDisplayName !== request.userName) {
        detail.append(detailLine('Shown as', request.userDisplayName));
      }
    }
    actions.replaceChildren(...requestButtons(request));
    document.body.dataset.state = 'loaded';
    enableAfterDelay();
  }

  // Arrow keys move between the buttons; Escape cancels; Enter and Space press (the browser's own).
  document.addEventListener('keydown', (event) => {
    // A held key (auto-repeat), or any key while the buttons wait out their delay, presses nothing.
    const waiting = Array.from(document.querySelectorAll('button')).every((b) => b.disabled);
    if (event.repeat || (waiting && (event.key === 'Enter' || event.key === ' '))) {
      event.preventDefault();
      return;
    }
    if (!event.isTrusted || busy) return;
    const all = Array.from(document.querySelectorAll('button')).filter((b) => !b.disabled);
    const at = all.indexOf(document.activeElement);
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      if (all.length === 0) return;
      const next = at < 0 ? 0 : (at + (event.key === 'ArrowDown' ? 1 : all.length - 1)) % all.length;
      all[next].focus();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      act(() => send('cancel'));
    }
  });

  send('load').then((answer) => {
    if (!answer.ok) {
      say(answer.message || 'This request has ended.', true);
      document.body.dataset.state = 'failed';
      return;
    }
    render(answer.request);
  });
})();
