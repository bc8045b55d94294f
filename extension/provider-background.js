/*
 * Latchkey passkey provider — the background's half (loaded after background.js, whose native
 * host port, askHost's `pending` map, `record` and `dispatch` it uses).
 *
 * Settings, in storage.local under "provider": {enabled, offerSave, exceptions: [host…]}. While
 * enabled, provider-main.js (MAIN world) and provider.js run in top-level pages, except on the
 * excepted hosts; while off, they are not registered at all, so pages see their browser.
 *
 * Where the person decides (docs/provider-ui.md): every account name and every consent is in
 * the prompt, a window of the extension's own (prompt.html, windows.create), which the page can
 * neither read, style, cover nor click. What a page can observe does not depend on what the key
 * holds: a modal get() or create() opens the prompt at once without asking the key anything; a
 * conditional get() waits, unanswered, until the person opens the prompt from the field. Only
 * the person's choice there reaches the key.
 *
 * Wire format with the host (docs/native-host.md, "The passkey provider"):
 *   → {"id": N, "type": "accounts", "origin": O, "rpId"?: R, "allowCredentials"?: [descriptor…]}
 *   ← {"id": N, "ok": true, "rpId": R, "accounts": [{credentialId, userHandle, name, displayName}]}
 *   → {"id": N, "type": "create", "origin": O, "options": CreationOptionsJSON}
 *   → {"id": N, "type": "get", "origin": O, "options": RequestOptionsJSON, "credentialId"?: ID}
 *   ← {"id": N, "ok": true, "credential": RegistrationResponseJSON | AuthenticationResponseJSON}
 *   ← {"id": N, "ok": false, "error": "NotAllowedError" | "SecurityError" | …, "message": "…"}
 */
'use strict';

const MAX_PROVIDER_OPTIONS = 64 * 1024; // JSON characters of a create()/get()'s options
const PROVIDER_SCRIPT_IDS = ['latchkey-provider-main', 'latchkey-provider'];
const PROVIDER_MATCHES = ['https://*/*', 'http://localhost/*', 'http://127.0.0.1/*', 'http://[::1]/*'];
// Requests a page may make: a burst of PROVIDER_BURST, then one every 1/PROVIDER_REFILL seconds
// (a sign-in page makes one or two); over that, NotAllowedError at once and no prompt.
const PROVIDER_BURST = 6;
const PROVIDER_REFILL_PER_SECOND = 0.25;
const MAX_PROMPTS = 4; // prompts open at once, all tabs; a tab has at most one
const MAX_HOST_PROVIDER_REQUESTS = 16; // provider requests at the host at once
const PROMPT_SIZE = { width: 420, height: 380 };

const NOT_ALLOWED = (message) => ({ outcome: 'error', name: 'NotAllowedError', message });

async function providerSettings() {
  const stored = await api.storage.local.get('provider');
  const settings = stored && stored.provider && typeof stored.provider === 'object' ? stored.provider : {};
  return {
    enabled: settings.enabled === true,
    // Offer to save new passkeys in Latchkey when a site asks for one (on unless turned off).
    offerSave: settings.offerSave !== false,
    exceptions: Array.isArray(settings.exceptions) ? settings.exceptions.filter((h) => typeof h === 'string') : [],
  };
}

// Registering is asynchronous; changes are applied one after another, the last one winning.
let providerSync = Promise.resolve();

function syncProviderScripts() {
  providerSync = providerSync.then(async () => {
    if (!api.scripting || typeof api.scripting.registerContentScripts !== 'function') {
      console.warn('Latchkey passkey provider: this browser has no scripting.registerContentScripts; provider mode is unavailable');
      return;
    }
    const settings = await providerSettings();
    const registered = await api.scripting.getRegisteredContentScripts({ ids: PROVIDER_SCRIPT_IDS });
    if (registered.length > 0) await api.scripting.unregisterContentScripts({ ids: registered.map((s) => s.id) });
    if (!settings.enabled) return;
    const common = { matches: PROVIDER_MATCHES, runAt: 'document_start', allFrames: false, persistAcrossSessions: true };
    const excluded = ProviderRules.exceptionPatterns(settings.exceptions);
    if (excluded.length > 0) common.excludeMatches = excluded;
    // provider-rules.js goes to the page's world only: Chromium injects a file once per frame,
    // into the first world naming it, so the isolated provider.js leaves the rules to us here.
    await api.scripting.registerContentScripts([
      Object.assign({ id: PROVIDER_SCRIPT_IDS[0], js: ['provider-rules.js', 'provider-main.js'], world: 'MAIN' }, common),
      Object.assign({ id: PROVIDER_SCRIPT_IDS[1], js: ['provider.js'] }, common),
    ]);
    console.info(`Latchkey passkey provider: on${excluded.length ? `, except ${settings.exceptions.join(', ')}` : ''}`);
  }).catch((e) => console.warn('Latchkey passkey provider: cannot register its scripts:', e));
  return providerSync;
}

if (api.storage && api.storage.onChanged) {
  api.storage.onChanged.addListener((changes, area) => {
    if (area === 'local' && changes.provider) syncProviderScripts();
  });
  syncProviderScripts();
}

// ---------------------------------------------------------------------------
// Password sign-ins, for automatic passkey upgrades: a trusted submission of a form with a
// typed password and a user name, then a page load of the same origin in the same tab within a
// minute. Kept in storage.session (a Chromium service worker does not live that long), by
// wall-clock time for the same reason. Every read and write of that state goes through this
// chain, in the order the messages came, so a page load never reads the state before the
// submission that preceded it was written.
let signInChain = Promise.resolve();

function withSignIns(body) {
  const result = signInChain.then(body);
  signInChain = result.catch(() => undefined);
  return result;
}

async function signInState() {
  const area = api.storage.session;
  const stored = area ? await area.get(['submissions', 'signIns']) : {};
  return { area, submissions: stored.submissions || {}, signIns: stored.signIns || {} };
}

async function noteSubmission(tabId, origin, userName) {
  const state = await signInState();
  state.submissions[tabId] = { origin, time: Date.now(), userName };
  if (state.area) await state.area.set({ submissions: state.submissions });
}

async function notePageLoaded(tabId, origin) {
  const state = await signInState();
  const submission = state.submissions[tabId];
  if (!submission) return;
  delete state.submissions[tabId];
  const now = Date.now();
  if (ProviderRules.navigationCompletesSignIn(submission, origin, now)) {
    state.signIns[origin] = { time: now, userName: submission.userName };
    record(origin, 'passwordSignIn', 'ok', 'a password sign-in: a conditional create() for that user may upgrade it for a few minutes');
  }
  for (const [known, signIn] of Object.entries(state.signIns)) {
    if (!ProviderRules.signInIsRecent(signIn && signIn.time, now)) delete state.signIns[known];
  }
  if (state.area) await state.area.set({ submissions: state.submissions, signIns: state.signIns });
}

/** Takes the origin's recent sign-in if it is `userName`'s (one upgrade a sign-in); the refusal's reason otherwise. */
async function takeSignIn(origin, userName) {
  const state = await signInState();
  const signIn = state.signIns[origin];
  const refusal = ProviderRules.upgradeRefusal(signIn, userName, Date.now());
  if (refusal !== null) return refusal;
  delete state.signIns[origin];
  if (state.area) await state.area.set({ signIns: state.signIns });
  return null;
}

// ---------------------------------------------------------------------------
// Bounds: a token bucket per origin, at most one prompt a tab and MAX_PROMPTS in all, and at
// most MAX_HOST_PROVIDER_REQUESTS at the host. A request that is refused is refused at once; a
// request whose ceremony runs is never dropped to make room (background.js drops signals only).

const providerBuckets = new Map(); // origin → {tokens, updated}

function providerToken(origin) {
  const now = performance.now();
  const bucket = providerBuckets.get(origin) || { tokens: PROVIDER_BURST, updated: now };
  providerBuckets.delete(origin);
  bucket.tokens = Math.min(PROVIDER_BURST, bucket.tokens + ((now - bucket.updated) / 1000) * PROVIDER_REFILL_PER_SECOND);
  bucket.updated = now;
  providerBuckets.set(origin, bucket);
  while (providerBuckets.size > MAX_TRACKED_ORIGINS) providerBuckets.delete(providerBuckets.keys().next().value);
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

/** Sends one provider request to the host; resolves with its reply (or an InternalError). */
function askHost(request) {
  return new Promise((resolve) => {
    let atHost = 0;
    for (const entry of pending.values()) if (entry.respond) atHost++;
    if (atHost >= MAX_HOST_PROVIDER_REQUESTS) {
      resolve({ ok: false, error: 'NotAllowedError', message: 'too many passkey requests are waiting for the key' });
      return;
    }
    if (!port && !ensurePort()) {
      resolve({ ok: false, error: 'InternalError', message: `native host ${NATIVE_HOST} unavailable` });
      return;
    }
    const id = nextId++;
    pending.set(id, { origin: request.origin, method: request.type, respond: resolve });
    post(port, Object.assign({ id }, request));
  });
}

/** A host reply turned into the page's outcome. */
function outcomeOf(answer) {
  if (answer.ok === true) return { outcome: 'credential', credential: answer.credential };
  // A browser says no more than NotAllowedError for what the host could not do.
  const name = answer.error === 'InternalError' || typeof answer.error !== 'string' ? 'NotAllowedError' : answer.error;
  return { outcome: 'error', name, message: answer.message || 'The operation either timed out or was not allowed.' };
}

// ---------------------------------------------------------------------------
// Prompts: one a request, in a window of the extension's own.

const prompts = new Map(); // token → prompt (see openPrompt)
const upgrades = new Map(); // `${tabId}/${requestId}` → {aborted}: conditional create()s at the host

function promptToken() {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  return ProviderRules.encodeBase64url(bytes);
}

/** The RP ID a request names, checked against the page's host as the browser would (SecurityError). */
function requestRpId(kind, options, host) {
  const named = kind === 'get' ? options.rpId : options.rp && options.rp.id;
  const rpId = RpId.normalizeRpId(named === undefined ? host : named);
  if (rpId === null || !RpId.rpIdIsValidFor(rpId, host, suffixes)) return null;
  return rpId;
}

/**
 * Opens the prompt for a modal get(), a modal create(), or a conditional get() the person
 * asked for from the field; resolves with the page's outcome once the person chose, cancelled
 * or closed the window, or the page aborted. Nothing here depends on what the key holds.
 */
async function openPrompt(sender, origin, message) {
  const kind = message.kind === 'create' ? 'create' : 'get';
  const mediation = message.mediation === 'conditional' ? 'conditional' : 'optional';
  const options = message.options;
  if (options === null || typeof options !== 'object') return { outcome: 'error', name: 'TypeError', message: 'no options' };
  const host = RpId.parseOrigin(origin).host;
  const rpId = requestRpId(kind, options, host);
  if (rpId === null) {
    return { outcome: 'error', name: 'SecurityError', message: `this page (${host}) may not use the RP ID it names` };
  }
  const tabId = sender.tab.id;
  if (!providerToken(origin)) {
    record(origin, `${kind} (provider)`, 'rate-limited', `over ${PROVIDER_BURST} requests at once, then one every ${1 / PROVIDER_REFILL_PER_SECOND} s`);
    return NOT_ALLOWED('Too many passkey requests from this site; try again in a few seconds.');
  }
  const open = Array.from(prompts.values());
  if (open.some((p) => p.tabId === tabId)) return NOT_ALLOWED('A request is already pending.');
  if (open.length >= MAX_PROMPTS) return NOT_ALLOWED('Too many passkey requests are waiting for an answer.');
  if (kind === 'create' && !(await providerSettings()).offerSave) return { outcome: 'browser' };

  const prompt = {
    token: promptToken(), tabId, requestId: String(message.requestId), origin, rpId, kind, mediation, options,
    windowId: null, state: 'open', listed: null, aborted: false,
  };
  const done = new Promise((resolve) => { prompt.resolve = resolve; });
  prompts.set(prompt.token, prompt);
  // The request's lifetime (WebAuthn's timeout, 10 s to 10 min, 5 min when the site gives
  // none): then NotAllowedError, as a browser's dialog ends. A conditional get() has none.
  if (mediation !== 'conditional') {
    const lifetime = Math.min(Math.max(Number(options.timeout) || 300000, 10000), 600000);
    prompt.timer = setTimeout(() => settlePrompt(prompt, NOT_ALLOWED('The operation timed out.'), true), lifetime);
  }
  createPromptWindow(prompt, sender.tab.windowId);
  return done;
}

async function createPromptWindow(prompt, parentWindowId) {
  const geometry = { width: PROMPT_SIZE.width, height: PROMPT_SIZE.height };
  try {
    const parent = await api.windows.get(parentWindowId);
    if (Number.isFinite(parent.left) && Number.isFinite(parent.width)) {
      geometry.left = Math.max(0, Math.round(parent.left + (parent.width - PROMPT_SIZE.width) / 2));
      geometry.top = Math.max(0, Math.round(parent.top + 80));
    }
  } catch (e) {
    // No parent window to centre on: the browser places it.
  }
  try {
    const created = await api.windows.create(Object.assign({
      url: `${api.runtime.getURL('prompt.html')}#${prompt.token}`, type: 'popup', focused: true,
    }, geometry));
    prompt.windowId = created.id;
    // Settled while the window was being made (the page aborted): close it now.
    if (prompt.state === 'settled') api.windows.remove(created.id).catch(() => undefined);
  } catch (e) {
    console.warn('Latchkey passkey provider: cannot open the prompt window:', e);
    settlePrompt(prompt, { outcome: 'browser' }, false);
  }
}

/** Ends a prompt once: the page's request gets `outcome`; `closeWindow` closes the window. */
function settlePrompt(prompt, outcome, closeWindow) {
  if (prompt.state === 'settled') return;
  prompt.state = 'settled';
  clearTimeout(prompt.timer);
  prompts.delete(prompt.token);
  prompt.resolve(outcome);
  if (closeWindow && prompt.windowId !== null) api.windows.remove(prompt.windowId).catch(() => undefined);
}

function cancelled(prompt) {
  // A conditional get() goes on waiting (the field can open the prompt again), as a browser's
  // autofill does when its menu is dismissed; a modal request ends as a dismissed dialog does.
  return prompt.mediation === 'conditional' ? { outcome: 'dismissed' } : NOT_ALLOWED('The user cancelled the request.');
}

if (api.windows && api.windows.onRemoved) {
  api.windows.onRemoved.addListener((windowId) => {
    for (const prompt of prompts.values()) {
      if (prompt.windowId === windowId && prompt.state === 'open') settlePrompt(prompt, cancelled(prompt), false);
    }
  });
}
if (api.tabs && api.tabs.onRemoved) {
  api.tabs.onRemoved.addListener((tabId) => {
    for (const prompt of prompts.values()) if (prompt.tabId === tabId) abortPrompt(prompt);
  });
}

/** The page aborted (or went away): the prompt closes; a running ceremony's passkey is not kept. */
function abortPrompt(prompt) {
  if (prompt.state === 'running') prompt.aborted = true;
  settlePrompt(prompt, { outcome: 'aborted' }, true);
}

/**
 * A passkey the key made for a create() the page no longer waits for: hidden at once, as a
 * site's signalUnknownCredential would hide it, so the site never sees a passkey it cannot
 * know of; `latchkey signal log` shows it, and `latchkey credentials unhide ID` brings it back.
 */
function discardCredential(origin, rpId, credential) {
  record(origin, 'create', 'discarded', 'the page aborted after the passkey was made: hidden');
  console.warn(`Latchkey passkey provider: ${origin} aborted its create() after the key made the passkey; it is hidden`);
  const signal = { origin, method: 'signalUnknownCredential', options: { rpId, credentialId: credential && credential.id } };
  if (port && suffixes) dispatch(signal);
}

/** The prompt window's messages: load, choose, save, browser, cancel. */
async function onPrompt(message, sender) {
  const prompt = prompts.get(typeof message.token === 'string' ? message.token : '');
  if (!prompt || prompt.state === 'settled') return { ok: false, message: 'This request has ended.' };
  switch (message.operation) {
    case 'load': {
      const request = { kind: prompt.kind, origin: prompt.origin, rpId: prompt.rpId, mediation: prompt.mediation };
      if (prompt.kind === 'create') {
        const user = prompt.options.user || {};
        request.userName = String(user.name || user.displayName || '').slice(0, 256);
        return { ok: true, request };
      }
      const listed = await askHost({ type: 'accounts', origin: prompt.origin, rpId: prompt.rpId,
        allowCredentials: Array.isArray(prompt.options.allowCredentials) ? prompt.options.allowCredentials : [] });
      if (listed.ok === true && Array.isArray(listed.accounts)) {
        request.accounts = ProviderRules.allowedAccounts(listed.accounts, prompt.options);
      } else if (listed.error === 'SecurityError') {
        settlePrompt(prompt, outcomeOf(listed), false);
        return { ok: false, message: listed.message };
      } else {
        request.accounts = [];
      }
      prompt.listed = request.accounts.map((account) => account.credentialId);
      return { ok: true, request };
    }
    case 'choose': {
      if (prompt.kind !== 'get' || prompt.state !== 'open' || !prompt.listed
          || !prompt.listed.includes(message.credentialId)) {
        return { ok: false, message: 'That passkey was not offered.' };
      }
      prompt.state = 'running';
      const answer = await askHost({ type: 'get', origin: prompt.origin, options: prompt.options, credentialId: message.credentialId });
      settlePrompt(prompt, outcomeOf(answer), false);
      return answer.ok === true ? { ok: true } : { ok: false, message: answer.message };
    }
    case 'save': {
      if (prompt.kind !== 'create' || prompt.state !== 'open') return { ok: false, message: 'Nothing to save.' };
      prompt.state = 'running';
      const answer = await askHost({ type: 'create', origin: prompt.origin, options: prompt.options });
      if (prompt.aborted && answer.ok === true) discardCredential(prompt.origin, prompt.rpId, answer.credential);
      settlePrompt(prompt, outcomeOf(answer), false);
      return answer.ok === true ? { ok: true } : { ok: false, message: answer.message };
    }
    case 'browser':
      settlePrompt(prompt, { outcome: 'browser' }, false);
      return { ok: true };
    case 'cancel':
      settlePrompt(prompt, cancelled(prompt), false);
      return { ok: true };
    default:
      return { ok: false, message: 'unknown prompt operation' };
  }
}

// ---------------------------------------------------------------------------
// Requests from provider.js (the page's isolated world).

async function onProvider(message, sender) {
  const origin = senderOrigin(sender);
  // Top-level documents only: a frame's page cannot speak for the site the user sees.
  if (origin === null || !sender.tab || sender.frameId !== 0) {
    return { outcome: 'error', name: 'SecurityError', message: 'the passkey provider serves top-level pages only' };
  }
  const settings = await providerSettings();
  if (!settings.enabled || ProviderRules.isExcepted(RpId.parseOrigin(origin).host, settings.exceptions)) {
    return { outcome: 'browser' };
  }
  if (!RpId.isSecureOrigin(origin)) {
    return { outcome: 'error', name: 'SecurityError', message: `${origin} is not an https:// or http://localhost origin` };
  }
  // What a page passes on is bounded here: the host ends a stream with a message over 1 MiB,
  // which would drop every other tab's requests with it.
  if (message.options !== undefined && JSON.stringify(message.options).length > MAX_PROVIDER_OPTIONS) {
    return { outcome: 'error', name: 'TypeError', message: `the options are over ${MAX_PROVIDER_OPTIONS} bytes` };
  }
  switch (message.operation) {
    case 'pageLoaded':
      await withSignIns(() => notePageLoaded(sender.tab.id, origin));
      return { outcome: 'noted' };
    case 'passwordSubmitted':
      await withSignIns(() => noteSubmission(sender.tab.id, origin,
        typeof message.userName === 'string' ? message.userName.slice(0, 256) : ''));
      return { outcome: 'noted' };
    case 'check': {
      // A conditional get() waits for the person; what can be refused at once without asking
      // the key (an RP ID this page may not claim) is refused at once, as a browser does.
      const host = RpId.parseOrigin(origin).host;
      if (requestRpId('get', message.options || {}, host) === null) {
        return { outcome: 'error', name: 'SecurityError', message: `this page (${host}) may not use the RP ID it names` };
      }
      return { outcome: 'noted' };
    }
    case 'prompt':
      return openPrompt(sender, origin, message);
    case 'abort': {
      const requestId = String(message.requestId);
      for (const prompt of prompts.values()) {
        if (prompt.tabId === sender.tab.id && prompt.requestId === requestId) abortPrompt(prompt);
      }
      const upgrade = upgrades.get(`${sender.tab.id}/${requestId}`);
      if (upgrade) upgrade.aborted = true;
      return { outcome: 'noted' };
    }
    case 'upgrade': {
      // Automatic passkey upgrade (conditional create()): no UI. Only right after a password
      // sign-in on this origin, and only for the account that signed in; otherwise
      // NotAllowedError with no UI (WebAuthn L3: a conditional create() the client will not serve).
      const options = message.options || {};
      const host = RpId.parseOrigin(origin).host;
      if (requestRpId('create', options, host) === null) {
        return { outcome: 'error', name: 'SecurityError', message: `this page (${host}) may not use the RP ID it names` };
      }
      if (!providerToken(origin)) return NOT_ALLOWED('Too many passkey requests from this site.');
      const userName = options.user && typeof options.user.name === 'string' ? options.user.name : '';
      const refusal = await withSignIns(() => takeSignIn(origin, userName));
      if (refusal !== null) {
        record(origin, 'create', 'refused', `conditional create(): ${refusal}`);
        return NOT_ALLOWED(`No passkey is made without asking: ${refusal}.`);
      }
      const key = `${sender.tab.id}/${String(message.requestId)}`;
      const upgrade = { aborted: false };
      upgrades.set(key, upgrade);
      const answer = await askHost({ type: 'create', origin, options });
      upgrades.delete(key);
      if (upgrade.aborted && answer.ok === true) {
        discardCredential(origin, requestRpId('create', options, host), answer.credential);
        return { outcome: 'aborted' };
      }
      return outcomeOf(answer);
    }
    default:
      return { outcome: 'error', name: 'TypeError', message: 'unknown provider operation' };
  }
}
