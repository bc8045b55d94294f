/*
 * Latchkey's options page: the passkey provider's settings, kept in storage.local under
 * "provider" ({enabled, offerSave, exceptions}); the background registers or removes the
 * provider's page scripts whenever they change. One rule: every change applies at once (the
 * exception list as soon as it parses, half a second after the last keystroke).
 */
(function () {
  'use strict';

  const api = globalThis.browser ?? globalThis.chrome;
  const Rules = globalThis.LatchkeyProviderRules;
  const enabled = document.getElementById('enabled');
  const offerSave = document.getElementById('offerSave');
  const exceptions = document.getElementById('exceptions');
  const errors = document.getElementById('errors');
  const saved = document.getElementById('saved');
  let typing = null;

  async function current() {
    const stored = await api.storage.local.get('provider');
    const settings = Object.assign({ enabled: false, exceptions: [] }, stored.provider || {});
    settings.offerSave = settings.offerSave !== false;
    delete settings.newPasskeys; // 1.1's setting, replaced by offerSave
    return settings;
  }

  async function update(change) {
    const settings = Object.assign(await current(), change);
    await api.storage.local.set({ provider: settings });
    saved.textContent = 'Saved.';
    setTimeout(() => { saved.textContent = ''; }, 2000);
  }

  function applyExceptions() {
    const parsed = Rules.parseExceptions(exceptions.value);
    errors.textContent = parsed.errors.length > 0 ? `${parsed.errors.join('\n')}\nNot applied until every line is a host name.` : '';
    if (parsed.errors.length === 0) update({ exceptions: parsed.hosts });
  }

  current().then((settings) => {
    enabled.checked = settings.enabled;
    offerSave.checked = settings.offerSave;
    exceptions.value = settings.exceptions.join('\n');
    document.body.dataset.loaded = 'true';
  });

  enabled.addEventListener('change', () => update({ enabled: enabled.checked }));
  offerSave.addEventListener('change', () => update({ offerSave: offerSave.checked }));
  exceptions.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(applyExceptions, 500);
  });
  exceptions.addEventListener('change', () => {
    clearTimeout(typing);
    applyExceptions();
  });
})();
