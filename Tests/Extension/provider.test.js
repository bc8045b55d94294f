#!/usr/bin/env node
// The passkey provider's shared rules (extension/provider-rules.js) under Node, no packages:
// options to their WebAuthn L3 JSON form, the host's JSON back to a credential object with the
// page's prototypes, which accounts a request allows, the exception list, and when a password
// sign-in is recent and for which account. The browser-side flows run in the VM (Tests/Integration/vm/e2e_provider.py).
// Usage: node Tests/Extension/provider.test.js — prints a line per check and "N passed, N failed".
'use strict';
const assert = require('node:assert');
const path = require('node:path');
require(path.join(__dirname, '..', '..', 'extension', 'provider-rules.js'));
const P = globalThis.LatchkeyProviderRules;

const { check, finish } = require('./harness.js');

const bytes = (...values) => new Uint8Array(values);

check('base64url both ways, any BufferSource', () => {
  assert.strictEqual(P.encodeBase64url(bytes(0xfb, 0xff, 0x01).buffer), '-_8B');
  assert.strictEqual(P.encodeBase64url(new DataView(bytes(9, 0xfb, 0xff, 0x01).buffer, 1)), '-_8B');
  assert.strictEqual(P.encodeBase64url(new ArrayBuffer(0)), '');
  for (let n = 0; n < 70000; n += 4099) {
    const random = require('crypto').randomBytes(n);
    assert.strictEqual(P.encodeBase64url(random), random.toString('base64url'));
    assert.deepStrictEqual(Buffer.from(P.decodeBase64url(random.toString('base64url'))), random);
  }
  assert.throws(() => P.encodeBase64url('text'), TypeError);
  for (const bad of ['A', 'AA==', 'A+B/', 'é']) assert.throws(() => P.decodeBase64url(bad), TypeError, bad);
});

check('create() options as PublicKeyCredentialCreationOptionsJSON', () => {
  const json = P.creationOptionsJSON({
    rp: { id: 'example.com', name: 'Example' },
    user: { id: bytes(1, 2, 3), name: 'alice', displayName: 'Alice' },
    challenge: bytes(7, 7, 7, 7).buffer,
    pubKeyCredParams: [{ type: 'public-key', alg: -7 }, { type: 'public-key', alg: -257 }],
    excludeCredentials: [{ type: 'public-key', id: bytes(0xff), transports: ['usb'] }],
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    attestation: 'none',
    extensions: { credProps: true },
    hints: ['security-key'],
  });
  assert.deepStrictEqual(json, {
    rp: { id: 'example.com', name: 'Example' },
    user: { id: 'AQID', name: 'alice', displayName: 'Alice' },
    challenge: 'BwcHBw',
    pubKeyCredParams: [{ type: 'public-key', alg: -7 }, { type: 'public-key', alg: -257 }],
    excludeCredentials: [{ type: 'public-key', id: '_w', transports: ['usb'] }],
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    attestation: 'none',
    extensions: { credProps: true },
  });
  // Without rp.id the host takes the origin's host, as the browser does.
  const bare = P.creationOptionsJSON({ rp: { name: 'x' }, user: { id: bytes(1), name: 'a', displayName: 'A' },
    challenge: bytes(1), pubKeyCredParams: [] });
  assert.strictEqual('id' in bare.rp, false);
  assert.throws(() => P.creationOptionsJSON({ rp: { name: 'x' }, challenge: bytes(1), pubKeyCredParams: [] }), TypeError);
  // Required strings stay required (never the string "undefined").
  assert.throws(() => P.creationOptionsJSON({ rp: {}, user: { id: bytes(1), name: 'a', displayName: 'A' },
    challenge: bytes(1), pubKeyCredParams: [] }), /rp\.name/);
  assert.throws(() => P.creationOptionsJSON({ rp: { name: 'x' }, user: { id: bytes(1), name: 'a' },
    challenge: bytes(1), pubKeyCredParams: [] }), /user\.displayName/);
  assert.throws(() => P.creationOptionsJSON({ rp: { name: 'x' }, user: { id: 'not bytes', name: 'a', displayName: 'A' },
    challenge: bytes(1), pubKeyCredParams: [] }), TypeError);
});

check('get() options as PublicKeyCredentialRequestOptionsJSON', () => {
  assert.deepStrictEqual(P.requestOptionsJSON({ challenge: bytes(1, 2), rpId: 'example.com', userVerification: 'preferred',
    allowCredentials: [{ type: 'public-key', id: bytes(3) }] }),
  { challenge: 'AQI', rpId: 'example.com', userVerification: 'preferred', allowCredentials: [{ type: 'public-key', id: 'Aw' }] });
  assert.deepStrictEqual(P.requestOptionsJSON({ challenge: bytes(1) }), { challenge: 'AQ', allowCredentials: [] });
  assert.throws(() => P.requestOptionsJSON({ challenge: 'x' }), TypeError);
});

check('extensions the provider does not serve send the call to the browser', () => {
  assert.deepStrictEqual(P.unservedExtensions({ extensions: { credProps: true } }), []);
  assert.deepStrictEqual(P.unservedExtensions({ extensions: { credProps: true, prf: {}, largeBlob: {} } }), []);
  assert.deepStrictEqual(P.unservedExtensions({ extensions: { largeBlob: {}, uvm: true } }), ['uvm']);
  assert.deepStrictEqual(P.unservedExtensions({ extensions: { appid: 'https://x', credBlob: bytes(1) } }), ['appid']);
  assert.deepStrictEqual(P.unservedExtensions({ extensions: { credentialProtectionPolicy: 'userVerificationRequired',
    enforceCredentialProtectionPolicy: true, getCredBlob: true } }), []);
  assert.deepStrictEqual(P.unservedExtensions({}), []);
});

check('prf, credProtect and credBlob inputs in their JSON form; results back as ArrayBuffers', () => {
  const created = P.creationOptionsJSON({
    rp: { name: 'Example' }, user: { id: bytes(1), name: 'a', displayName: 'A' }, challenge: bytes(7),
    pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
    extensions: { prf: { eval: { first: bytes(1, 2), second: new Uint8Array([3]).buffer } }, credProps: true,
      credentialProtectionPolicy: 'userVerificationRequired', enforceCredentialProtectionPolicy: 1, credBlob: bytes(0xff) },
  });
  assert.deepStrictEqual(created.extensions, { credProps: true, prf: { eval: { first: 'AQI', second: 'Aw' } },
    credentialProtectionPolicy: 'userVerificationRequired', enforceCredentialProtectionPolicy: true, credBlob: '_w' });
  const requested = P.requestOptionsJSON({ challenge: bytes(7), extensions: { getCredBlob: true,
    prf: { evalByCredential: { AQID: { first: bytes(9) } } }, credBlob: bytes(1) } });
  assert.deepStrictEqual(requested.extensions, { prf: { evalByCredential: { AQID: { first: 'CQ' } } }, getCredBlob: true },
    'credBlob is create()\'s, getCredBlob get()\'s');
  assert.deepStrictEqual(P.cleanRequestOptions(requested).extensions, requested.extensions);
  assert.deepStrictEqual(P.cleanCreationOptions(created).extensions, created.extensions);
  assert.throws(() => P.cleanRequestOptions({ challenge: 'AAAA', extensions: { prf: { evalByCredential: { 'no/t': { first: 'AA' } } } } }),
    TypeError, 'a key that is not base64url');
  const results = P.clientExtensionResults({ prf: { enabled: true, results: { first: 'AQI', second: 'Aw' } }, getCredBlob: '_w' });
  assert.ok(results.prf.results.first instanceof ArrayBuffer);
  assert.deepStrictEqual([...new Uint8Array(results.prf.results.first)], [1, 2]);
  assert.deepStrictEqual([...new Uint8Array(results.prf.results.second)], [3]);
  assert.deepStrictEqual([...new Uint8Array(results.getCredBlob)], [0xff]);
  assert.strictEqual(results.prf.enabled, true);
  assert.notStrictEqual(P.clientExtensionResults({ prf: {} }), P.clientExtensionResults({ prf: {} }), 'a fresh object a call');
});

check('largeBlob inputs in their JSON form, every member kept for the host to judge; the blob back as an ArrayBuffer', () => {
  const requested = P.requestOptionsJSON({ challenge: bytes(7), extensions: { largeBlob: { write: bytes(1, 2, 3), read: 0 } } });
  assert.deepStrictEqual(requested.extensions, { largeBlob: { read: false, write: 'AQID' } });
  assert.deepStrictEqual(P.cleanRequestOptions(requested).extensions, requested.extensions);
  const created = P.creationOptionsJSON({
    rp: { name: 'Example' }, user: { id: bytes(1), name: 'a', displayName: 'A' }, challenge: bytes(7),
    pubKeyCredParams: [{ type: 'public-key', alg: -7 }], extensions: { largeBlob: { support: 'required' } },
  });
  assert.deepStrictEqual(P.cleanCreationOptions(created).extensions, { largeBlob: { support: 'required' } });
  assert.throws(() => P.requestOptionsJSON({ challenge: bytes(7), extensions: { largeBlob: 'read' } }), TypeError);
  assert.throws(() => P.cleanRequestOptions({ challenge: 'AAAA', extensions: { largeBlob: { write: 'A'.repeat(90000) } } }),
    TypeError, 'a write over 64 KiB');
  const results = P.clientExtensionResults({ largeBlob: { blob: 'AQID' } });
  assert.ok(results.largeBlob.blob instanceof ArrayBuffer);
  assert.deepStrictEqual([...new Uint8Array(results.largeBlob.blob)], [1, 2, 3]);
  assert.deepStrictEqual(P.clientExtensionResults({ largeBlob: { written: true } }), { largeBlob: { written: true } });
});

// Stand-ins for the page's classes: the credential must have their prototypes.
class PublicKeyCredential { get id() { throw new TypeError('Illegal invocation'); } }
class AuthenticatorAttestationResponse {}
class AuthenticatorAssertionResponse {}
const classes = { PublicKeyCredential, AuthenticatorAttestationResponse, AuthenticatorAssertionResponse };

check('a registration from the host: prototypes, members, getters, toJSON', () => {
  const json = {
    id: '_w', rawId: '_w', type: 'public-key', authenticatorAttachment: 'cross-platform',
    response: { clientDataJSON: 'e30', authenticatorData: 'AQID', transports: ['usb'], publicKey: 'BAU',
      publicKeyAlgorithm: -7, attestationObject: 'oA' },
    clientExtensionResults: { credProps: { rk: true } },
  };
  const credential = P.buildCredential(json, classes);
  assert.ok(credential instanceof PublicKeyCredential);
  assert.ok(credential.response instanceof AuthenticatorAttestationResponse);
  assert.strictEqual(credential.id, '_w'); // its own member, not the throwing accessor
  assert.deepStrictEqual(Buffer.from(credential.rawId), Buffer.from([0xff]));
  assert.strictEqual(credential.authenticatorAttachment, 'cross-platform');
  assert.deepStrictEqual(Buffer.from(credential.response.clientDataJSON).toString(), '{}');
  assert.deepStrictEqual(Buffer.from(credential.response.getAuthenticatorData()), Buffer.from([1, 2, 3]));
  assert.deepStrictEqual(Buffer.from(credential.response.getPublicKey()), Buffer.from([4, 5]));
  assert.strictEqual(credential.response.getPublicKeyAlgorithm(), -7);
  assert.deepStrictEqual(credential.response.getTransports(), ['usb']);
  credential.response.getTransports().push('nfc');
  assert.deepStrictEqual(credential.response.getTransports(), ['usb'], 'a copy each time');
  assert.deepStrictEqual(credential.getClientExtensionResults(), { credProps: { rk: true } });
  assert.deepStrictEqual(credential.toJSON(), json);
  credential.toJSON().response.clientDataJSON = 'changed';
  assert.deepStrictEqual(credential.toJSON(), json, 'toJSON gives a fresh copy');
  // The JSON round trip a relying party's script makes.
  assert.deepStrictEqual(JSON.parse(JSON.stringify(credential)), json);
});

check('an assertion from the host; no user handle is null', () => {
  const json = { id: 'AQ', rawId: 'AQ', type: 'public-key', authenticatorAttachment: 'cross-platform',
    response: { clientDataJSON: 'e30', authenticatorData: 'AQID', signature: 'MEQ', userHandle: 'YWxpY2U' },
    clientExtensionResults: {} };
  const credential = P.buildCredential(json, classes);
  assert.ok(credential.response instanceof AuthenticatorAssertionResponse);
  assert.strictEqual(Buffer.from(credential.response.userHandle).toString(), 'alice');
  assert.deepStrictEqual(Buffer.from(credential.response.signature), Buffer.from([0x30, 0x44]));
  delete json.response.userHandle;
  assert.strictEqual(P.buildCredential(json, classes).response.userHandle, null);
});

check('allowCredentials narrows the accounts; an empty list allows all', () => {
  const accounts = [{ credentialId: 'AQ', name: 'a' }, { credentialId: 'Ag', name: 'b' }];
  assert.deepStrictEqual(P.allowedAccounts(accounts, { allowCredentials: [] }), accounts);
  assert.deepStrictEqual(P.allowedAccounts(accounts, { allowCredentials: [{ type: 'public-key', id: 'Ag' }] }), [accounts[1]]);
  assert.deepStrictEqual(P.allowedAccounts(accounts, { allowCredentials: [{ type: 'public-key', id: 'Aw' }] }), []);
  // What a page passes on is not trusted: a list that is not one, or holds non-objects, narrows nothing wrongly.
  assert.deepStrictEqual(P.allowedAccounts(accounts, { allowCredentials: 'AQ' }), accounts);
  assert.deepStrictEqual(P.allowedAccounts(accounts, { allowCredentials: [null, 7, { type: 'public-key', id: 'AQ' }] }), [accounts[0]]);
});

check('exceptions: hosts and *.hosts, errors named by line', () => {
  const parsed = P.parseExceptions('Example.com\n\n# a comment\n*.bank.example\nexample.com\nnot a host\nhttps://x.example/');
  assert.deepStrictEqual(parsed.hosts, ['example.com', '*.bank.example']);
  assert.strictEqual(parsed.errors.length, 2);
  assert.match(parsed.errors[0], /^line 6: 'not a host'/);
  assert.deepStrictEqual(P.exceptionPatterns(parsed.hosts), ['https://example.com/*', 'https://*.bank.example/*']);
  assert.deepStrictEqual(P.exceptionPatterns(['localhost']), ['https://localhost/*', 'http://localhost/*']);
  // The background's check agrees with the patterns: the host, and *.host's subdomains too.
  for (const [host, excepted] of [['example.com', true], ['www.example.com', false], ['bank.example', true],
    ['login.bank.example', true], ['notbank.example', false], ['example.org', false]]) {
    assert.strictEqual(P.isExcepted(host, parsed.hosts), excepted, host);
  }
});

check('a password sign-in: the navigation within a minute, then five minutes of upgrades', () => {
  const submitted = { origin: 'https://a.example', time: 1000 };
  assert.ok(P.navigationCompletesSignIn(submitted, 'https://a.example', 1000 + 59000));
  assert.ok(!P.navigationCompletesSignIn(submitted, 'https://a.example', 1000 + 61000));
  assert.ok(!P.navigationCompletesSignIn(submitted, 'https://b.example', 2000));
  assert.ok(!P.navigationCompletesSignIn(submitted, 'https://a.example', 999), 'not before the submission');
  assert.ok(!P.navigationCompletesSignIn(undefined, 'https://a.example', 2000));
  assert.ok(P.signInIsRecent(1000, 1000 + 5 * 60 * 1000));
  assert.ok(!P.signInIsRecent(1000, 1001 + 5 * 60 * 1000));
  assert.ok(!P.signInIsRecent(undefined, 1000));
});

check('an upgrade only for the account that signed in with its password, while recent', () => {
  const signIn = { time: 1000, userName: '  Alice@Example.com ' };
  assert.strictEqual(P.upgradeRefusal(signIn, 'alice@example.com', 2000), null);
  assert.strictEqual(P.upgradeRefusal(signIn, 'ALICE@EXAMPLE.COM', 2000), null, 'case-folded');
  assert.strictEqual(P.upgradeRefusal({ time: 1000, userName: 'ａｌｉｃｅ' }, 'alice', 2000), null, 'NFKC: fullwidth letters');
  assert.match(P.upgradeRefusal(signIn, 'mallory@example.com', 2000), /another account/);
  assert.match(P.upgradeRefusal(signIn, '', 2000), /another account/);
  assert.match(P.upgradeRefusal(signIn, undefined, 2000), /another account/);
  assert.match(P.upgradeRefusal({ time: 1000, userName: '' }, '', 2000), /named no user/, 'a form with no user name');
  assert.match(P.upgradeRefusal({ time: 1000 }, 'alice', 2000), /named no user/);
  assert.match(P.upgradeRefusal(signIn, 'alice@example.com', 1001 + 5 * 60 * 1000), /no password sign-in/, 'too late');
  assert.match(P.upgradeRefusal(undefined, 'alice', 2000), /no password sign-in/);
  assert.match(P.upgradeRefusal(1000, 'alice', 2000), /no password sign-in/, 'the old record (a bare time) names no user');
});

check('options rebuilt for the host: known members only, well-formed, bounded', () => {
  const clean = P.cleanCreationOptions({
    rp: { id: 'example.com', name: 'Example', icon: 'x' }, user: { id: 'AQID', name: 'alice', displayName: 'Alice' },
    challenge: 'BwcHBw', pubKeyCredParams: [{ type: 'public-key', alg: -7 }], excludeCredentials: [],
    authenticatorSelection: { residentKey: 'required', userVerification: 'required', requireResidentKey: 'yes' },
    extensions: { credProps: true, uvm: true }, hints: ['security-key'], attestation: 'none',
  });
  assert.deepStrictEqual(clean, {
    rp: { name: 'Example', id: 'example.com' }, user: { id: 'AQID', name: 'alice', displayName: 'Alice' },
    challenge: 'BwcHBw', pubKeyCredParams: [{ type: 'public-key', alg: -7 }], excludeCredentials: [],
    authenticatorSelection: { residentKey: 'required', userVerification: 'required', requireResidentKey: false },
    attestation: 'none', extensions: { credProps: true },
  });
  const request = { challenge: 'AAAA', allowCredentials: [{ type: 'public-key', id: 'AQ' }] };
  assert.deepStrictEqual(P.cleanRequestOptions(request), { challenge: 'AAAA', allowCredentials: [{ type: 'public-key', id: 'AQ' }] });
  // What would make the host's JSON unreadable, or its lists unbounded, is a TypeError.
  for (const bad of [
    { challenge: 'AAAA', allowCredentials: [{ type: '\uD800', id: 'AQ' }] },
    { challenge: 'AAAA', rpId: 'a\uDC00b' },
    { challenge: 'AA+A' },
    { challenge: 'A' },
    { challenge: 'AAAA', allowCredentials: Array.from({ length: 257 }, () => ({ type: 'public-key', id: 'AQ' })) },
    { challenge: 'AAAA', allowCredentials: [{ type: 'public-key', id: 'A'.repeat(1400) }] },
    { challenge: 'AAAA', timeout: Infinity },
    { challenge: 'AAAA', allowCredentials: 'AQ' },
    null,
  ]) assert.throws(() => P.cleanRequestOptions(bad), TypeError, JSON.stringify(bad));
  assert.throws(() => P.cleanCreationOptions({ rp: { name: 'x' }, user: { id: 'A'.repeat(90), name: 'a', displayName: 'a' },
    challenge: 'AAAA', pubKeyCredParams: [] }), TypeError, 'a user handle over 64 bytes');
  assert.strictEqual(P.cleanRequestOptions({ challenge: 'AAAA', rpId: 'a\uD83D\uDD11b' }).rpId, 'a\uD83D\uDD11b', 'a pair is fine');
});

check('a site\'s text shown beside Latchkey\'s: no controls, no reordering, bounded', () => {
  assert.strictEqual(P.displayText('alice\u202Emoc.knab', 80), 'alicemoc.knab');
  assert.strictEqual(P.displayText('a\u0000b\u200Bc\u2066d\u2069\u00ADe\uFEFF', 80), 'abcde');
  assert.strictEqual(P.displayText('x'.repeat(100), 10), `${'x'.repeat(9)}…`);
  assert.strictEqual(P.displayText('🔑'.repeat(5), 3), '🔑🔑…', 'characters, not UTF-16 units');
  assert.strictEqual(P.displayText(undefined, 5), '');
  assert.strictEqual(P.displayText('Zoë Ünal', 80), 'Zoë Ünal');
});

finish('provider rules');
