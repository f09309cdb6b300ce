// Settings → Single sign-on: the account's OIDC and SAML connections (shown, edited, tested),
// a form for a new one, and the requirement that admins sign in through SSO with its
// break-glass admin. It uses app.js's helpers (el, api, table, when, failed, route, showMessage).
'use strict';

// ssoSettings is the Single sign-on section of the settings page.
async function ssoSettings(params) {
  const [list, enforcement] = await Promise.all([api('GET', '/admin/sso/connections'), api('GET', '/admin/sso/enforcement')]);
  const tested = params && params.get('sso_test');
  const section = el('section', { id: 'sso' }, el('h2', {}, 'Single sign-on'));
  for (const c of list.data) {
    if (c.id === tested && c.last_test) {
      showMessage((c.last_test.ok ? 'Test passed: ' : 'Test failed: ') + c.last_test.detail, c.last_test.ok ? 'info' : '');
    }
    section.append(await ssoConnectionCard(c));
  }
  section.append(ssoEnforcementForm(enforcement), newConnectionForm(list.data));
  return section;
}

// ssoEnforcementForm turns the requirement on or off and names the break-glass admin, picked by
// e-mail among the admins who have a password.
function ssoEnforcementForm(e) {
  const required = el('input', { type: 'checkbox', id: 'sso-required' });
  required.checked = e.required;
  // Until one is named, the admin who turns the requirement on becomes it.
  const breakGlass = el('select', { id: 'sso-break-glass' }, e.break_glass_email ? null : el('option', { value: '' }, '(me)'),
    ...e.break_glass_candidates.map((u) => el('option', { value: u.id }, u.email)));
  breakGlass.value = e.break_glass_user_id || '';
  const form = el('form', { class: 'filters', id: 'sso-enforcement' },
    el('label', {}, 'Require SSO for every admin (but the break-glass admin)', required),
    el('label', {}, 'Break-glass admin (signs in with a password if the identity provider is down)', breakGlass),
    el('button', { type: 'submit', id: 'sso-enforcement-save' }, 'Save'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { required: required.checked };
    if (breakGlass.value) body.break_glass_user_id = breakGlass.value;
    try {
      const saved = await api('PATCH', '/admin/sso/enforcement', body);
      await route();
      showMessage(saved.required ? 'SSO is now required; the break-glass admin is ' + (saved.break_glass_email || 'an admin without a password') + '.'
        : 'SSO is no longer required.', 'info');
    } catch (err) { failed(err); }
  });
  return el('div', {}, el('h3', {}, 'Requirement'),
    e.required && e.break_glass_email ? el('p', { id: 'sso-break-glass-now' }, 'Break-glass admin: ' + e.break_glass_email) : null, form);
}

// copyable is a value to give the identity provider's administrator, with a button that copies it.
function copyable(value) {
  const button = el('button', { type: 'button', class: 'copy' }, 'Copy');
  button.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(value); showMessage('Copied.', 'info'); } catch (e) { showMessage('Select the text and copy it.'); }
  });
  return el('td', { class: 'snippet' }, value, ' ', button);
}

async function ssoConnectionCard(c) {
  const ours = c.protocol === 'oidc'
    ? [['Redirect URI', c.oidc.redirect_uri]]
    : [['SP entity ID', c.saml.sp_entity_id], ['ACS URL', c.saml.acs_url], ['SP metadata URL', c.saml.sp_metadata_url]];
  const theirs = c.protocol === 'oidc'
    ? [['Issuer', c.oidc.issuer], ['Client ID', c.oidc.client_id], ['Client secret', c.oidc.client_secret_set ? 'set (never shown)' : 'not set']]
    : [['IdP entity ID', c.saml.idp_entity_id], ['IdP metadata', c.saml.metadata_url || '(pasted XML)'],
      ['Metadata valid until', when(c.saml.metadata_valid_until)],
      ['Metadata fetched', c.saml.metadata_url ? when(c.saml.metadata_fetched_at) + '; next ' + when(c.saml.metadata_next_refresh_at) : '—'],
      ['IdP-initiated sign-in', c.saml.allow_idp_initiated ? 'allowed' : 'off']];
  const act = (label, id, fn) => el('button', { type: 'button', id, onclick: () => fn().catch(failed) }, label);
  let spMetadata = null;
  if (c.protocol === 'saml') {
    // Our SP metadata, to paste into the IdP (or give it the URL above).
    const res = await fetch('/api/v1/auth/sso/saml/' + encodeURIComponent(c.id) + '/metadata');
    const xml = res.ok ? await res.text() : '';
    spMetadata = el('details', {}, el('summary', {}, 'SP metadata XML'),
      el('textarea', { id: 'sso-sp-metadata-' + c.protocol, readonly: '', rows: '8', cols: '90' }, xml),
      el('p', {}, el('a', { href: '/api/v1/auth/sso/saml/' + encodeURIComponent(c.id) + '/metadata', download: 'bgcheck-sp-metadata.xml' }, 'Download')));
  }
  const edit = ssoEditForm(c);
  return el('div', { class: 'card sso-connection', 'data-id': c.id },
    el('h3', {}, (c.name || c.protocol.toUpperCase()) + ' — ' + c.protocol.toUpperCase() + (c.enabled ? ' (enabled)' : ' (disabled)')),
    el('p', {}, 'Last sign-in: ' + when(c.last_sign_in_at) + (c.jit_provisioning ? '. New admins are created on first sign-in.' : '. Only existing admins can sign in.')),
    c.protocol === 'saml' && c.saml.metadata_refresh_error
      ? el('p', { class: 'status-failed sso-refresh-error' }, 'Fetching the IdP metadata again failed (' + when(c.saml.metadata_refresh_error.at) + '): ' +
        c.saml.metadata_refresh_error.detail + '. The stored metadata is used until it expires.')
      : null,
    table(['Domain', 'Status', 'DNS TXT record that proves it'], c.domain_verification.map((d) => el('tr', { class: 'sso-domain' },
      el('td', {}, d.domain), el('td', {}, d.status === 'verified' ? 'verified ' + when(d.verified_at) : 'pending'),
      el('td', { class: 'snippet' }, d.status === 'verified' ? '' : d.record_name + ' TXT "' + d.record_value + '"')))),
    c.domain_verification.some((d) => d.status !== 'verified')
      ? el('p', {}, 'Sign-ins through a domain start once its TXT record is published. ',
        act('Verify domains', 'sso-verify-' + c.protocol, async () => {
          const v = await api('POST', '/admin/sso/connections/' + c.id + '/verify-domains');
          const pending = v.domain_verification.filter((d) => d.status !== 'verified').map((d) => d.domain);
          await route();
          if (pending.length) showMessage('No matching TXT record found yet for ' + pending.join(', ') + '. DNS changes can take a while to appear.');
        }))
      : null,
    c.last_test ? el('p', { class: 'sso-last-test' }, (c.last_test.ok ? 'Last test passed' : 'Last test failed') + ' (' + when(c.last_test.at) + '): ' + c.last_test.detail) : null,
    el('h4', {}, 'Give the identity provider'),
    table(['Setting', 'Value'], ours.map(([k, v]) => el('tr', {}, el('td', {}, k), copyable(v)))),
    spMetadata,
    el('h4', {}, 'From the identity provider'),
    table(['Setting', 'Value'], theirs.map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', { class: 'snippet' }, v)))),
    act(c.enabled ? 'Disable' : 'Enable', 'sso-toggle-' + c.protocol, async () => { await api('PATCH', '/admin/sso/connections/' + c.id, { enabled: !c.enabled }); route(); }),
    ' ',
    act('Edit', 'sso-edit-' + c.protocol, async () => { edit.hidden = !edit.hidden; }),
    ' ',
    act('Test connection', 'sso-test-' + c.protocol, async () => {
      const t = await api('POST', '/admin/sso/connections/' + c.id + '/test');
      location.assign(t.redirect_url);
    }),
    ' ',
    act('Delete', 'sso-delete-' + c.protocol, async () => {
      if (!confirm('Delete this connection? Its users keep their accounts but sign in another way.')) return;
      await api('DELETE', '/admin/sso/connections/' + c.id); route();
    }),
    edit);
}

// ssoField is a labelled input of an SSO form, found by its id.
function ssoField(id, label, attrs) {
  return el('label', { id: id + '-row' }, label, el('input', Object.assign({ id }, attrs || {})));
}

function ssoCheckbox(id, label, checked) {
  const box = el('input', { type: 'checkbox', id });
  box.checked = !!checked;
  return el('label', { id: id + '-row' }, label, box);
}

function splitDomains(text) { return text.split(',').map((d) => d.trim()).filter(Boolean); }

// ssoEditForm changes a connection: it sends only what the admin changed. A blank client
// secret or metadata XML keeps what is stored; the client secret is never shown.
function ssoEditForm(c) {
  const p = 'sso-edit-' + c.protocol + '-';
  const saml = c.protocol === 'saml';
  const form = el('form', { id: 'sso-edit-' + c.protocol + '-form', class: 'filters', hidden: '' },
    ssoField(p + 'name', 'Name', { value: c.name }),
    ssoField(p + 'domains', 'E-mail domains (comma-separated)', { value: c.domains.join(', '), required: '' }),
    ssoCheckbox(p + 'jit', 'Create admins on first sign-in', c.jit_provisioning),
    saml ? null : ssoField(p + 'issuer', 'OIDC issuer', { value: c.oidc.issuer }),
    saml ? null : ssoField(p + 'client-id', 'Client ID', { value: c.oidc.client_id }),
    saml ? null : ssoField(p + 'client-secret', 'New client secret (blank keeps the current one)', { type: 'password', autocomplete: 'off' }),
    saml ? ssoField(p + 'metadata-url', 'IdP metadata URL', { value: c.saml.metadata_url || '' }) : null,
    saml ? el('label', {}, 'or new IdP metadata XML (blank keeps it)', el('textarea', { id: p + 'metadata-xml', rows: '3' })) : null,
    saml ? ssoCheckbox(p + 'idp-initiated', 'Allow IdP-initiated sign-in', c.saml.allow_idp_initiated) : null,
    el('button', { type: 'submit', id: p + 'save' }, 'Save changes'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (id) => form.querySelector('#' + p + id).value.trim();
    const checked = (id) => form.querySelector('#' + p + id).checked;
    const body = {};
    if (v('name') !== c.name) body.name = v('name');
    if (splitDomains(v('domains')).join(',') !== c.domains.join(',')) body.domains = splitDomains(v('domains'));
    if (checked('jit') !== c.jit_provisioning) body.jit_provisioning = checked('jit');
    if (!saml) {
      const o = {};
      if (v('issuer') !== c.oidc.issuer) o.issuer = v('issuer');
      if (v('client-id') !== c.oidc.client_id) o.client_id = v('client-id');
      if (v('client-secret')) o.client_secret = v('client-secret');
      if (Object.keys(o).length) body.oidc = o;
    } else {
      const s = {};
      if (v('metadata-xml')) s.metadata_xml = v('metadata-xml');
      else if (v('metadata-url') && v('metadata-url') !== (c.saml.metadata_url || '')) s.metadata_url = v('metadata-url');
      if (checked('idp-initiated') !== c.saml.allow_idp_initiated) s.allow_idp_initiated = checked('idp-initiated');
      if (Object.keys(s).length) body.saml = s;
    }
    if (!Object.keys(body).length) { showMessage('Nothing to change.', 'info'); return; }
    try {
      await api('PATCH', '/admin/sso/connections/' + c.id, body);
      await route();
      showMessage('Connection saved.', 'info');
    } catch (err) { failed(err); }
  });
  return form;
}

function newConnectionForm(existing) {
  const have = new Set(existing.map((c) => c.protocol));
  const free = ['oidc', 'saml'].filter((p) => !have.has(p));
  if (free.length === 0) return el('p', {}, 'The account has both an OIDC and a SAML connection.');
  const protocol = el('select', { id: 'sso-protocol' }, ...free.map((p) => el('option', { value: p }, p.toUpperCase())));
  const form = el('form', { id: 'sso-new', class: 'filters' },
    el('label', {}, 'Protocol', protocol),
    ssoField('sso-name', 'Name'),
    ssoField('sso-domains', 'E-mail domains (comma-separated)', { required: '' }),
    ssoField('sso-issuer', 'OIDC issuer'), ssoField('sso-client-id', 'Client ID'),
    ssoField('sso-client-secret', 'Client secret', { type: 'password', autocomplete: 'off' }),
    ssoField('sso-metadata-url', 'IdP metadata URL'),
    el('label', { id: 'sso-metadata-xml-row' }, 'or IdP metadata XML', el('textarea', { id: 'sso-metadata-xml', rows: '3' })),
    ssoCheckbox('sso-idp-initiated', 'Allow IdP-initiated sign-in', false),
    ssoCheckbox('sso-enabled', 'Enabled', false),
    ssoCheckbox('sso-jit', 'Create admins on first sign-in', false),
    el('button', { type: 'submit', id: 'sso-create' }, 'Add connection'));
  const show = () => {
    const oidc = protocol.value === 'oidc';
    for (const id of ['sso-issuer', 'sso-client-id', 'sso-client-secret']) form.querySelector('#' + id + '-row').hidden = !oidc;
    for (const id of ['sso-metadata-url', 'sso-metadata-xml', 'sso-idp-initiated']) form.querySelector('#' + id + '-row').hidden = oidc;
  };
  protocol.addEventListener('change', show);
  show();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = (id) => form.querySelector('#' + id).value.trim();
    const body = { protocol: protocol.value, name: v('sso-name'), enabled: form.querySelector('#sso-enabled').checked,
      jit_provisioning: form.querySelector('#sso-jit').checked, domains: splitDomains(v('sso-domains')) };
    if (body.protocol === 'oidc') body.oidc = { issuer: v('sso-issuer'), client_id: v('sso-client-id'), client_secret: v('sso-client-secret') };
    else {
      body.saml = v('sso-metadata-url') ? { metadata_url: v('sso-metadata-url') } : { metadata_xml: v('sso-metadata-xml') };
      body.saml.allow_idp_initiated = form.querySelector('#sso-idp-initiated').checked;
    }
    try {
      await api('POST', '/admin/sso/connections', body);
      showMessage('Connection added: give the identity provider the values shown, then test it.', 'info');
      route();
    } catch (e) { failed(e); }
  });
  return el('div', {}, el('h3', {}, 'Add a connection'), form);
}
