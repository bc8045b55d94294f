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
// Rate limits: one token bucket per origin. A Map keeps insertion order; an
// origin is re-inserted on each use, so the first key is the least recently
// used, dropped when more than MAX_TRACKED_ORIGINS are tracked. (A forgotten
// origin starts again with a full bucket; reaching that needs a thousand
// other origins, each limited too.) The passkey provider takes its own
// buckets from here (provider-background.js).

/** A function `take(origin)`: true while the origin has a token (a burst of `burst`, then `refillPerSecond`). */
function bucketTaker(burst, refillPerSecond) {
  const buckets = new Map(); // origin → {tokens, updated}
  return (origin) => {
    const now = performance.now();
    const bucket = buckets.get(origin) || { tokens: burst, updated: now };
    buckets.delete(origin);
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updated) / 1000) * refillPerSecond);
    bucket.updated = now;
    buckets.set(origin, bucket);
    while (buckets.size > MAX_TRACKED_ORIGINS) buckets.delete(buckets.keys().next().value);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };
}

const signalToken = bucketTaker(BUCKET_CAPACITY, BUCKET_REFILL_PER_SECOND);
const drops = new Map(); // origin → {dropped, warned}: signals refused since the last warning

function takeToken(origin, method) {
  if (signalToken(origin)) return true;
  // Over the limit: dropped, nothing queued. At most one warning (and one
  // record) per origin per second, counting the drops since the previous one,
  // so the limit does not turn into a flood of warnings.
  const now = performance.now();
  const drop = drops.get(origin) || { dropped: 0, warned: -Infinity };
  drops.delete(origin);
  drops.set(origin, drop);
  while (drops.size > MAX_TRACKED_ORIGINS) drops.delete(drops.keys().next().value);
  drop.dropped++;
  if (now - drop.warned >= 1000) {
    const detail = `${drop.dropped} signal(s) dropped (limit: ${BUCKET_CAPACITY} at once, then ${BUCKET_REFILL_PER_SECOND}/s)`;
    console.warn(`Latchkey signal bridge: rate-limited ${origin}: ${detail}`);
    record(origin, method, 'rate-limited', detail);
    drop.warned = now;
    drop.dropped = 0;
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
    // A passkey request given up on (provider-background.js) may still make a passkey: it is hidden.
    if (typeof abandonedAnswer === 'function' && abandonedAnswer(message.id, message)) return;
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
    // The host stopped answering; forget the oldest signal. A passkey request is never dropped
    // (its ceremony may be running on the key): with only those waiting, this signal is refused.
    const oldest = Array.from(pending.entries()).find(([, request]) => !request.respond);
    if (!oldest) {
      refuse(signal.origin, signal.method, `${MAX_PENDING} requests wait for the native host`);
      return;
    }
    pending.delete(oldest[0]);
    console.warn(`Latchkey signal bridge: no reply to ${oldest[1].method} from ${oldest[1].origin}; dropped`);
    record(oldest[1].origin, oldest[1].method, 'dropped', 'no reply');
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
  if (message.type === 'provider' || message.type === 'prompt') {
    // The passkey provider: answered through sendResponse (`return true` keeps the channel
    // open in both browsers), always, so provider.js never waits for nothing. Prompt messages
    // only from the extension's own prompt page, never from a content script.
    const fromPrompt = typeof sender.url === 'string' && sender.url.startsWith(api.runtime.getURL('prompt.html'));
    if (message.type === 'prompt' && !fromPrompt) return undefined;
    if (message.type === 'provider' && fromPrompt) return undefined;
    (message.type === 'prompt' ? onPrompt(message, sender) : onProvider(message, sender)).then(sendResponse, (e) => {
      console.warn('Latchkey passkey provider: request failed', e);
      sendResponse(message.type === 'prompt' ? { ok: false, message: 'Latchkey could not do that.' }
        : { outcome: 'browser' });
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

// The passkey provider: provider-background.js (loaded after this file; it uses the port above).
if (typeof importScripts === 'function' && typeof globalThis.onProvider === 'undefined') {
  importScripts('provider-background.js');
}
