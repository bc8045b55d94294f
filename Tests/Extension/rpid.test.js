#!/usr/bin/env node
// The extension's shared rules (extension/rpid.js) under Node, no packages: base64url, origins,
// IP literals, RP ID normalisation, the Public Suffix List algorithm, "is a registrable domain
// suffix of or is equal to", and the signal option checks the page and the background share.
// The host's Swift rule has the same cases (Tests/SignalBridgeTests/SignalOriginTests.swift).
// Usage: node Tests/Extension/rpid.test.js — prints a line per check and "N passed, N failed".
'use strict';
const assert = require('node:assert');
const path = require('node:path');
require(path.join(__dirname, '..', '..', 'extension', 'rpid.js'));
const R = globalThis.LatchkeyRpId;

const { check, finish } = require('./harness.js');

check('base64url', () => {
  for (const [s, ok] of [['', true], ['AA', true], ['AAA', true], ['AAAA', true], ['A', false], ['AAAAA', false], ['AA==', false], ['A+', false], ['a_-9', true], ['é', false]]) assert.strictEqual(R.isBase64url(s), ok, s);
  for (let n = 0; n < 40; n++) { const b = require('crypto').randomBytes(n); const e = b.toString('base64url'); assert.deepStrictEqual(Buffer.from(R.decodeBase64url(e)), b); }
  assert.strictEqual(R.decodeBase64url('A'), null);
});
check('origins', () => {
  assert.deepStrictEqual(R.parseOrigin('https://Example.com:8443'), null); // not serialized form
  assert.deepStrictEqual(R.parseOrigin('https://example.com:8443'), {scheme:'https', host:'example.com', port:8443});
  assert.deepStrictEqual(R.parseOrigin('http://[::1]:80'), null);
  assert.deepStrictEqual(R.parseOrigin('http://[::1]'), {scheme:'http', host:'[::1]', port:null});
  for (const [o, ok] of [['https://a.com', true], ['http://localhost', true], ['http://localhost:3000', true], ['http://app.localhost:1', true], ['http://127.0.0.1', false], ['http://[::1]', false], ['http://a.com', false], ['null', false], ['https://a.com/x', false], ['http://localhostx', false]]) assert.strictEqual(R.isSecureOrigin(o), ok, o);
  for (const [h, ok] of [['1.2.3.4', true], ['[::1]', true], ['::1', true], ['256.1.1.1', false], ['a.com', false], ['1.2.3', false]]) assert.strictEqual(R.isIPAddress(h), ok, h);
});
check('normalize', () => {
  assert.strictEqual(R.normalizeRpId('ExAmple.COM'), 'example.com');
  assert.strictEqual(R.normalizeRpId('bücher.de'), null);
  assert.strictEqual(R.normalizeRpId(3), null);
});
const m = new R.PublicSuffixMatcher(['// comment', '', 'com', 'uk', 'co.uk', '*.ck', '!www.ck', 'github.io', 'jp', '*.kawasaki.jp', '!city.kawasaki.jp', 'io', 'a.b.c  trailing']);
const ps = (d) => m.publicSuffixOf(d);
check('PSL', () => {
  assert.strictEqual(ps('com'), 'com');
  assert.strictEqual(ps('example.com'), 'com');
  assert.strictEqual(ps('www.example.co.uk'), 'co.uk');
  assert.strictEqual(ps('foo.ck'), 'foo.ck');
  assert.strictEqual(ps('a.foo.ck'), 'foo.ck');
  assert.strictEqual(ps('www.ck'), 'ck');
  assert.strictEqual(ps('x.www.ck'), 'ck');
  assert.strictEqual(ps('example.unknowntld'), 'unknowntld');
  assert.strictEqual(ps('city.kawasaki.jp'), 'kawasaki.jp');
  assert.strictEqual(ps('a.b.kawasaki.jp'), 'b.kawasaki.jp');
  assert.strictEqual(ps('x.a.b.c'), 'a.b.c');
  assert.strictEqual(ps('a..b'), null);
  assert.ok(m.isPublicSuffix('co.uk') && m.isPublicSuffix('github.io') && m.isPublicSuffix('foo.ck') && !m.isPublicSuffix('www.ck') && !m.isPublicSuffix('example.com'));
});
const v = (r, h, mm = m) => R.rpIdIsValidFor(r, h, mm);
check('rpIdIsValidFor', () => {
  assert.ok(v('example.com', 'example.com'));
  assert.ok(v('example.com', 'login.example.com'));
  assert.ok(!v('example.com', 'evilexample.com'));
  assert.ok(!v('com', 'example.com'));
  assert.ok(!v('com', 'example.com', null));
  assert.ok(!v('co.uk', 'a.co.uk'));
  assert.ok(v('co.uk', 'a.co.uk', null));
  assert.ok(!v('github.io', 'me.github.io'));
  assert.ok(v('github.io', 'github.io'));
  assert.ok(v('localhost', 'localhost'));
  assert.ok(v('app.localhost', 'x.app.localhost'));
  assert.ok(!v('b.c', 'x.a.b.c')); // suffix of the host's public suffix
  assert.ok(!v('127.0.0.1', '127.0.0.1'));
  assert.ok(!v('example.com', '[::1]'));
  assert.ok(!v('Example.com', 'example.com'));
  assert.ok(!v('example.com.', 'example.com.'));
  assert.ok(!v('-a.com', 'x.-a.com'));
  assert.ok(!v('a.1', 'a.1'));
  assert.ok(!v('', 'a.com'));
  assert.ok(!v('a'.repeat(64) + '.com', 'a'.repeat(64) + '.com'));
});
const c = (meth, o, h = 'login.example.com', mm = m) => R.checkSignal(meth, o, h, mm);
check('checkSignal', () => {
  assert.deepStrictEqual(c('signalUnknownCredential', {rpId: 'Example.com', credentialId: 'AAAA', extra: 1}), {options: {rpId: 'example.com', credentialId: 'AAAA'}});
  assert.strictEqual(c('signalUnknownCredential', null).errorName, 'TypeError');
  assert.strictEqual(c('signalUnknownCredential', {rpId: 1, credentialId: 'AA'}).errorName, 'TypeError');
  assert.strictEqual(c('signalUnknownCredential', {rpId: 'example.com', credentialId: 'A'}).errorName, 'TypeError');
  assert.strictEqual(c('signalUnknownCredential', {rpId: 'other.com', credentialId: 'AA'}).errorName, 'SecurityError');
  assert.strictEqual(c('signalUnknownCredential', {rpId: 'ëxample.com', credentialId: 'AA'}).errorName, 'SecurityError');
  assert.strictEqual(c('signalUnknownCredential', {rpId: 'other.com', credentialId: '!'}).errorName, 'TypeError'); // TypeError before SecurityError
  assert.deepStrictEqual(c('signalAllAcceptedCredentials', {rpId: 'example.com', userId: 'dXNlcg', allAcceptedCredentialIds: ['AA', 'BBB']}), {options: {rpId: 'example.com', userId: 'dXNlcg', allAcceptedCredentialIds: ['AA', 'BBB']}});
  assert.strictEqual(c('signalAllAcceptedCredentials', {rpId: 'example.com', userId: 'dXNlcg', allAcceptedCredentialIds: 'AA'}).errorName, 'TypeError');
  assert.match(c('signalAllAcceptedCredentials', {rpId: 'example.com', userId: 'dXNlcg', allAcceptedCredentialIds: ['AA', 5]}).message, /\[1\]/);
  assert.deepStrictEqual(c('signalCurrentUserDetails', {rpId: 'example.com', userId: 'dXNlcg', name: 'n', displayName: 'd'}), {options: {rpId: 'example.com', userId: 'dXNlcg', name: 'n', displayName: 'd'}});
  assert.strictEqual(c('signalCurrentUserDetails', {rpId: 'example.com', userId: 'dXNlcg', name: 'n'}).errorName, 'TypeError');
  assert.strictEqual(c('bogus', {}).errorName, 'TypeError');
  assert.strictEqual(c('signalUnknownCredential', {rpId: 'example.com', credentialId: 'AA'}, '').errorName, 'SecurityError');
  assert.ok(Object.isFrozen(R));
});
check('hostRefusal: what the native host would refuse is not forwarded', () => {
  const ok = { rpId: 'example.com', userId: 'dXNlcg', name: 'Ada Lovelace', displayName: 'Ada ✓' };
  assert.strictEqual(R.hostRefusal(ok), null);
  assert.strictEqual(R.hostRefusal({ rpId: 'example.com', credentialId: 'AAAA' }), null);
  assert.match(R.hostRefusal({ rpId: 'example.com', credentialId: '' }), /credentialId/);
  assert.match(R.hostRefusal({ rpId: 'example.com', credentialId: 'YR' }), /canonical/);      // unused bits set
  assert.match(R.hostRefusal({ rpId: 'example.com', credentialId: 'A'.repeat(1368) }), /1023/);
  assert.match(R.hostRefusal(Object.assign({}, ok, { userId: 'A'.repeat(88) })), /64 bytes/);
  assert.match(R.hostRefusal(Object.assign({}, ok, { name: 'a\rApprove?' })), /control/);
  assert.match(R.hostRefusal(Object.assign({}, ok, { displayName: '\u202egnp.exe' })), /bidirectional/);
  assert.match(R.hostRefusal(Object.assign({}, ok, { name: 'x\ud800' })), /well-formed/);
  assert.strictEqual(R.hostRefusal(Object.assign({}, ok, { name: '\ud83d\ude00' })), null, 'a surrogate pair is fine');
  assert.match(R.hostRefusal(Object.assign({}, ok, { name: 'é'.repeat(513) })), /1024 bytes/);
  const many = Array.from({ length: 30000 }, () => 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
  assert.match(R.hostRefusal({ rpId: 'example.com', userId: 'dXNlcg', allAcceptedCredentialIds: many }), /1 MiB/);
  assert.match(R.hostRefusal({ rpId: 'example.com', userId: 'dXNlcg', allAcceptedCredentialIds: ['AAAA', 'YR'] }), /\[1\]/);
});
check('the rules object is frozen', () => assert.ok(Object.isFrozen(R)));
finish('extension rules');
