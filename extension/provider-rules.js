/*
 * Latchkey passkey provider — the rules its scripts share, with no browser API in them, so that
 * Tests/Extension/provider.test.js runs them under Node: WebAuthn options to their JSON form,
 * the host's JSON back to a PublicKeyCredential, which accounts a request allows, the user's
 * exceptions as match patterns, when a password sign-in counts as recent and for which account.
 *
 * Loaded before provider-main.js (page MAIN world: it takes this global and removes it),
 * provider.js (isolated world) and background.js.
 */
(function () {
  'use strict';

  // A password sign-in lets a conditional create() through for this long (the "last few
  // minutes" of automatic passkey upgrades); the navigation that follows the form's submission
  // must come within SUBMIT_TO_NAVIGATION_MS of it.
  const RECENT_SIGN_IN_MS = 5 * 60 * 1000;
  const SUBMIT_TO_NAVIGATION_MS = 60 * 1000;

  /** Bytes of a BufferSource (ArrayBuffer or a view), or null. */
  function bytesOf(source) {
    if (source instanceof ArrayBuffer) return new Uint8Array(source);
    if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    return null;
  }

  function encodeBase64url(source) {
    const bytes = bytesOf(source);
    if (bytes === null) throw new TypeError('expected an ArrayBuffer or a view of one');
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  function decodeBase64url(text) {
    if (typeof text !== 'string' || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
      throw new TypeError('not base64url');
    }
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((text.length + 3) % 4));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes.buffer;
  }

  function descriptorsJSON(list, name) {
    if (list === undefined || list === null) return [];
    if (!Array.isArray(list)) throw new TypeError(`${name} must be a sequence`);
    return list.map((entry, index) => {
      if (entry === null || typeof entry !== 'object') throw new TypeError(`${name}[${index}] must be a dictionary`);
      const json = { type: String(entry.type), id: encodeBase64url(entry.id) };
      if (Array.isArray(entry.transports)) json.transports = entry.transports.map(String);
      return json;
    });
  }

  /**
   * `publicKey` of create() as PublicKeyCredentialCreationOptionsJSON (WebAuthn L3 §5.1.x):
   * only the members the host reads, binary ones in base64url. A member of the wrong shape is
   * a TypeError, as the browser's own WebIDL conversion would throw.
   */
  function creationOptionsJSON(options) {
    if (options === null || typeof options !== 'object') throw new TypeError('publicKey must be a dictionary');
    const { rp, user } = options;
    if (rp === null || typeof rp !== 'object') throw new TypeError('publicKey.rp is required');
    if (user === null || typeof user !== 'object') throw new TypeError('publicKey.user is required');
    if (!Array.isArray(options.pubKeyCredParams)) throw new TypeError('publicKey.pubKeyCredParams is required');
    for (const [member, value] of [['rp.name', rp.name], ['user.name', user.name], ['user.displayName', user.displayName]]) {
      if (value === undefined) throw new TypeError(`publicKey.${member} is required`);
    }
    const json = {
      rp: { name: String(rp.name) },
      user: { id: encodeBase64url(user.id), name: String(user.name), displayName: String(user.displayName) },
      challenge: encodeBase64url(options.challenge),
      pubKeyCredParams: options.pubKeyCredParams.map((p) => ({ type: String(p.type), alg: Number(p.alg) })),
      excludeCredentials: descriptorsJSON(options.excludeCredentials, 'excludeCredentials'),
    };
    if (rp.id !== undefined) json.rp.id = String(rp.id);
    if (options.timeout !== undefined) json.timeout = Number(options.timeout);
    const selection = options.authenticatorSelection;
    if (selection && typeof selection === 'object') {
      json.authenticatorSelection = {};
      for (const member of ['authenticatorAttachment', 'residentKey', 'userVerification']) {
        if (selection[member] !== undefined) json.authenticatorSelection[member] = String(selection[member]);
      }
      if (selection.requireResidentKey !== undefined) {
        json.authenticatorSelection.requireResidentKey = Boolean(selection.requireResidentKey);
      }
    }
    if (options.attestation !== undefined) json.attestation = String(options.attestation);
    const extensions = extensionsJSON(options.extensions, 'create');
    if (extensions) json.extensions = extensions;
    return json;
  }

  /** PRF values (`{first, second?}`, BufferSources) in JSON form. */
  function prfValuesJSON(values, name) {
    if (values === null || typeof values !== 'object') throw new TypeError(`${name} must be a dictionary`);
    const json = { first: encodeBase64url(values.first) };
    if (values.second !== undefined) json.second = encodeBase64url(values.second);
    return json;
  }

  /**
   * The extensions the provider serves, in WebAuthn L3's JSON form (AuthenticationExtensions-
   * ClientInputsJSON): credProps, prf, credentialProtectionPolicy and
   * enforceCredentialProtectionPolicy, credBlob (create); prf, getCredBlob (get); largeBlob (both).
   */
  function extensionsJSON(extensions, kind) {
    if (!extensions || typeof extensions !== 'object') return null;
    const json = {};
    if (extensions.largeBlob !== undefined) {
      const largeBlob = extensions.largeBlob;
      if (largeBlob === null || typeof largeBlob !== 'object') throw new TypeError('extensions.largeBlob must be a dictionary');
      // Every member the page gave goes on, so the host can refuse the ones a ceremony does not take.
      json.largeBlob = {};
      if (largeBlob.support !== undefined) json.largeBlob.support = String(largeBlob.support);
      if (largeBlob.read !== undefined) json.largeBlob.read = Boolean(largeBlob.read);
      if (largeBlob.write !== undefined) json.largeBlob.write = encodeBase64url(largeBlob.write);
    }
    if (kind === 'create' && extensions.credProps !== undefined) json.credProps = Boolean(extensions.credProps);
    if (extensions.prf !== undefined) {
      const prf = extensions.prf;
      if (prf === null || typeof prf !== 'object') throw new TypeError('extensions.prf must be a dictionary');
      json.prf = {};
      if (prf.eval !== undefined) json.prf.eval = prfValuesJSON(prf.eval, 'extensions.prf.eval');
      if (prf.evalByCredential !== undefined) {
        if (prf.evalByCredential === null || typeof prf.evalByCredential !== 'object') {
          throw new TypeError('extensions.prf.evalByCredential must be a record');
        }
        json.prf.evalByCredential = {};
        for (const [id, values] of Object.entries(prf.evalByCredential)) {
          json.prf.evalByCredential[String(id)] = prfValuesJSON(values, `extensions.prf.evalByCredential.${id}`);
        }
      }
    }
    if (kind === 'create') {
      if (extensions.credentialProtectionPolicy !== undefined) {
        json.credentialProtectionPolicy = String(extensions.credentialProtectionPolicy);
      }
      if (extensions.enforceCredentialProtectionPolicy !== undefined) {
        json.enforceCredentialProtectionPolicy = Boolean(extensions.enforceCredentialProtectionPolicy);
      }
      if (extensions.credBlob !== undefined) json.credBlob = encodeBase64url(extensions.credBlob);
    } else if (extensions.getCredBlob !== undefined) {
      json.getCredBlob = Boolean(extensions.getCredBlob);
    }
    return Object.keys(json).length > 0 ? json : null;
  }

  /** `publicKey` of get() as PublicKeyCredentialRequestOptionsJSON. */
  function requestOptionsJSON(options) {
    if (options === null || typeof options !== 'object') throw new TypeError('publicKey must be a dictionary');
    const json = {
      challenge: encodeBase64url(options.challenge),
      allowCredentials: descriptorsJSON(options.allowCredentials, 'allowCredentials'),
    };
    if (options.rpId !== undefined) json.rpId = String(options.rpId);
    if (options.timeout !== undefined) json.timeout = Number(options.timeout);
    if (options.userVerification !== undefined) json.userVerification = String(options.userVerification);
    const extensions = extensionsJSON(options.extensions, 'get');
    if (extensions) json.extensions = extensions;
    return json;
  }

  /**
   * Extensions the provider cannot honour. A browser would pass them to the key; the provider
   * leaves such a request to the browser rather than silently dropping what the site asked for.
   * Served: credProps (the client's own), prf (the key's hmac-secret), credProtect's two inputs,
   * credBlob and getCredBlob, largeBlob (the key's large-blob array). The rest go to the browser.
   */
  const SERVED_EXTENSIONS = ['credProps', 'prf', 'credentialProtectionPolicy', 'enforceCredentialProtectionPolicy',
    'credBlob', 'getCredBlob', 'largeBlob'];

  function unservedExtensions(options) {
    const extensions = options && options.extensions;
    if (!extensions || typeof extensions !== 'object') return [];
    return Object.keys(extensions).filter((name) => !SERVED_EXTENSIONS.includes(name));
  }

  function defineValue(target, name, value) {
    Object.defineProperty(target, name, { value, enumerable: true, configurable: true });
  }

  /**
   * A PublicKeyCredential from the host's JSON (RegistrationResponseJSON or
   * AuthenticationResponseJSON). `classes` are the page's PublicKeyCredential,
   * AuthenticatorAttestationResponse and AuthenticatorAssertionResponse: the object has their
   * prototypes, so `instanceof` holds, and own members that shadow the prototypes' accessors
   * (which only work on the browser's own objects). toJSON() gives back the JSON, as L3's does.
   */
  function buildCredential(json, classes) {
    const frozenJSON = JSON.parse(JSON.stringify(json));
    const r = json.response;
    const isRegistration = typeof r.attestationObject === 'string';
    const response = Object.create((isRegistration
      ? classes.AuthenticatorAttestationResponse : classes.AuthenticatorAssertionResponse).prototype);
    defineValue(response, 'clientDataJSON', decodeBase64url(r.clientDataJSON));
    if (isRegistration) {
      const authenticatorData = decodeBase64url(r.authenticatorData);
      const publicKey = typeof r.publicKey === 'string' ? decodeBase64url(r.publicKey) : null;
      const transports = Array.isArray(r.transports) ? r.transports.slice() : [];
      defineValue(response, 'attestationObject', decodeBase64url(r.attestationObject));
      defineValue(response, 'getTransports', function getTransports() { return transports.slice(); });
      defineValue(response, 'getAuthenticatorData', function getAuthenticatorData() { return authenticatorData.slice(0); });
      defineValue(response, 'getPublicKey', function getPublicKey() { return publicKey === null ? null : publicKey.slice(0); });
      defineValue(response, 'getPublicKeyAlgorithm', function getPublicKeyAlgorithm() { return r.publicKeyAlgorithm; });
    } else {
      defineValue(response, 'authenticatorData', decodeBase64url(r.authenticatorData));
      defineValue(response, 'signature', decodeBase64url(r.signature));
      defineValue(response, 'userHandle', typeof r.userHandle === 'string' ? decodeBase64url(r.userHandle) : null);
    }
    const credential = Object.create(classes.PublicKeyCredential.prototype);
    const extensionResults = json.clientExtensionResults || {};
    defineValue(credential, 'id', json.id);
    defineValue(credential, 'rawId', decodeBase64url(json.rawId));
    defineValue(credential, 'type', 'public-key');
    defineValue(credential, 'response', response);
    defineValue(credential, 'authenticatorAttachment', json.authenticatorAttachment);
    defineValue(credential, 'getClientExtensionResults', function getClientExtensionResults() {
      return clientExtensionResults(extensionResults);
    });
    defineValue(credential, 'toJSON', function toJSON() { return JSON.parse(JSON.stringify(frozenJSON)); });
    return credential;
  }

  /**
   * getClientExtensionResults() from the JSON form: a fresh copy each call, with the binary
   * members (prf results, getCredBlob) as ArrayBuffers, as the browser's own gives them.
   */
  function clientExtensionResults(json) {
    const results = JSON.parse(JSON.stringify(json || {}));
    if (results.prf && results.prf.results) {
      for (const which of ['first', 'second']) {
        if (typeof results.prf.results[which] === 'string') results.prf.results[which] = decodeBase64url(results.prf.results[which]);
      }
    }
    if (typeof results.getCredBlob === 'string') results.getCredBlob = decodeBase64url(results.getCredBlob);
    if (results.largeBlob && typeof results.largeBlob.blob === 'string') results.largeBlob.blob = decodeBase64url(results.largeBlob.blob);
    return results;
  }

  /** The host's accounts a request allows: all, or those in allowCredentials (JSON form). */
  function allowedAccounts(accounts, optionsJSON) {
    const list = Array.isArray(optionsJSON.allowCredentials) ? optionsJSON.allowCredentials : [];
    const allowed = list.filter((d) => d !== null && typeof d === 'object' && d.type === 'public-key').map((d) => d.id);
    if (allowed.length === 0) return accounts.slice();
    return accounts.filter((account) => allowed.includes(account.credentialId));
  }

  /**
   * The options page's exception list: one host a line (`example.com`, or `*.example.com` for
   * its subdomains too); blank lines and `#` comments skipped. Returns {hosts, errors}.
   */
  function parseExceptions(text) {
    const hosts = [];
    const errors = [];
    String(text).split('\n').forEach((raw, index) => {
      const line = raw.trim().toLowerCase();
      if (line === '' || line.startsWith('#')) return;
      const bare = line.startsWith('*.') ? line.slice(2) : line;
      if (!/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(bare) && bare !== 'localhost') {
        errors.push(`line ${index + 1}: '${raw.trim().slice(0, 60)}' is not a host name (e.g. example.com or *.example.com)`);
        return;
      }
      if (!hosts.includes(line)) hosts.push(line);
    });
    return { hosts, errors };
  }

  /** Match patterns that keep the provider's scripts out of the excepted hosts. */
  function exceptionPatterns(hosts) {
    const patterns = [];
    for (const host of hosts) {
      patterns.push(`https://${host}/*`);
      if (host === 'localhost') patterns.push('http://localhost/*');
    }
    return patterns;
  }

  /**
   * Whether `host` is one of the exceptions (`example.com`, or `*.example.com`: it and its
   * subdomains) — what exceptionPatterns' match patterns keep the scripts out of, checked
   * again for each request the background takes.
   */
  function isExcepted(host, exceptions) {
    return exceptions.some((entry) => (entry.startsWith('*.')
      ? host === entry.slice(2) || host.endsWith(entry.slice(1)) : host === entry));
  }

  /** Whether a page load turns a recorded password submission into a sign-in. */
  function navigationCompletesSignIn(submission, origin, now) {
    return !!submission && submission.origin === origin && now - submission.time >= 0
      && now - submission.time <= SUBMIT_TO_NAVIGATION_MS;
  }

  function signInIsRecent(signedInAt, now) {
    return typeof signedInAt === 'number' && now - signedInAt >= 0 && now - signedInAt <= RECENT_SIGN_IN_MS;
  }

  // ---------------------------------------------------------------------------
  // What the background passes on to the native host, rebuilt from what a page sent: only the
  // members the host reads, each of its type, strings well-formed (a lone surrogate would make
  // the host's JSON unreadable, and a host that cannot read a message ends the connection for
  // every tab), binary members canonical base64url, lists bounded. A page whose options fail
  // gets the TypeError its browser's own WebIDL conversion would give for nonsense.

  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  function cleanString(value, name, max) {
    if (typeof value !== 'string') throw new TypeError(`${name} must be a string`);
    if (value.length > max) throw new TypeError(`${name} is over ${max} characters`);
    if (LONE_SURROGATE.test(value)) throw new TypeError(`${name} is not well-formed Unicode`);
    return value;
  }

  function cleanBase64url(value, name, maxBytes) {
    if (typeof value !== 'string' || !/^[A-Za-z0-9_-]*$/.test(value) || value.length % 4 === 1) {
      throw new TypeError(`${name} must be base64url`);
    }
    if (value.length > Math.ceil((maxBytes * 4) / 3)) throw new TypeError(`${name} is over ${maxBytes} bytes`);
    return value;
  }

  function cleanNumber(value, name) {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`${name} must be a finite number`);
    return value;
  }

  function cleanObject(value, name) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TypeError(`${name} must be a dictionary`);
    return value;
  }

  function cleanList(value, name, max) {
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw new TypeError(`${name} must be a sequence`);
    if (value.length > max) throw new TypeError(`${name} has over ${max} entries`);
    return value;
  }

  function cleanDescriptors(value, name) {
    return cleanList(value, name, 256).map((entry, index) => {
      const descriptor = cleanObject(entry, `${name}[${index}]`);
      const json = { type: cleanString(descriptor.type, `${name}[${index}].type`, 32),
        id: cleanBase64url(descriptor.id, `${name}[${index}].id`, 1023) };
      if (descriptor.transports !== undefined) {
        json.transports = cleanList(descriptor.transports, `${name}[${index}].transports`, 8)
          .map((t, i) => cleanString(t, `${name}[${index}].transports[${i}]`, 32));
      }
      return json;
    });
  }

  /** The host's PublicKeyCredentialCreationOptionsJSON, rebuilt (TypeError when it cannot be). */
  function cleanCreationOptions(options) {
    const o = cleanObject(options, 'options');
    const rp = cleanObject(o.rp, 'rp');
    const user = cleanObject(o.user, 'user');
    const json = {
      rp: { name: cleanString(rp.name, 'rp.name', 1024) },
      user: { id: cleanBase64url(user.id, 'user.id', 64), name: cleanString(user.name, 'user.name', 1024),
        displayName: cleanString(user.displayName, 'user.displayName', 1024) },
      challenge: cleanBase64url(o.challenge, 'challenge', 1024),
      pubKeyCredParams: cleanList(o.pubKeyCredParams, 'pubKeyCredParams', 64).map((p, i) => {
        const param = cleanObject(p, `pubKeyCredParams[${i}]`);
        return { type: cleanString(param.type, `pubKeyCredParams[${i}].type`, 32), alg: cleanNumber(param.alg, `pubKeyCredParams[${i}].alg`) };
      }),
      excludeCredentials: cleanDescriptors(o.excludeCredentials, 'excludeCredentials'),
    };
    if (rp.id !== undefined) json.rp.id = cleanString(rp.id, 'rp.id', 253);
    if (o.timeout !== undefined) json.timeout = cleanNumber(o.timeout, 'timeout');
    if (o.authenticatorSelection !== undefined) {
      const selection = cleanObject(o.authenticatorSelection, 'authenticatorSelection');
      json.authenticatorSelection = {};
      for (const member of ['authenticatorAttachment', 'residentKey', 'userVerification']) {
        if (selection[member] !== undefined) {
          json.authenticatorSelection[member] = cleanString(selection[member], `authenticatorSelection.${member}`, 32);
        }
      }
      if (selection.requireResidentKey !== undefined) json.authenticatorSelection.requireResidentKey = selection.requireResidentKey === true;
    }
    if (o.attestation !== undefined) json.attestation = cleanString(o.attestation, 'attestation', 32);
    const extensions = cleanExtensions(o.extensions, 'create');
    if (extensions) json.extensions = extensions;
    return json;
  }

  function cleanPRFValues(value, name) {
    const values = cleanObject(value, name);
    const json = { first: cleanBase64url(values.first, `${name}.first`, 1024) };
    if (values.second !== undefined) json.second = cleanBase64url(values.second, `${name}.second`, 1024);
    return json;
  }

  /** The served extensions' inputs, rebuilt (extensionsJSON's shape). */
  function cleanExtensions(value, kind) {
    if (value === undefined) return null;
    const extensions = cleanObject(value, 'extensions');
    const json = {};
    if (extensions.largeBlob !== undefined) {
      const largeBlob = cleanObject(extensions.largeBlob, 'extensions.largeBlob');
      json.largeBlob = {};
      if (largeBlob.support !== undefined) json.largeBlob.support = cleanString(largeBlob.support, 'extensions.largeBlob.support', 32);
      if (largeBlob.read !== undefined) json.largeBlob.read = largeBlob.read === true;
      // A key's whole array is a few KiB (Latchkey's 4096 bytes); 64 KiB leaves room for any key.
      if (largeBlob.write !== undefined) json.largeBlob.write = cleanBase64url(largeBlob.write, 'extensions.largeBlob.write', 65536);
    }
    if (kind === 'create' && extensions.credProps !== undefined) json.credProps = extensions.credProps === true;
    if (extensions.prf !== undefined) {
      const prf = cleanObject(extensions.prf, 'extensions.prf');
      json.prf = {};
      if (prf.eval !== undefined) json.prf.eval = cleanPRFValues(prf.eval, 'extensions.prf.eval');
      if (prf.evalByCredential !== undefined) {
        const entries = Object.entries(cleanObject(prf.evalByCredential, 'extensions.prf.evalByCredential'));
        if (entries.length > 256) throw new TypeError('extensions.prf.evalByCredential has over 256 entries');
        json.prf.evalByCredential = {};
        for (const [id, values] of entries) {
          json.prf.evalByCredential[cleanBase64url(id, 'extensions.prf.evalByCredential key', 1023)] = cleanPRFValues(values,
            'extensions.prf.evalByCredential entry');
        }
      }
    }
    if (kind === 'create') {
      if (extensions.credentialProtectionPolicy !== undefined) {
        json.credentialProtectionPolicy = cleanString(extensions.credentialProtectionPolicy, 'extensions.credentialProtectionPolicy', 64);
      }
      if (extensions.enforceCredentialProtectionPolicy !== undefined) {
        json.enforceCredentialProtectionPolicy = extensions.enforceCredentialProtectionPolicy === true;
      }
      if (extensions.credBlob !== undefined) json.credBlob = cleanBase64url(extensions.credBlob, 'extensions.credBlob', 1024);
    } else if (extensions.getCredBlob !== undefined) {
      json.getCredBlob = extensions.getCredBlob === true;
    }
    return Object.keys(json).length > 0 ? json : null;
  }

  /** The host's PublicKeyCredentialRequestOptionsJSON, rebuilt (TypeError when it cannot be). */
  function cleanRequestOptions(options) {
    const o = cleanObject(options, 'options');
    const json = {
      challenge: cleanBase64url(o.challenge, 'challenge', 1024),
      allowCredentials: cleanDescriptors(o.allowCredentials, 'allowCredentials'),
    };
    if (o.rpId !== undefined) json.rpId = cleanString(o.rpId, 'rpId', 253);
    if (o.timeout !== undefined) json.timeout = cleanNumber(o.timeout, 'timeout');
    if (o.userVerification !== undefined) json.userVerification = cleanString(o.userVerification, 'userVerification', 32);
    const extensions = cleanExtensions(o.extensions, 'get');
    if (extensions) json.extensions = extensions;
    return json;
  }

  /**
   * Text a site chose (a user name, a display name), made safe to show beside text of
   * Latchkey's own: control characters and the invisible format characters that reorder or
   * hide text (bidirectional overrides and isolates, zero-width joiners…) removed, and at most
   * `max` characters, with an ellipsis.
   */
  function displayText(text, max) {
    const shown = String(text === undefined || text === null ? '' : text)
      .replace(/[\u0000-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]/g, '')
      .replace(LONE_SURROGATE, '');
    const characters = Array.from(shown);
    return characters.length > max ? `${characters.slice(0, max - 1).join('')}…` : shown;
  }

  /**
   * A user name as a sign-in form compares it: Unicode-normalized (NFKC), trimmed, lower-cased.
   */
  function foldUserName(name) {
    return typeof name === 'string' ? name.normalize('NFKC').trim().toLowerCase() : '';
  }

  /**
   * Why an automatic upgrade (a conditional create() for `userName`) is refused, or null when
   * `signIn` ({time, userName}, the origin's last password sign-in) lets it through: recent, and
   * the same account (folded as above) — never another user name, never an empty one.
   */
  function upgradeRefusal(signIn, userName, now) {
    if (!signIn || typeof signIn !== 'object' || !signInIsRecent(signIn.time, now)) {
      return 'no password sign-in on this site in the last few minutes';
    }
    const signedIn = foldUserName(signIn.userName);
    if (signedIn === '') return 'the password sign-in named no user';
    if (foldUserName(userName) !== signedIn) return 'the passkey is for another account than the one that signed in';
    return null;
  }

  globalThis.LatchkeyProviderRules = Object.freeze({
    RECENT_SIGN_IN_MS,
    SUBMIT_TO_NAVIGATION_MS,
    encodeBase64url,
    decodeBase64url,
    creationOptionsJSON,
    requestOptionsJSON,
    unservedExtensions,
    buildCredential,
    clientExtensionResults,
    allowedAccounts,
    parseExceptions,
    exceptionPatterns,
    isExcepted,
    navigationCompletesSignIn,
    signInIsRecent,
    foldUserName,
    upgradeRefusal,
    cleanCreationOptions,
    cleanRequestOptions,
    displayText,
  });
})();
