/*
 * Latchkey passkey provider — the prompt: a window of the extension's own (windows.create),
 * where the person chooses an account for a sign-in or approves saving a passkey. Nothing the
 * page can reach: the page cannot read it, style it, cover it or click it, and account names
 * appear nowhere else. The background opened it for one request, named by the random token in
 * the URL's fragment, and is told what the person chose; closing the window cancels.
 *
 * Buttons take input only after INPUT_DELAY_MS, as browsers' own prompts do, so a page cannot
 * open this window under a click the person already aimed at something else.
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
  let busy = false;

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
  function button(label, action, attributes) {
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

  function accountButton(account) {
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = account.displayName || account.name || '(no name)';
    const user = document.createElement('span');
    user.className = 'user';
    user.textContent = account.name || '';
    const item = document.createElement('li');
    item.appendChild(button([name, user], () => {
      say('Approve the sign-in on your Latchkey key…');
      return send('choose', { credentialId: account.credentialId });
    }, { 'data-action': 'account', 'data-credential-id': account.credentialId }));
    return item;
  }

  function render(request) {
    site.textContent = request.origin;
    const buttons = [];
    if (request.kind === 'get') {
      title.textContent = `Sign in to ${request.rpId}`;
      for (const account of request.accounts) list.appendChild(accountButton(account));
      if (request.accounts.length === 0) say(`Latchkey holds no passkey for ${request.rpId} that this sign-in can use.`);
      buttons.push(button(request.mediation === 'conditional' ? 'Use a passkey from another device or the browser'
        : "Use the browser's dialog", () => send('browser'), { 'data-action': 'browser' }));
    } else {
      title.textContent = `Save a passkey for ${request.userName || 'this account'} on ${request.rpId} in Latchkey?`;
      buttons.push(button('Save in Latchkey', () => {
        say('Approve on your Latchkey key…');
        return send('save');
      }, { 'data-action': 'save', class: 'primary' }));
      buttons.push(button("Use the browser's dialog", () => send('browser'), { 'data-action': 'browser' }));
    }
    buttons.push(button('Cancel', () => send('cancel'), { 'data-action': 'cancel' }));
    actions.replaceChildren(...buttons);
    setTimeout(() => {
      for (const element of document.querySelectorAll('button')) element.disabled = false;
      const first = document.querySelector('button');
      if (first) first.focus();
      document.body.dataset.state = 'ready';
    }, INPUT_DELAY_MS);
  }

  // Arrow keys move between the buttons; Escape cancels; Enter and Space press (the browser's own).
  document.addEventListener('keydown', (event) => {
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
