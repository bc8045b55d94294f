/*
 * Latchkey's options page: the passkey provider's settings, kept in storage.local under
 * "provider" ({enabled, newPasskeys, exceptions}); the background registers or removes the
 * provider's page scripts whenever they change.
 */
(function () {
  'use strict';

  const api = globalThis.browser ?? globalThis.chrome;
  const Rules = globalThis.LatchkeyProviderRules;
  const enabled = document.getElementById('enabled');
  const newPasskeys = document.getElementById('newPasskeys');
  const exceptions = document.getElementById('exceptions');
  const errors = document.getElementById('errors');
  const saved = document.getElementById('saved');

  async function current() {
    const stored = await api.storage.local.get('provider');
    return Object.assign({ enabled: false, newPasskeys: false, exceptions: [] }, stored.provider || {});
  }

  async function update(change) {
    const settings = Object.assign(await current(), change);
    await api.storage.local.set({ provider: settings });
    saved.textContent = 'Saved.';
    setTimeout(() => { saved.textContent = ''; }, 2000);
  }

  current().then((settings) => {
    enabled.checked = settings.enabled;
    newPasskeys.checked = settings.newPasskeys;
    exceptions.value = settings.exceptions.join('\n');
    document.body.dataset.loaded = 'true';
  });

  enabled.addEventListener('change', () => update({ enabled: enabled.checked }));
  newPasskeys.addEventListener('change', () => update({ newPasskeys: newPasskeys.checked }));
  document.getElementById('save').addEventListener('click', () => {
    const parsed = Rules.parseExceptions(exceptions.value);
    errors.textContent = parsed.errors.join('\n');
    if (parsed.errors.length > 0) return;
    exceptions.value = parsed.hosts.join('\n');
    update({ exceptions: parsed.hosts });
  });
})();
