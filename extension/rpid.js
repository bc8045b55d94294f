/*
 * Latchkey signal bridge — shared checks on origins, RP IDs and signal options.
 *
 * This file is loaded twice, into two unrelated globals:
 *   - the page's MAIN world (before main-world.js), to validate a signal the way
 *     the WebAuthn spec asks before the page's promise settles;
 *   - the background (service worker in Chromium, event page in Firefox), which
 *     re-checks everything, since whatever runs in the page is page-controlled.
 * Content scripts cannot be ES modules, so it defines one global object,
 * `LatchkeyRpId`, and nothing else. Every function here is pure.
 */
(function () {
  'use strict';

  // ---------------------------------------------------------------------------
  // base64url (RFC 4648 §5, without padding), as WebAuthn's Base64URLString.

  const BASE64URL_ALPHABET =
    'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

  // Value of each ASCII character in the alphabet, -1 for the others.
  const BASE64URL_VALUES = new Int8Array(128).fill(-1);
  for (let i = 0; i < BASE64URL_ALPHABET.length; i++) {
    BASE64URL_VALUES[BASE64URL_ALPHABET.charCodeAt(i)] = i;
  }

  /**
   * True when `s` is a string of base64url characters, without padding, that
   * decodes to whole bytes. A length ≡ 1 (mod 4) leaves 6 bits, less than a
   * byte, so no encoder produces it. Unused low bits of the last character are
   * not required to be zero: browsers' own decoders ignore them too.
   * The empty string is valid (it decodes to no bytes).
   */
  function isBase64url(s) {
    if (typeof s !== 'string' || s.length % 4 === 1) return false;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 128 || BASE64URL_VALUES[c] < 0) return false;
    }
    return true;
  }

  /** The bytes `s` encodes, or null when it is not base64url (see isBase64url). */
  function decodeBase64url(s) {
    if (!isBase64url(s)) return null;
    const out = new Uint8Array(Math.floor((s.length * 3) / 4));
    let accumulator = 0; // the pending bits, at most 6 + 7 of them
    let bits = 0;
    let j = 0;
    for (let i = 0; i < s.length; i++) {
      accumulator = ((accumulator << 6) | BASE64URL_VALUES[s.charCodeAt(i)]) & 0xffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out[j++] = (accumulator >> bits) & 0xff;
      }
    }
    return out;
  }

  // ---------------------------------------------------------------------------
  // Origins and hosts.

  /**
   * { scheme, host, port } of a serialized origin such as "https://a.example:8443",
   * or null. `scheme` has no colon; `host` is as the URL parser gives it
   * (lowercase, punycode, IPv6 in brackets); `port` is a number, or null for the
   * scheme's default. A string that is not exactly an origin's serialization
   * (a path, credentials, the opaque origin "null"…) gives null.
   */
  function parseOrigin(origin) {
    if (typeof origin !== 'string') return null;
    let url;
    try {
      url = new URL(origin);
    } catch (e) {
      return null;
    }
    if (url.origin === 'null' || url.origin !== origin || url.hostname === '') return null;
    return {
      scheme: url.protocol.slice(0, -1),
      host: url.hostname,
      port: url.port === '' ? null : Number(url.port),
    };
  }

  /**
   * True for the origins Latchkey takes signals from: https://<any host>, and
   * http://localhost or http://<name>.localhost on any port.
   *
   * http://127.0.0.1 and http://[::1] are refused here although browsers treat
   * them as secure contexts: an RP ID must be a domain, never an IP address, so a
   * page there has no RP ID to signal about. The native host applies the same
   * rule; refusing here only saves it the message.
   */
  function isSecureOrigin(origin) {
    const parsed = parseOrigin(origin);
    if (parsed === null) return false;
    if (parsed.scheme === 'https') return true;
    if (parsed.scheme === 'http') {
      return parsed.host === 'localhost' || parsed.host.endsWith('.localhost');
    }
    return false;
  }

  const IPV4_PART = /^[0-9]{1,3}$/;

  /** True for an IPv4 dotted quad, or an IPv6 address (bracketed or not). */
  function isIPAddress(host) {
    if (typeof host !== 'string' || host === '') return false;
    // A colon never occurs in a domain; URL hosts give IPv6 as "[…]".
    if (host.includes(':') || (host.startsWith('[') && host.endsWith(']'))) return true;
    const parts = host.split('.');
    return (
      parts.length === 4 &&
      parts.every((part) => IPV4_PART.test(part) && Number(part) <= 255)
    );
  }

  // ---------------------------------------------------------------------------
  // RP IDs.

  const DOMAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
  const ALL_DIGITS = /^[0-9]+$/;
  const HEX_NUMBER = /^0x[0-9a-f]*$/;

  /**
   * True when `s` is a lowercase ASCII domain: labels of 1–63 characters from
   * [a-z0-9-], not starting or ending with '-', at most 253 characters in all,
   * no empty label and no trailing dot.
   * A last label that is a number ("a.1", "a.0x1f") is refused as well: the URL
   * parser reads such a host as an IPv4 address, so it is never a domain.
   */
  function isValidDomain(s) {
    if (typeof s !== 'string' || s.length === 0 || s.length > 253) return false;
    const labels = s.split('.');
    for (const label of labels) {
      if (!DOMAIN_LABEL.test(label)) return false;
    }
    const last = labels[labels.length - 1];
    return !ALL_DIGITS.test(last) && !HEX_NUMBER.test(last);
  }

  /**
   * The RP ID with ASCII letters lowercased, or null when it is not a string or
   * holds a non-ASCII character. Browsers give origins in ASCII (punycode for
   * internationalized names), so a Unicode RP ID could never equal or be a suffix
   * of one; callers refuse it with a SecurityError rather than converting it.
   */
  function normalizeRpId(rpId) {
    if (typeof rpId !== 'string') return null;
    let out = '';
    for (let i = 0; i < rpId.length; i++) {
      const c = rpId.charCodeAt(i);
      if (c > 0x7f) return null;
      out += c >= 0x41 && c <= 0x5a ? String.fromCharCode(c + 0x20) : rpId[i];
    }
    return out;
  }

  /**
   * True when `rpId` (already normalized) may be used by a page whose host is
   * `host` — HTML's "is a registrable domain suffix of or is equal to", which
   * WebAuthn uses:
   *   - `rpId` is a valid domain (see isValidDomain);
   *   - `host` is not an IP address. WebAuthn would let an IP host use an RP ID
   *     equal to itself only, but an RP ID must be a domain, so Latchkey refuses
   *     IP hosts altogether (isSecureOrigin refuses http://127.0.0.1 anyway);
   *   - `rpId` equals `host`, or `host` ends with "." + `rpId`;
   *   - when `rpId` is a proper suffix of `host`, it is not a public suffix (and
   *     not a suffix of the host's public suffix), so a.github.io cannot claim
   *     "github.io" nor b.example.co.uk "co.uk". A single label ("com") is always
   *     a public suffix — the Public Suffix List's default rule "*" — so that is
   *     refused even without the list (`publicSuffixes` null, as in the page).
   *
   * An RP ID equal to its host is accepted even when the host is itself a public
   * suffix, as HTML does: "localhost" at http://localhost (a TLD, hence a public
   * suffix by the default rule), or "github.io" at https://github.io. Such an RP
   * ID belongs to that one origin only, so nobody else's credentials are touched.
   *
   * `publicSuffixes` is a PublicSuffixMatcher, or null to skip the list.
   */
  function rpIdIsValidFor(rpId, host, publicSuffixes) {
    if (!isValidDomain(rpId)) return false;
    if (typeof host !== 'string' || host === '' || isIPAddress(host)) return false;
    if (rpId === host) return true;
    if (!host.endsWith('.' + rpId)) return false;
    if (!rpId.includes('.')) return false; // a TLD: a public suffix under any list
    if (publicSuffixes) {
      if (publicSuffixes.isPublicSuffix(rpId)) return false;
      const hostSuffix = publicSuffixes.publicSuffixOf(host);
      if (hostSuffix === null) return false;
      if (hostSuffix === rpId || hostSuffix.endsWith('.' + rpId)) return false;
    }
    return true;
  }

  // ---------------------------------------------------------------------------
  // Public Suffix List.

  /**
   * The Public Suffix List algorithm (https://publicsuffix.org/list/, "Algorithm")
   * over rules already in ASCII (punycode) and lowercase, one per entry: "com",
   * "*.ck", "!www.ck". Comment lines ("// …") and blank entries are skipped; as
   * in the list's format, a rule is the entry's first whitespace-delimited word.
   *
   * Rules are kept in two Sets keyed by their text, so a lookup walks the
   * domain's labels from the right once and probes each suffix: O(labels).
   * A wildcard is supported as the leftmost label only ("*.ck"), the only place
   * the list uses one.
   */
  class PublicSuffixMatcher {
    constructor(rules) {
      this.rules = new Set(); // normal and wildcard rules, e.g. "com", "*.ck"
      this.exceptions = new Set(); // exception rules without their "!", e.g. "www.ck"
      for (const entry of rules) {
        if (typeof entry !== 'string') continue;
        const rule = entry.trim().split(/\s/, 1)[0].toLowerCase();
        if (rule === '' || rule.startsWith('//')) continue;
        if (rule.startsWith('!')) {
          // An exception's public suffix is the rule minus its leftmost label,
          // so an exception must have two labels at least.
          if (rule.indexOf('.') > 1) this.exceptions.add(rule.slice(1));
        } else {
          this.rules.add(rule);
        }
      }
    }

    /** Number of rules held (for logs). */
    get size() {
      return this.rules.size + this.exceptions.size;
    }

    /**
     * The public suffix of `domain`, or null when `domain` is not a dotted name
     * (empty, or with an empty label). The prevailing rule is the matching
     * exception rule if there is one, else the matching rule with the most
     * labels, else "*" — so a lone TLD is always a public suffix.
     */
    publicSuffixOf(domain) {
      if (typeof domain !== 'string' || domain === '') return null;
      const labels = domain.split('.');
      if (labels.includes('')) return null;
      const n = labels.length;

      let ruleLabels = 1; // the implicit rule "*" matches the last label
      let exceptionLabels = 0;
      let suffix = ''; // the last i labels of the domain
      for (let i = 1; i <= n; i++) {
        const parent = suffix; // the last i - 1 labels
        suffix = i === 1 ? labels[n - 1] : labels[n - i] + '.' + parent;
        if (this.exceptions.has(suffix)) exceptionLabels = i;
        if (this.rules.has(suffix) || (i >= 2 && this.rules.has('*.' + parent))) {
          ruleLabels = i;
        }
      }
      const count = exceptionLabels > 0 ? exceptionLabels - 1 : ruleLabels;
      return labels.slice(n - count).join('.');
    }

    /** True when `domain` is itself a public suffix ("com", "co.uk", "github.io"). */
    isPublicSuffix(domain) {
      const suffix = this.publicSuffixOf(domain);
      return suffix !== null && suffix === domain;
    }
  }

  // ---------------------------------------------------------------------------
  // Signal options (W3C WebAuthn Level 3, §5.1.10).

  /** The Signal API's methods, as named on PublicKeyCredential. */
  const SIGNAL_METHODS = Object.freeze([
    'signalUnknownCredential',
    'signalAllAcceptedCredentials',
    'signalCurrentUserDetails',
  ]);

  function typeError(method, message) {
    return { errorName: 'TypeError', message: `${method}: ${message}` };
  }

  function securityError(method, message) {
    return { errorName: 'SecurityError', message: `${method}: ${message}` };
  }

  /**
   * Validates the options of a signal the way §5.1.10 does before its promise
   * resolves, for a page whose host is `host` (an empty host, e.g. for an opaque
   * origin, always fails). Returns either
   *   { options }: a plain copy holding only the spec's members, with the RP ID
   *                normalized — the only thing ever forwarded;
   *   { errorName: 'TypeError' | 'SecurityError', message }.
   *
   * Each member is read exactly once, so a getter cannot give one value to the
   * check and another to the copy. A throwing getter throws out of here; the
   * caller turns that into a rejection. Checks run in the order of the spec:
   * member types (WebIDL's conversion; stricter than WebIDL, which would
   * stringify a non-string), then base64url decoding (TypeError), then the RP ID
   * (SecurityError).
   */
  function checkSignal(method, options, host, publicSuffixes) {
    if (!SIGNAL_METHODS.includes(method)) {
      return typeError(String(method), 'not a signal method');
    }
    if (options === null || (typeof options !== 'object' && typeof options !== 'function')) {
      return typeError(method, 'the options argument is not an object');
    }
    const rpId = options.rpId;
    if (typeof rpId !== 'string') return typeError(method, 'options.rpId is not a string');

    let fields;
    if (method === 'signalUnknownCredential') {
      const credentialId = options.credentialId;
      if (typeof credentialId !== 'string') {
        return typeError(method, 'options.credentialId is not a string');
      }
      if (!isBase64url(credentialId)) {
        return typeError(method, 'options.credentialId is not base64url');
      }
      fields = { credentialId };
    } else if (method === 'signalAllAcceptedCredentials') {
      const userId = options.userId;
      const ids = options.allAcceptedCredentialIds;
      if (typeof userId !== 'string') return typeError(method, 'options.userId is not a string');
      if (!Array.isArray(ids)) {
        return typeError(method, 'options.allAcceptedCredentialIds is not an array');
      }
      if (!isBase64url(userId)) return typeError(method, 'options.userId is not base64url');
      const accepted = [];
      const count = ids.length;
      for (let i = 0; i < count; i++) {
        const id = ids[i];
        if (typeof id !== 'string' || !isBase64url(id)) {
          return typeError(method, `options.allAcceptedCredentialIds[${i}] is not a base64url string`);
        }
        accepted.push(id);
      }
      fields = { userId, allAcceptedCredentialIds: accepted };
    } else {
      // signalCurrentUserDetails: name and displayName are required members.
      const userId = options.userId;
      const name = options.name;
      const displayName = options.displayName;
      if (typeof userId !== 'string') return typeError(method, 'options.userId is not a string');
      if (typeof name !== 'string') return typeError(method, 'options.name is not a string');
      if (typeof displayName !== 'string') {
        return typeError(method, 'options.displayName is not a string');
      }
      if (!isBase64url(userId)) return typeError(method, 'options.userId is not base64url');
      fields = { userId, name, displayName };
    }

    const normalized = normalizeRpId(rpId);
    if (normalized === null) {
      return securityError(method, 'options.rpId is not an ASCII domain (use its punycode form)');
    }
    if (!rpIdIsValidFor(normalized, host, publicSuffixes)) {
      return securityError(method, `the RP ID "${normalized}" is not valid for the host "${host}"`);
    }
    return { options: Object.assign({ rpId: normalized }, fields) };
  }

  // ---------------------------------------------------------------------------
  // What the native host takes, beyond the specification's checks.

  // The host's limits (Sources/SignalBridge/WebsiteSignal.swift): a credential ID
  // as CTAP bounds it, a user handle as WebAuthn does, names as the key keeps them,
  // and a message under the native-messaging limit of 1 MiB.
  const HOST_LIMITS = Object.freeze({ credentialId: 1023, userId: 64, name: 1024, message: 1024 * 1024 - 4096 });
  const UTF8 = new TextEncoder();

  /** Base64url the host reads: non-empty, and the one spelling of its bytes (unused bits zero). */
  function hostBase64url(s, limit) {
    const bytes = decodeBase64url(s);
    if (bytes === null || bytes.length === 0 || bytes.length > limit) return false;
    let again = '';
    for (const byte of bytes) again += String.fromCharCode(byte);
    return btoa(again).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') === s;
  }

  /**
   * Why the native host would refuse these checked options (checkSignal's copy), or
   * null when it takes them. The page is not told: to the specification these are
   * valid signals, but forwarding them would only earn an error — and a message the
   * host cannot read (over 1 MiB, or a lone UTF-16 surrogate, which is not UTF-8)
   * would end its process, dropping other sites' signals on the way. Names with
   * control characters or bidirectional overrides are refused as the host refuses
   * them: they would show in the key's presence prompt.
   */
  function hostRefusal(options) {
    for (const key of Object.keys(options)) {
      const values = Array.isArray(options[key]) ? options[key] : [options[key]];
      for (const value of values) {
        // A lone surrogate: in a /u pattern every code point is matched whole, so \p{Cs}
        // finds only unpaired halves (String.prototype.isWellFormed is not in Node 18).
        if (typeof value === 'string' && /\p{Cs}/u.test(value)) return `options.${key} is not well-formed Unicode`;
      }
    }
    if ('credentialId' in options && !hostBase64url(options.credentialId, HOST_LIMITS.credentialId)) {
      return 'options.credentialId is empty, over 1023 bytes, or not in canonical base64url';
    }
    if ('userId' in options && !hostBase64url(options.userId, HOST_LIMITS.userId)) {
      return 'options.userId is empty, over 64 bytes, or not in canonical base64url';
    }
    const ids = options.allAcceptedCredentialIds || [];
    for (let i = 0; i < ids.length; i++) {
      if (!hostBase64url(ids[i], HOST_LIMITS.credentialId)) {
        return `options.allAcceptedCredentialIds[${i}] is empty, over 1023 bytes, or not in canonical base64url`;
      }
    }
    for (const key of ['name', 'displayName']) {
      if (!(key in options)) continue;
      if (UTF8.encode(options[key]).length > HOST_LIMITS.name) return `options.${key} is over 1024 bytes`;
      if (/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(options[key])) {
        return `options.${key} holds a control character or a bidirectional override`;
      }
    }
    if (UTF8.encode(JSON.stringify(options)).length > HOST_LIMITS.message) return 'the signal is over 1 MiB';
    return null;
  }

  // The property is configurable so main-world.js can delete it from the page's
  // global once it holds its own reference.
  globalThis.LatchkeyRpId = Object.freeze({
    hostRefusal,
    isBase64url,
    decodeBase64url,
    parseOrigin,
    isSecureOrigin,
    isIPAddress,
    isValidDomain,
    normalizeRpId,
    rpIdIsValidFor,
    PublicSuffixMatcher,
    SIGNAL_METHODS,
    checkSignal,
  });
})();
