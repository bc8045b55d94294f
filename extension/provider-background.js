/*
 * Latchkey passkey provider — the background's half (loaded after background.js, whose native
 * host port, askHost's `pending` map, `record` and `dispatch` it uses).
 *
 * Settings, in storage.local under "provider": {enabled, offerSave, exceptions: [host…]}. While
 * enabled, provider-main.js (MAIN world) and provider.js run in every frame, except on the
 * excepted hosts; while off, they are not registered at all, so pages see their browser. A frame
 * is served only where its permissions policy grants WebAuthn (provider.js reads it), with its
 * top-level page's origin from the browser (the tab's URL) as `topOrigin`.
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
 *   → {"id": N, "type": "create", "origin": O, "topOrigin"?: T, "crossOrigin"?: true, "options": CreationOptionsJSON}
 *   → {"id": N, "type": "get", "origin": O, "topOrigin"?: T, "crossOrigin"?: true, "options": RequestOptionsJSON,
 *      "credentialId"?: ID}
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
const MAX_PROMPTS = 8; // prompts open at once, all tabs; a tab has one at most, an origin PROMPTS_PER_ORIGIN
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
    const common = { matches: PROVIDER_MATCHES, runAt: 'document_start', allFrames: true, persistAcrossSessions: true };
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
// Bounds: token buckets per origin (prompts and upgrades; and, more generous, the cheap checks a
// conditional get() makes), at most one prompt a tab, PROMPTS_PER_ORIGIN an origin and
// MAX_PROMPTS in all, MAX_HOST_PROVIDER_REQUESTS at the host, each with a deadline. A request
// that is refused is refused at once, with the same answer whatever else is open; a request
// whose ceremony runs is never dropped to make room (background.js drops signals only).

const PROMPTS_PER_ORIGIN = 2;
const CHECK_BURST = 30; // conditional get()s an origin may start at once, then CHECK_REFILL a second
const CHECK_REFILL_PER_SECOND = 2;
const HOST_MARGIN_MS = 30000; // past a request's own timeout, how long the host may take to answer
const UPGRADE_TIMEOUT_MS = 60000; // an automatic upgrade (no window) waits for the key at most this long
const CONDITIONAL_PROMPT_MS = 10 * 60 * 1000; // a conditional get()'s window, unanswered, closes after this

const providerToken = bucketTaker(PROVIDER_BURST, PROVIDER_REFILL_PER_SECOND);
const checkToken = bucketTaker(CHECK_BURST, CHECK_REFILL_PER_SECOND);

// Host requests given up on (their deadline passed): a passkey the key made after all is hidden
// when its answer comes (background.js's onHostMessage asks abandonedAnswer).
const abandoned = new Map(); // host request id → {origin, rpId, type}

/**
 * Sends one provider request to the host; resolves with its reply, or with NotAllowedError when
 * the host does not answer within `deadlineMs` (then a passkey it makes later is hidden).
 */
function askHost(request, deadlineMs, rpId) {
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
    const timer = setTimeout(() => {
      if (!pending.delete(id)) return;
      abandoned.set(id, { origin: request.origin, rpId, type: request.type });
      while (abandoned.size > 64) abandoned.delete(abandoned.keys().next().value);
      resolve({ ok: false, error: 'NotAllowedError', message: 'the key did not answer in time' });
    }, deadlineMs || 60000);
    pending.set(id, { origin: request.origin, method: request.type, respond: (reply) => { clearTimeout(timer); resolve(reply); } });
    post(port, Object.assign({ id }, request));
  });
}

/** background.js: a host reply to a request given up on (a passkey made then is hidden). */
function abandonedAnswer(id, message) {
  const request = abandoned.get(id);
  if (!request) return false;
  abandoned.delete(id);
  if (request.type === 'create' && message.ok === true) discardCredential(request.origin, request.rpId, message.credential);
  return true;
}

/** A ceremony's deadline at the host: the request's own lifetime and a margin. */
function hostDeadline(options) {
  return Math.min(Math.max(Number(options && options.timeout) || 300000, 10000), 600000) + HOST_MARGIN_MS;
}

// What the page is told: what a browser tells it, whatever the key said (the details — a PIN, a
// key that cannot make discoverable credentials — are the prompt's and the log's, not the page's).
const PAGE_MESSAGES = {
  NotAllowedError: 'The operation either timed out or was not allowed.',
  InvalidStateError: 'The user attempted to register an authenticator that contains one of the credentials already registered with the relying party.',
  NotSupportedError: 'None of the requested algorithms is supported.',
};

/** A host reply turned into the page's outcome. */
function outcomeOf(answer) {
  if (answer.ok === true) return { outcome: 'credential', credential: answer.credential };
  // A browser says no more than NotAllowedError for what the host could not do.
  const name = typeof answer.error !== 'string' || !['SecurityError', 'TypeError', 'InvalidStateError', 'NotSupportedError']
    .includes(answer.error) ? 'NotAllowedError' : answer.error;
  // SecurityError and TypeError depend on the page's own request only: their words may stay.
  const message = PAGE_MESSAGES[name] || String(answer.message || name).slice(0, 300);
  return { outcome: 'error', name, message };
}

// ---------------------------------------------------------------------------
// Prompts: one a request, in a window of the extension's own.

const prompts = new Map(); // token → prompt (see openPrompt)
const upgrades = new Map(); // `${tabId}/${requestId}` → {settled}: conditional create()s at the host

function promptToken() {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  return ProviderRules.encodeBase64url(bytes);
}

/**
 * The public suffix rules from the host (opening it if need be, and waiting for its first
 * answer): without them an RP ID cannot be checked. A host that cannot start closes the port at
 * once; one that starts slowly (a loaded machine, an emulator) gets up to 30 s. Null: no host.
 */
async function suffixRules() {
  if (suffixes) return suffixes;
  if (!port && !ensurePort()) return null;
  for (let waited = 0; !suffixes && port && waited < 30000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return suffixes;
}

/** The RP ID a request names, checked against the page's host as the browser would (null: SecurityError). */
function requestRpId(kind, options, host, rules) {
  const named = kind === 'get' ? options.rpId : options.rp && options.rp.id;
  const rpId = RpId.normalizeRpId(named === undefined ? host : named);
  if (rpId === null || !RpId.rpIdIsValidFor(rpId, host, rules)) return null;
  return rpId;
}

/**
 * Checks a request as a browser would before anything is shown: its options (TypeError), its
 * RP ID (SecurityError). Returns {options, rpId} or an outcome to answer at once. Nothing here
 * depends on what the key holds.
 */
async function checkedRequest(kind, options, origin) {
  let clean;
  try {
    clean = kind === 'get' ? ProviderRules.cleanRequestOptions(options) : ProviderRules.cleanCreationOptions(options);
  } catch (e) {
    return { answer: { outcome: 'error', name: 'TypeError', message: String(e && e.message) } };
  }
  const rules = await suffixRules();
  if (!rules) return { answer: { outcome: 'browser' } }; // no native host: the browser answers, as without Latchkey
  const host = RpId.parseOrigin(origin).host;
  const rpId = requestRpId(kind, clean, host, rules);
  if (rpId === null) return { answer: { outcome: 'error', name: 'SecurityError', message: `this page (${host}) may not use the RP ID it names` } };
  return { options: clean, rpId };
}

/**
 * Opens the prompt for a modal get(), a modal create(), or a conditional get() the person
 * asked for from the field; resolves with the page's outcome once the person chose, cancelled
 * or closed the window, or the page aborted. Nothing here depends on what the key holds. `frame`:
 * the request's place (`frameOf`), already found.
 */
async function openPrompt(sender, origin, message, frame) {
  const kind = message.kind === 'create' ? 'create' : 'get';
  const mediation = message.mediation === 'conditional' ? 'conditional' : 'optional';
  const tabId = sender.tab.id;
  // Browsers serve WebAuthn to the focused, visible document only; so does Latchkey's window.
  if (mediation !== 'conditional' && sender.tab.active === false) return NOT_ALLOWED('The document is not focused.');
  const settings = await providerSettings();
  const checked = await checkedRequest(kind, message.options, origin);
  if (checked.answer) return checked.answer;
  if (kind === 'create' && !settings.offerSave) return { outcome: 'browser' };
  // Every bound is checked and the slot taken without an await between them.
  if (!providerToken(origin)) {
    record(origin, `${kind} (provider)`, 'rate-limited', `over ${PROVIDER_BURST} requests at once, then one every ${1 / PROVIDER_REFILL_PER_SECOND} s`);
    return NOT_ALLOWED('A request is already pending.');
  }
  const open = Array.from(prompts.values());
  if (open.some((p) => p.tabId === tabId) || open.filter((p) => p.origin === origin).length >= PROMPTS_PER_ORIGIN
      || open.length >= MAX_PROMPTS) {
    return NOT_ALLOWED('A request is already pending.');
  }
  const prompt = {
    token: promptToken(), tabId, parentWindowId: sender.tab.windowId, requestId: String(message.requestId), origin,
    frame, frameId: sender.frameId, rpId: checked.rpId, kind, mediation,
    options: checked.options, windowId: null, state: 'open', listed: null,
  };
  const done = new Promise((resolve) => { prompt.resolve = resolve; });
  prompts.set(prompt.token, prompt);
  // The request's lifetime (WebAuthn's timeout, 10 s to 10 min, 5 min when the site gives
  // none): then NotAllowedError, as a browser's dialog ends. A conditional get()'s window closes
  // unanswered after 10 minutes (its request goes on waiting).
  const lifetime = mediation === 'conditional' ? CONDITIONAL_PROMPT_MS
    : Math.min(Math.max(Number(checked.options.timeout) || 300000, 10000), 600000);
  prompt.timer = setTimeout(() => settlePrompt(prompt, mediation === 'conditional' ? { outcome: 'dismissed' }
    : NOT_ALLOWED('The operation timed out.')), lifetime);
  createPromptWindow(prompt);
  return done;
}

async function createPromptWindow(prompt) {
  const geometry = { width: PROMPT_SIZE.width, height: PROMPT_SIZE.height };
  try {
    const parent = await api.windows.get(prompt.parentWindowId);
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
    settlePrompt(prompt, { outcome: 'browser' });
  }
}

/**
 * Ends a prompt once: its window closes (unless it shows why a ceremony failed) and the page's
 * window gets the focus back — browsers serve WebAuthn to the focused document only, so the
 * browser's own dialog, or the page's next request, needs it —, then the page's request gets
 * `outcome`. A ceremony still running at the key when the prompt ends (the page aborted, the
 * time ran out, the tab went away) is given up: a passkey it makes is hidden.
 */
async function settlePrompt(prompt, outcome, keepWindow) {
  if (prompt.state === 'settled') return;
  prompt.state = 'settled';
  clearTimeout(prompt.timer);
  prompts.delete(prompt.token);
  if (!keepWindow && prompt.windowId !== null) {
    await api.windows.remove(prompt.windowId).catch(() => undefined);
    await api.windows.update(prompt.parentWindowId, { focused: true }).catch(() => undefined);
  }
  prompt.resolve(outcome);
}

function cancelled(prompt) {
  // A conditional get() goes on waiting (the field can open the prompt again), as a browser's
  // autofill does when its menu is dismissed; a modal request ends as a dismissed dialog does.
  return prompt.mediation === 'conditional' ? { outcome: 'dismissed' } : NOT_ALLOWED('The user cancelled the request.');
}

if (api.windows && api.windows.onRemoved) {
  api.windows.onRemoved.addListener((windowId) => {
    for (const prompt of prompts.values()) {
      if (prompt.windowId === windowId && prompt.state === 'open') settlePrompt(prompt, cancelled(prompt), true);
    }
  });
}

/** The tab went away or loaded another page: its prompts end, its upgrades are given up. */
function endTab(tabId) {
  for (const prompt of prompts.values()) if (prompt.tabId === tabId) abortPrompt(prompt);
  for (const [key, upgrade] of upgrades) if (key.startsWith(`${tabId}/`)) upgrade.settled = true;
}
if (api.tabs && api.tabs.onRemoved) {
  api.tabs.onRemoved.addListener((tabId) => {
    endTab(tabId);
    withSignIns(async () => {   // its recorded password submission goes too
      const state = await signInState();
      if (state.submissions[tabId] && state.area) {
        delete state.submissions[tabId];
        await state.area.set({ submissions: state.submissions });
      }
    });
  });
}
if (api.tabs && api.tabs.onUpdated) {
  // status "loading": the tab navigates (needs no permission); its page's requests are gone.
  api.tabs.onUpdated.addListener((tabId, change) => {
    if (change.status === 'loading') endTab(tabId);
  });
}

/** The page aborted (or went away): the prompt closes; a running ceremony's passkey is not kept. */
function abortPrompt(prompt) {
  settlePrompt(prompt, { outcome: 'aborted' });
}

/**
 * A passkey the key made for a create() the page no longer waits for: hidden at once, as a
 * site's signalUnknownCredential would hide it, so the site never sees a passkey it cannot
 * know of; `latchkey signal log` shows it, and `latchkey credentials unhide ID` brings it back.
 */
function discardCredential(origin, rpId, credential) {
  record(origin, 'create', 'discarded', 'the page no longer waited when the passkey was made: hidden');
  console.warn(`Latchkey passkey provider: ${origin} no longer waited when the key made its passkey; it is hidden`);
  const signal = { origin, method: 'signalUnknownCredential', options: { rpId, credentialId: credential && credential.id } };
  if (port && suffixes) dispatch(signal);
}

/**
 * Runs the person's choice on the key. A key that wants its PIN answers with `pin` ({state,
 * retries, minLength}): while the PIN can still be tried, the page's request stays open and the
 * window asks for it (the PIN goes to the host for this one ceremony, and nowhere else).
 */
async function runCeremony(prompt, request, pin) {
  prompt.state = 'running';
  if (!(await sameTop(prompt))) {
    settlePrompt(prompt, NOT_ALLOWED('The page around this frame changed.'));
    return { ok: false, message: 'The page around this frame changed; nothing was sent to your key.' };
  }
  if (typeof pin === 'string' && pin !== '') request.pin = pin.slice(0, 256);
  const answer = await askHost(request, hostDeadline(prompt.options), prompt.rpId);
  if (prompt.state === 'settled') {
    // Given up while the key worked (the page aborted, the time ran out, the tab went away).
    if (request.type === 'create' && answer.ok === true) discardCredential(prompt.origin, prompt.rpId, answer.credential);
    return { ok: false, message: 'This request has ended.' };
  }
  if (answer.ok !== true && answer.pin && ['required', 'wrong', 'tooShort'].includes(answer.pin.state)) {
    prompt.state = 'open';
    return { ok: false, pin: answer.pin, message: answer.message };
  }
  // The window shows why a ceremony failed (the person closes it); success closes it.
  settlePrompt(prompt, outcomeOf(answer), answer.ok !== true);
  return answer.ok === true ? { ok: true } : { ok: false, message: answer.message };
}

/** The host's account list as the prompt shows it: the request's, names made safe to show. */
function shownAccounts(listed, options) {
  return ProviderRules.allowedAccounts(Array.isArray(listed.accounts) ? listed.accounts : [], options).map((account) => ({
    credentialId: String(account.credentialId), name: ProviderRules.displayText(account.name, 80),
    displayName: ProviderRules.displayText(account.displayName, 80) }));
}

/** The prompt window's messages: load, verify, choose, save, browser, cancel. */
async function onPrompt(message, sender) {
  const prompt = prompts.get(typeof message.token === 'string' ? message.token : '');
  if (!prompt || prompt.state === 'settled') return { ok: false, message: 'This request has ended.' };
  // The token is bound to the window the background opened for it.
  const windowId = sender.tab && sender.tab.windowId;
  if (prompt.windowId !== null && windowId !== undefined && windowId !== prompt.windowId) {
    return { ok: false, message: 'This request belongs to another window.' };
  }
  switch (message.operation) {
    case 'load': {
      const user = prompt.options.user || {};
      const request = { kind: prompt.kind, origin: prompt.origin, rpId: prompt.rpId, mediation: prompt.mediation,
        userName: ProviderRules.displayText(user.name, 80), userDisplayName: ProviderRules.displayText(user.displayName, 80) };
      if (prompt.frame) request.topOrigin = prompt.frame.top;
      if (prompt.kind === 'create') return { ok: true, request };
      const listed = await askHost({ type: 'accounts', origin: prompt.origin, rpId: prompt.rpId,
        allowCredentials: prompt.options.allowCredentials }, 30000, prompt.rpId);
      request.accounts = listed.ok === true ? shownAccounts(listed, prompt.options) : [];
      if (listed.ok !== true) request.notice = 'Latchkey could not read its passkeys for this site.';
      prompt.listed = request.accounts.map((account) => account.credentialId);
      return { ok: true, request };
    }
    case 'verify': {
      // The person asked to see every passkey a verified sign-in may use: the key verifies them
      // (built-in UV, or its PIN from the window), then the host lists credProtect 2 and 3 too.
      if (prompt.kind !== 'get' || prompt.state !== 'open') return { ok: false, message: 'Nothing to verify for.' };
      prompt.state = 'running';
      const request = { type: 'accounts', origin: prompt.origin, rpId: prompt.rpId,
        allowCredentials: prompt.options.allowCredentials, verify: true };
      if (typeof message.pin === 'string' && message.pin !== '') request.pin = message.pin.slice(0, 256);
      const listed = await askHost(request, hostDeadline(prompt.options), prompt.rpId);
      if (prompt.state === 'settled') return { ok: false, message: 'This request has ended.' };
      prompt.state = 'open';
      if (listed.ok !== true) return { ok: false, pin: listed.pin, message: listed.message || 'The key did not verify you.' };
      const accounts = shownAccounts(listed, prompt.options);
      prompt.listed = accounts.map((account) => account.credentialId);
      // The sign-in the person then chooses is verified: a protected passkey needs it.
      prompt.options = Object.assign({}, prompt.options, { userVerification: 'required' });
      return { ok: true, accounts };
    }
    case 'choose': {
      if (prompt.kind !== 'get' || prompt.state !== 'open' || !prompt.listed
          || !prompt.listed.includes(message.credentialId)) {
        return { ok: false, message: 'That passkey was not offered.' };
      }
      return runCeremony(prompt, withTopOrigin(prompt, { type: 'get', origin: prompt.origin, options: prompt.options,
        credentialId: message.credentialId }), message.pin);
    }
    case 'save': {
      if (prompt.kind !== 'create' || prompt.state !== 'open') return { ok: false, message: 'Nothing to save.' };
      return runCeremony(prompt, withTopOrigin(prompt, { type: 'create', origin: prompt.origin, options: prompt.options }),
        message.pin);
    }
    case 'browser':
    case 'cancel':
      if (prompt.state !== 'open') return { ok: false, message: 'Your key is already working on it.' };
      settlePrompt(prompt, message.operation === 'browser' ? { outcome: 'browser' } : cancelled(prompt));
      return { ok: true };
    default:
      return { ok: false, message: 'unknown prompt operation' };
  }
}

// ---------------------------------------------------------------------------
// Requests from provider.js (the page's isolated world).

/** The origin of the tab's top-level page, from the browser (its URL); null when not a secure one. */
function tabTopOrigin(tab) {
  try {
    const top = new URL(tab.url).origin;
    return RpId.isSecureOrigin(top) ? top : null;
  } catch (e) {
    return null;
  }
}

/**
 * Where a frame's request stands (WebAuthn L3 §5.1.3): null for a top-level page, or a frame
 * same-origin with all its ancestors (signed as the top-level page is); `{top, crossOrigin: true}`
 * for a frame cross-origin with an ancestor, `top` being the tab's top-level origin from the
 * browser; `undefined` when that cannot be known for sure, and the browser answers: a document
 * not active (prerendering, leaving), a top-level page that is not a secure origin (a sandboxed
 * or opaque one), or a top the frame is told differs from the tab's (a navigation in between).
 * `message.frame` is provider.js's (the isolated world's) view: sameOriginWithAncestors and, in
 * Chromium, location.ancestorOrigins.
 */
function frameOf(sender, message, origin) {
  if (sender.frameId === 0) return null;
  if (typeof sender.documentLifecycle === 'string' && sender.documentLifecycle !== 'active') return undefined;
  const top = tabTopOrigin(sender.tab);
  if (top === null) return undefined;
  const seen = message.frame !== null && typeof message.frame === 'object' ? message.frame : {};
  if (typeof seen.ancestorTop === 'string' && seen.ancestorTop !== top) return undefined;
  return top !== origin || seen.crossOrigin === true ? { top, crossOrigin: true } : null;
}

function withTopOrigin(prompt, request) {
  if (prompt.frame) Object.assign(request, { topOrigin: prompt.frame.top, crossOrigin: true });
  return request;
}

/** A frame's top-level page is still the one it asked under (the tab may have navigated). */
async function sameTop(prompt) {
  if (!prompt.frame) return true;
  try {
    return tabTopOrigin(await api.tabs.get(prompt.tabId)) === prompt.frame.top;
  } catch (e) {
    return false;
  }
}

async function onProvider(message, sender) {
  const origin = senderOrigin(sender);
  if (origin === null || !sender.tab) {
    return { outcome: 'error', name: 'SecurityError', message: 'the passkey provider serves pages in tabs only' };
  }
  // A frame whose top-level page cannot be known for sure: the browser answers it.
  const frame = frameOf(sender, message, origin);
  if (frame === undefined) return { outcome: 'browser' };
  const topHost = sender.frameId === 0 ? null : (RpId.parseOrigin(tabTopOrigin(sender.tab)) || {}).host || null;
  const settings = await providerSettings();
  // An excepted site is excepted with its frames too (the person sees the top-level site).
  if (!settings.enabled || ProviderRules.isExcepted(RpId.parseOrigin(origin).host, settings.exceptions)
      || (topHost !== null && ProviderRules.isExcepted(topHost, settings.exceptions))) {
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
      // Password sign-ins are the top-level page's (what the person sees in the address bar).
      if (sender.frameId !== 0) return { outcome: 'noted' };
      await withSignIns(() => notePageLoaded(sender.tab.id, origin));
      return { outcome: 'noted' };
    case 'passwordSubmitted':
      if (sender.frameId !== 0) return { outcome: 'noted' };
      await withSignIns(() => noteSubmission(sender.tab.id, origin,
        typeof message.userName === 'string' ? ProviderRules.displayText(message.userName, 256) : ''));
      return { outcome: 'noted' };
    case 'check': {
      // A conditional get() waits for the person; what can be refused at once without asking
      // the key (options of the wrong shape, an RP ID the page may not claim) is refused at once,
      // as a browser does.
      if (!checkToken(origin)) return NOT_ALLOWED('A request is already pending.');
      const checked = await checkedRequest('get', message.options, origin);
      return checked.answer || { outcome: 'noted' };
    }
    case 'prompt':
      return openPrompt(sender, origin, message, frame);
    case 'abort': {
      const requestId = String(message.requestId);
      for (const prompt of prompts.values()) {
        if (prompt.tabId === sender.tab.id && prompt.frameId === sender.frameId && prompt.requestId === requestId) abortPrompt(prompt);
      }
      const upgrade = upgrades.get(`${sender.tab.id}/${requestId}`);
      if (upgrade) upgrade.settled = true;
      return { outcome: 'noted' };
    }
    case 'upgrade': {
      // Automatic passkey upgrade (conditional create()): no UI. Only right after a password
      // sign-in on this origin, and only for the account that signed in; otherwise
      // NotAllowedError with no UI (WebAuthn L3: a conditional create() the client will not serve).
      // Sign-ins are recorded for top-level pages, so a frame has none.
      if (sender.frameId !== 0) return NOT_ALLOWED(PAGE_MESSAGES.NotAllowedError);
      const checked = await checkedRequest('create', message.options, origin);
      if (checked.answer) return checked.answer.outcome === 'browser' ? NOT_ALLOWED(PAGE_MESSAGES.NotAllowedError) : checked.answer;
      if (!providerToken(origin)) return NOT_ALLOWED(PAGE_MESSAGES.NotAllowedError);
      const options = checked.options;
      const refusal = await withSignIns(() => takeSignIn(origin, options.user.name));
      if (refusal !== null) {
        record(origin, 'create', 'refused', `conditional create(): ${refusal}`);
        return NOT_ALLOWED(PAGE_MESSAGES.NotAllowedError);
      }
      // No window: the key's own approval is the person's; it may take a minute at most.
      options.timeout = Math.min(Number(options.timeout) || UPGRADE_TIMEOUT_MS, UPGRADE_TIMEOUT_MS);
      const key = `${sender.tab.id}/${String(message.requestId)}`;
      const upgrade = { settled: false };
      upgrades.set(key, upgrade);
      const answer = await askHost({ type: 'create', origin, options }, hostDeadline(options), checked.rpId);
      upgrades.delete(key);
      if (upgrade.settled && answer.ok === true) {
        discardCredential(origin, checked.rpId, answer.credential);
        return { outcome: 'aborted' };
      }
      return outcomeOf(answer);
    }
    default:
      return { outcome: 'error', name: 'TypeError', message: 'unknown provider operation' };
  }
}
