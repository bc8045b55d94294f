/*
 * Latchkey signal bridge — background (Chromium: service worker; Firefox:
 * event page, which loads rpid.js first through manifest "scripts").
 *
 * Takes the signals relay.js passes on, checks them again — a content script's
 * message says only what the page said — and forwards the good ones to
 * Latchkey's native-messaging host, which hides or renames credentials.
 *
 * Wire format with the host (one JSON object per message, both ways):
 *   → {"id": N, "type": "publicSuffixes"}                      first, on connect
 *   ← {"id": N, "ok": true, "rules": ["com", "*.ck", "!www.ck", …]}
 *   → {"id": N, "type": "signal", "origin": "https://…",
 *      "method": "unknownCredential" | "allAcceptedCredentials" | "currentUserDetails",
 *      "options": {rpId, credentialId} | {rpId, userId, allAcceptedCredentialIds}
 *                 | {rpId, userId, name, displayName}}
 *   ← {"id": N, "ok": true, "hidden": […], "unhidden": […], "renamed": […], "prfUsed": […] (when not empty)}
 *   ← {"id": N, "ok": false, "error": "SecurityError" | "TypeError" | "NotFoundError"
 *      | "InternalError" | "QuotaExceededError", "message": "…"}
 */
'use strict';

// In Chromium's service worker, manifest "scripts" is ignored: load the shared rules here.
if (typeof importScripts === 'function' && typeof globalThis.LatchkeyRpId === 'undefined') {
  importScripts('rpid.js', 'provider-rules.js');
}

const api = globalThis.browser ?? globalThis.chrome;
const RpId = globalThis.LatchkeyRpId;
const ProviderRules = globalThis.LatchkeyProviderRules;

const NATIVE_HOST = 'org.latchkey.bridge';

// PublicKeyCredential method → the host's method name.
const WIRE_METHODS = new Map([
  ['signalUnknownCredential', 'unknownCredential'],
  ['signalAllAcceptedCredentials', 'allAcceptedCredentials'],
  ['signalCurrentUserDetails', 'currentUserDetails'],
]);

const BUCKET_CAPACITY = 16; // signals an origin may send in a burst
const BUCKET_REFILL_PER_SECOND = 1;
const MAX_TRACKED_ORIGINS = 1000;
const MAX_QUEUED = 64; // signals waiting for the public suffix rules
const MAX_PENDING = 1024; // signals sent to the host and not yet answered
const RECONNECT_INTERVAL_MS = 5000;
const RECENT_OUTCOMES = 20;

// ---------------------------------------------------------------------------
// Recent outcomes, for debugging from the extension's console:
//   latchkeyBridgeRecent

globalThis.latchkeyBridgeRecent = [];

function record(origin, method, outcome, detail) {
  const recent = globalThis.latchkeyBridgeRecent;
  recent.push({ time: new Date().toISOString(), origin, method, outcome, detail });
  if (recent.length > RECENT_OUTCOMES) recent.splice(0, recent.length - RECENT_OUTCOMES);
}

function refuse(origin, method, reason) {
  console.warn(`Latchkey signal bridge: refused ${method} from ${origin}: ${reason}`);
  record(origin, method, 'refused', reason);
}

// ---------------------------------------------------------------------------
// Rate limit: one token bucket per origin. A Map keeps insertion order; an
// origin is re-inserted on each use, so the first key is the least recently
// used, dropped when more than MAX_TRACKED_ORIGINS are tracked. (A forgotten
// origin starts again with a full bucket; reaching that needs a thousand
// other origins, each limited too.)

const buckets = new Map(); // origin → {tokens, updated, dropped, warned}

function takeToken(origin, method) {
  const now = performance.now();
  let bucket = buckets.get(origin);
  if (bucket) {
    buckets.delete(origin);
    const elapsed = (now - bucket.updated) / 1000;
    bucket.tokens = Math.min(BUCKET_CAPACITY, bucket.tokens + elapsed * BUCKET_REFILL_PER_SECOND);
    bucket.updated = now;
  } else {
    bucket = { tokens: BUCKET_CAPACITY, updated: now, dropped: 0, warned: -Infinity };
  }
  buckets.set(origin, bucket);
  while (buckets.size > MAX_TRACKED_ORIGINS) buckets.delete(buckets.keys().next().value);

  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return true;
  }
  // Over the limit: dropped, nothing queued. At most one warning (and one
  // record) per origin per second, counting the drops since the previous one,
  // so the limit does not turn into a flood of warnings.
  bucket.dropped++;
  if (now - bucket.warned >= 1000) {
    const detail = `${bucket.dropped} signal(s) dropped (limit: ${BUCKET_CAPACITY} at once, then ${BUCKET_REFILL_PER_SECOND}/s)`;
    console.warn(`Latchkey signal bridge: rate-limited ${origin}: ${detail}`);
    record(origin, method, 'rate-limited', detail);
    bucket.warned = now;
    bucket.dropped = 0;
  }
  return false;
}

// ---------------------------------------------------------------------------
// The native host. One long-lived port, opened when first needed; while it is
// open, Chromium keeps the service worker alive too.

let port = null; // the open port, or null
let rulesRequestId = null; // id of the publicSuffixes request awaiting its reply
let suffixes = null; // PublicSuffixMatcher from the host, for the current port
let nextId = 1;
let lastConnectAttempt = -Infinity;
const queue = []; // {origin, method, options} waiting for the rules
const pending = new Map(); // id → {origin, method}, in the order sent

/** Opens the port if there is none and a connection may be tried; true if one is open. */
function ensurePort() {
  if (port) return true;
  const now = performance.now();
  if (now - lastConnectAttempt < RECONNECT_INTERVAL_MS) return false;
  lastConnectAttempt = now;

  let newPort;
  try {
    newPort = api.runtime.connectNative(NATIVE_HOST);
  } catch (e) {
    console.warn(`Latchkey signal bridge: cannot connect to ${NATIVE_HOST}:`, e);
    return false;
  }
  port = newPort;
  suffixes = null;
  newPort.onMessage.addListener((message) => onHostMessage(newPort, message));
  newPort.onDisconnect.addListener(() => onHostDisconnect(newPort));
  rulesRequestId = nextId++;
  // A failed connection (host not installed, not allowed…) shows up as a
  // disconnect, which refuses whatever is queued.
  return post(newPort, { id: rulesRequestId, type: 'publicSuffixes' });
}

/** Sends one message; a port that cannot take it is closed. */
function post(target, message) {
  try {
    target.postMessage(message);
    return true;
  } catch (e) {
    closePort(target, `sending failed: ${e && e.message ? e.message : e}`);
    return false;
  }
}

/** Forgets `target` (if still current), refusing queued signals and dropping pending ones. */
function closePort(target, reason) {
  if (target !== port) return;
  port = null;
  suffixes = null;
  rulesRequestId = null;
  try {
    target.disconnect(); // no-op when already disconnected; fires no onDisconnect of ours
  } catch (e) {
    // Already gone.
  }
  for (const signal of queue.splice(0)) {
    refuse(signal.origin, signal.method, `native host unavailable (${reason})`);
  }
  if (pending.size > 0) {
    console.warn(`Latchkey signal bridge: ${pending.size} request(s) without a reply dropped: ${reason}`);
    for (const request of pending.values()) {
      record(request.origin, request.method, 'dropped', reason);
      if (request.respond) request.respond({ ok: false, error: 'InternalError', message: `native host unavailable (${reason})` });
    }
    pending.clear();
  }
}

function onHostDisconnect(target) {
  // Chromium reports why in runtime.lastError (which must be read here anyway,
  // or it logs "Unchecked runtime.lastError"); Firefox in port.error.
  const lastError = api.runtime.lastError;
  const error = target.error || lastError;
  const reason = error && error.message ? error.message : 'the native host disconnected';
  if (target === port) console.warn(`Latchkey signal bridge: ${NATIVE_HOST} disconnected: ${reason}`);
  closePort(target, reason);
}

function onHostMessage(target, message) {
  if (target !== port) return;
  if (message === null || typeof message !== 'object' || !Number.isSafeInteger(message.id)) {
    console.warn('Latchkey signal bridge: malformed reply from the native host', message);
    return;
  }

  if (message.id === rulesRequestId) {
    rulesRequestId = null;
    if (message.ok !== true || !Array.isArray(message.rules)) {
      const reason = `public suffix rules refused: ${message.error || 'no rules'}${
        message.message ? ` (${message.message})` : ''}`;
      console.warn(`Latchkey signal bridge: ${reason}`);
      closePort(target, reason); // the next signal reconnects, after RECONNECT_INTERVAL_MS
      return;
    }
    suffixes = new RpId.PublicSuffixMatcher(message.rules);
    console.info(`Latchkey signal bridge: connected to ${NATIVE_HOST}, ${suffixes.size} public suffix rules`);
    for (const signal of queue.splice(0)) dispatch(signal);
    return;
  }

  const request = pending.get(message.id);
  if (!request) {
    console.warn(`Latchkey signal bridge: reply to an unknown request ${message.id}`);
    return;
  }
  pending.delete(message.id);
  if (request.respond) {
    // A passkey provider request: its reply goes back to the page's provider.js as it is.
    record(request.origin, request.method, message.ok === true ? 'ok' : 'error',
      message.ok === true ? '' : `${message.error}: ${message.message || ''}`);
    request.respond(message);
    return;
  }
  const where = `${request.method} from ${request.origin}`;
  if (message.ok === true) {
    const count = (list) => (Array.isArray(list) ? list.length : 0);
    let detail = `hidden ${count(message.hidden)}, unhidden ${count(message.unhidden)}, renamed ${count(message.renamed)}`;
    if (count(message.prfUsed) > 0) {
      // Hidden passkeys that gave PRF outputs: the site may have encrypted data with them.
      detail += `; ${count(message.prfUsed)} of the hidden gave PRF outputs (\`latchkey credentials unhide ID\` brings one back)`;
      console.warn(`Latchkey signal bridge: ${where}: ${detail}`);
    } else {
      console.info(`Latchkey signal bridge: ${where}: ${detail}`);
    }
    record(request.origin, request.method, 'ok', detail);
  } else {
    const detail = `${message.error || 'error'}: ${message.message || ''}`;
    console.warn(`Latchkey signal bridge: ${where}: ${detail}`);
    record(request.origin, request.method, 'error', detail);
  }
}

/** Checks a signal against the public suffix rules and sends it. Needs `suffixes`. */
function dispatch(signal) {
  if (!port || !suffixes) {
    // The port closed while the queue was being drained.
    refuse(signal.origin, signal.method, `native host ${NATIVE_HOST} unavailable`);
    return;
  }
  const host = RpId.parseOrigin(signal.origin).host;
  const checked = RpId.checkSignal(signal.method, signal.options, host, suffixes);
  if (!checked.options) {
    refuse(signal.origin, signal.method, `${checked.errorName}: ${checked.message}`);
    return;
  }
  if (pending.size >= MAX_PENDING) {
    // The host stopped answering; forget the oldest request (a provider request is answered).
    const [oldestId, oldest] = pending.entries().next().value;
    pending.delete(oldestId);
    if (oldest.respond) oldest.respond({ ok: false, error: 'InternalError', message: 'the native host did not answer' });
    console.warn(`Latchkey signal bridge: no reply to ${oldest.method} from ${oldest.origin}; dropped`);
    record(oldest.origin, oldest.method, 'dropped', 'no reply');
  }
  const id = nextId++;
  pending.set(id, { origin: signal.origin, method: signal.method });
  post(port, {
    id,
    type: 'signal',
    origin: signal.origin,
    method: WIRE_METHODS.get(signal.method),
    options: checked.options,
  });
}

// ---------------------------------------------------------------------------
// Signals from the content scripts.

/** The sender's origin, from the browser: Chromium gives it, Firefox gives the URL. */
function senderOrigin(sender) {
  if (typeof sender.origin === 'string') return sender.origin;
  if (typeof sender.url === 'string') {
    try {
      return new URL(sender.url).origin;
    } catch (e) {
      return null;
    }
  }
  return null;
}

function onSignal(message, sender) {
  const method = message.method;
  const methodName = typeof method === 'string' ? method : `(a ${typeof method})`;
  const origin = senderOrigin(sender);
  if (origin === null) {
    refuse('(no origin)', methodName, 'the sender has no URL');
    return;
  }
  if (!RpId.isSecureOrigin(origin)) {
    refuse(origin, methodName, 'not an https:// or http://localhost origin');
    return;
  }
  if (!WIRE_METHODS.has(method)) {
    refuse(origin, methodName, 'not a signal method');
    return;
  }
  if (!takeToken(origin, method)) return;

  // Everything but the public suffix rules can be checked now, so a malformed
  // signal is refused at once and never takes a place in the queue.
  const host = RpId.parseOrigin(origin).host;
  const checked = RpId.checkSignal(method, message.options, host, null);
  if (!checked.options) {
    refuse(origin, method, `${checked.errorName}: ${checked.message}`);
    return;
  }
  const refusal = RpId.hostRefusal(checked.options);
  if (refusal !== null) {
    refuse(origin, method, `the native host would refuse it: ${refusal}`);
    return;
  }
  const signal = { origin, method, options: checked.options };

  if (port && suffixes) {
    dispatch(signal);
    return;
  }
  // No port (never opened, or closed): open one, at most every
  // RECONNECT_INTERVAL_MS; meanwhile signals are refused.
  if (!port && !ensurePort()) {
    refuse(origin, method, `native host ${NATIVE_HOST} unavailable (retrying at most every ${RECONNECT_INTERVAL_MS / 1000} s)`);
    return;
  }
  if (queue.length >= MAX_QUEUED) {
    refuse(origin, method, `${MAX_QUEUED} signals already wait for the public suffix rules`);
    return;
  }
  queue.push(signal);
}

// Registered synchronously at the top level, so a Chromium service worker
// woken by a message finds it.
api.runtime.onMessage.addListener((message, sender, sendResponse) => {
  // Only this extension's own content scripts; never another extension's.
  if (!sender || sender.id !== api.runtime.id) return;
  if (message === null || typeof message !== 'object') return;
  if (message.type === 'provider') {
    // The passkey provider: answered through sendResponse (`return true` keeps the channel
    // open in both browsers), always, so provider.js never waits for nothing.
    onProvider(message, sender).then(sendResponse, (e) => {
      console.warn('Latchkey passkey provider: request failed', e);
      sendResponse({ ok: false, error: 'InternalError', message: String(e && e.message ? e.message : e) });
    });
    return true;
  }
  if (message.type !== 'signal') return;
  try {
    onSignal(message, sender);
  } catch (e) {
    console.warn('Latchkey signal bridge: signal handling failed', e);
  }
  // Returns nothing: there is no reply. (In Chromium, `true` would keep the
  // channel open; in Firefox, a returned promise would become the reply.)
});

// ---------------------------------------------------------------------------
// The passkey provider (off until the user turns it on in the options page).
//
// Settings, in storage.local under "provider": {enabled, newPasskeys, exceptions: [host…]}.
// While enabled, provider-main.js (MAIN world) and provider.js run in top-level pages, except on
// the excepted hosts; while off, they are not registered at all, so pages see their browser.
//
// Wire format with the host (docs/native-host.md, "The passkey provider"):
//   → {"id": N, "type": "accounts", "origin": O, "rpId"?: R}
//   ← {"id": N, "ok": true, "rpId": R, "accounts": [{credentialId, userHandle, name, displayName}]}
//   → {"id": N, "type": "create", "origin": O, "options": CreationOptionsJSON}
//   → {"id": N, "type": "get", "origin": O, "options": RequestOptionsJSON, "credentialId"?: ID}
//   ← {"id": N, "ok": true, "credential": RegistrationResponseJSON | AuthenticationResponseJSON}
//   ← {"id": N, "ok": false, "error": "NotAllowedError" | "SecurityError" | …, "message": "…"}

const MAX_PROVIDER_OPTIONS = 64 * 1024; // JSON characters of a create()/get()'s options
const PROVIDER_SCRIPT_IDS = ['latchkey-provider-main', 'latchkey-provider'];
const PROVIDER_MATCHES = ['https://*/*', 'http://localhost/*', 'http://127.0.0.1/*', 'http://[::1]/*'];

async function providerSettings() {
  const stored = await api.storage.local.get('provider');
  const settings = stored && stored.provider && typeof stored.provider === 'object' ? stored.provider : {};
  return {
    enabled: settings.enabled === true,
    newPasskeys: settings.newPasskeys === true,
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

// Password sign-ins: a trusted submission of a form with a filled password field, then a page
// load of the same origin in the same tab within a minute. Kept in storage.session (a
// Chromium service worker does not live that long), by wall-clock time for the same reason.
// Every read and write of that state goes through this chain, in the order the messages came,
// so a page load never reads the state before the submission that preceded it was written.
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

async function noteSubmission(tabId, origin) {
  const state = await signInState();
  state.submissions[tabId] = { origin, time: Date.now() };
  if (state.area) await state.area.set({ submissions: state.submissions });
}

async function notePageLoaded(tabId, origin) {
  const state = await signInState();
  const submission = state.submissions[tabId];
  if (!submission) return;
  delete state.submissions[tabId];
  const now = Date.now();
  if (ProviderRules.navigationCompletesSignIn(submission, origin, now)) {
    state.signIns[origin] = now;
    record(origin, 'passwordSignIn', 'ok', 'a password sign-in: a conditional create() may upgrade it for a few minutes');
  }
  for (const [known, time] of Object.entries(state.signIns)) {
    if (!ProviderRules.signInIsRecent(time, now)) delete state.signIns[known];
  }
  if (state.area) await state.area.set({ submissions: state.submissions, signIns: state.signIns });
}

async function signedInRecently(origin) {
  const state = await signInState();
  return ProviderRules.signInIsRecent(state.signIns[origin], Date.now());
}

/** Sends one provider request to the host; resolves with its reply (or an InternalError). */
function askHost(request) {
  return new Promise((resolve) => {
    if (!port && !ensurePort()) {
      resolve({ ok: false, error: 'InternalError', message: `native host ${NATIVE_HOST} unavailable` });
      return;
    }
    const id = nextId++;
    pending.set(id, { origin: request.origin, method: request.type, respond: resolve });
    post(port, Object.assign({ id }, request));
  });
}

async function onProvider(message, sender) {
  const origin = senderOrigin(sender);
  // Top-level documents only: a frame's page cannot speak for the site the user sees.
  if (origin === null || !sender.tab || sender.frameId !== 0) {
    return { ok: false, error: 'SecurityError', message: 'the passkey provider serves top-level pages only' };
  }
  const settings = await providerSettings();
  if (!settings.enabled || ProviderRules.isExcepted(RpId.parseOrigin(origin).host, settings.exceptions)) {
    return { ok: false, error: 'InternalError', message: 'provider mode is off for this site' };
  }
  if (!RpId.isSecureOrigin(origin)) {
    return { ok: false, error: 'SecurityError', message: `${origin} is not an https:// or http://localhost origin` };
  }
  // What a page passes on is bounded here: the host ends a stream with a message over 1 MiB,
  // which would drop every other tab's requests with it.
  if (message.rpId !== undefined && (typeof message.rpId !== 'string' || message.rpId.length > 253)) {
    return { ok: false, error: 'SecurityError', message: 'rpId is not a valid domain' };
  }
  if ((message.options !== undefined && JSON.stringify(message.options).length > MAX_PROVIDER_OPTIONS)
      || (message.allowCredentials !== undefined && JSON.stringify(message.allowCredentials).length > MAX_PROVIDER_OPTIONS)) {
    return { ok: false, error: 'TypeError', message: `the options are over ${MAX_PROVIDER_OPTIONS} bytes` };
  }
  switch (message.operation) {
    case 'pageLoaded':
      await withSignIns(() => notePageLoaded(sender.tab.id, origin));
      return { ok: true };
    case 'passwordSubmitted':
      await withSignIns(() => noteSubmission(sender.tab.id, origin));
      return { ok: true };
    case 'accounts': {
      const listed = await askHost({ type: 'accounts', origin, rpId: message.rpId,
        userVerification: typeof message.userVerification === 'string' ? message.userVerification.slice(0, 32) : undefined });
      if (listed.ok === true && Array.isArray(listed.accounts)) {
        listed.accounts = ProviderRules.allowedAccounts(listed.accounts, { allowCredentials: message.allowCredentials });
      }
      return listed;
    }
    case 'get':
      return askHost({ type: 'get', origin, options: message.options,
        credentialId: typeof message.credentialId === 'string' ? message.credentialId : undefined });
    case 'create':
      if (message.conditional === true && !(await withSignIns(() => signedInRecently(origin)))) {
        // WebAuthn L3: a conditional create() the client will not serve is NotAllowedError, with no UI.
        record(origin, 'create', 'refused', 'conditional create() without a recent password sign-in');
        return { ok: false, error: 'NotAllowedError',
          message: 'no password sign-in on this site in the last few minutes: no passkey is made without asking' };
      }
      if (message.conditional === true) {
        // One upgrade a sign-in: the next conditional create() needs another password sign-in.
        await withSignIns(async () => {
          const state = await signInState();
          delete state.signIns[origin];
          if (state.area) await state.area.set({ signIns: state.signIns });
        });
      }
      return askHost({ type: 'create', origin, options: message.options });
    default:
      return { ok: false, error: 'TypeError', message: 'unknown provider operation' };
  }
}
