// The bgcheck admin dashboard: plain JavaScript, no build step. Every figure comes from the
// admin API with the signed-in admin's bearer token; data is only ever written with textContent.
'use strict';

const store = window.sessionStorage;
const REFRESH_MARGIN_MS = 60 * 1000; // refresh the access token a minute before it expires
let config = { temporal_ui_url: 'http://127.0.0.1:8233' };
let refreshTimer = null;

function $(id) { return document.getElementById(id); }

// el builds an element; string children become text nodes, never markup.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(headers, rows) {
  return el('table', {}, el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...rows));
}

function showMessage(text, kind) {
  const m = $('message');
  m.textContent = text;
  m.className = kind || '';
  m.hidden = !text;
}

class AdminOnly extends Error {}

function saveTokens(pair) {
  store.setItem('access_token', pair.access_token);
  store.setItem('refresh_token', pair.refresh_token);
  store.setItem('expires_at', String(Date.now() + pair.expires_in * 1000));
  scheduleRefresh();
}

function clearSession() {
  store.removeItem('access_token');
  store.removeItem('refresh_token');
  store.removeItem('expires_at');
  if (refreshTimer) clearTimeout(refreshTimer);
  refreshTimer = null;
}

function scheduleRefresh() {
  if (refreshTimer) clearTimeout(refreshTimer);
  const at = Number(store.getItem('expires_at') || 0) - REFRESH_MARGIN_MS;
  refreshTimer = setTimeout(() => refresh().catch(() => {}), Math.max(at - Date.now(), 0));
}

// refresh trades the refresh token for a new pair; without one, or when it is refused, the
// session is over and the sign-in form comes back.
async function refresh() {
  const token = store.getItem('refresh_token');
  if (!token) { signedOut('Your session has ended; sign in again.'); throw new Error('signed out'); }
  const res = await fetch('/api/v1/auth/refresh', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ refresh_token: token }),
  });
  if (!res.ok) { signedOut('Your session has ended; sign in again.'); throw new Error('signed out'); }
  saveTokens(await res.json());
}

async function api(method, path, body, retried) {
  const headers = { Authorization: 'Bearer ' + (store.getItem('access_token') || '') };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch('/api/v1' + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401 && !retried && store.getItem('refresh_token')) {
    await refresh();
    return api(method, path, body, true);
  }
  if (res.status === 401) { signedOut('Sign in to continue.'); throw new Error('signed out'); }
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.status === 403) throw new AdminOnly('This dashboard is for admins.');
  if (!res.ok) throw new Error(describeProblem(data, res.status));
  return data;
}

// describeProblem turns a problem+json answer into one line, naming each invalid field.
function describeProblem(data, status) {
  if (!data) return 'HTTP ' + status;
  const fields = (data.errors || []).map((f) => f.field + ' ' + f.message);
  return fields.length ? fields.join('; ') : (data.detail || data.title || 'HTTP ' + status);
}

function signedOut(message) {
  clearSession();
  $('nav').hidden = true;
  $('view').replaceChildren();
  $('signin').hidden = false;
  showMessage(message || '', message ? 'info' : '');
}

// signIn is e-mail first: a domain with single sign-on goes to its identity provider; any other
// asks for the password. The link under the form asks for it at once (the break-glass admin of an
// account that requires SSO signs in that way).
async function signIn(ev) {
  ev.preventDefault();
  showMessage('');
  if ($('password-row').hidden) {
    const res = await fetch('/api/v1/auth/sso/start', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: $('email').value }),
    });
    const data = await res.json().catch(() => null);
    if (res.ok) { location.assign(data.redirect_url); return; }
    if (!data || data.code !== 'sso_not_configured') { showMessage((data && data.detail) || 'Sign-in failed.'); return; }
    askPassword();
    return;
  }
  const res = await fetch('/api/v1/auth/login', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: $('email').value, password: $('password').value }),
  });
  const data = await res.json().catch(() => null);
  if (!res.ok) { showMessage((data && data.detail) || 'Sign-in failed.'); return; }
  saveTokens(data);
  $('password').value = '';
  await start();
}

function askPassword() {
  $('password-row').hidden = false;
  $('use-password').hidden = true;
  $('signin-submit').textContent = 'Sign in';
  $('password').focus();
}

// finishSSO trades the one-time code an SSO sign-in returned with (#/sso?code=…) for tokens;
// the code leaves the address bar at once.
async function finishSSO(code) {
  history.replaceState(null, '', location.pathname + '#/overview');
  const res = await fetch('/api/v1/auth/sso/exchange', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }),
  });
  const data = await res.json().catch(() => null);
  if (!res.ok) { signedOut((data && data.detail) || 'Single sign-on failed.'); return; }
  saveTokens(data);
  await start();
}

async function signOut() {
  const token = store.getItem('refresh_token');
  try {
    await fetch('/api/v1/auth/logout', {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + (store.getItem('access_token') || ''), 'Content-Type': 'application/json' },
      body: JSON.stringify({ refresh_token: token }),
    });
  } finally {
    signedOut('You have signed out.');
  }
}

// start shows the dashboard to an admin, and to anyone else the admin-only message and nothing else.
async function start() {
  let me;
  try {
    me = await api('GET', '/me');
  } catch (e) { return; }
  if (me.role !== 'admin') {
    clearSession();
    $('signin').hidden = false;
    showMessage('This dashboard is for admins. You are signed in as a ' + me.role + '.');
    $('view').replaceChildren();
    return;
  }
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('who').textContent = me.email;
  showMessage('');
  scheduleRefresh();
  route();
}

function when(t) { return t ? new Date(t).toLocaleString() : '—'; }
function deliveryLink(d) { return el('a', { href: '#/deliveries/' + encodeURIComponent(d.id), class: 'delivery-link' }, d.id); }
function statusCell(s) { return el('td', { class: 'status-' + s }, s); }

function deliveryRows(list) {
  return list.map((d) => el('tr', {}, el('td', {}, deliveryLink(d)), statusCell(d.status), el('td', {}, d.mode),
    el('td', {}, d.event_type), el('td', {}, d.endpoint_id), el('td', {}, d.attempt_count),
    el('td', {}, d.last_status_code ?? ''), el('td', {}, d.last_error ?? ''), el('td', {}, when(d.updated_at))));
}
const deliveryHeaders = ['Delivery', 'Status', 'Mode', 'Event type', 'Endpoint', 'Attempts', 'Last status', 'Last error', 'Updated'];

const COLORS = { succeeded: '#12b76a', failed: '#f04438', pending: '#f79009', canceled: '#98a2b3' };

// chart draws the hourly series as stacked SVG bars.
function chart(hourly) {
  const ns = 'http://www.w3.org/2000/svg';
  const w = 720, h = 160, bw = w / Math.max(hourly.length, 1);
  const max = Math.max(1, ...hourly.map((x) => x.succeeded + x.failed + x.pending + x.canceled));
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h + 20}`);
  svg.setAttribute('width', String(w));
  svg.setAttribute('id', 'hourly-chart');
  hourly.forEach((x, i) => {
    let y = h;
    for (const k of ['succeeded', 'failed', 'pending', 'canceled']) {
      const bh = (x[k] / max) * h;
      if (bh <= 0) continue;
      y -= bh;
      const r = document.createElementNS(ns, 'rect');
      r.setAttribute('x', String(i * bw + 1)); r.setAttribute('y', String(y));
      r.setAttribute('width', String(bw - 2)); r.setAttribute('height', String(bh));
      r.setAttribute('fill', COLORS[k]);
      const title = document.createElementNS(ns, 'title');
      title.textContent = `${new Date(x.hour).toLocaleString()}: ${x[k]} ${k}`;
      r.append(title);
      svg.append(r);
    }
    if (i % 6 === 0) {
      const t = document.createElementNS(ns, 'text');
      t.setAttribute('x', String(i * bw)); t.setAttribute('y', String(h + 15)); t.setAttribute('font-size', '11');
      t.textContent = new Date(x.hour).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
      svg.append(t);
    }
  });
  const legend = el('p', { class: 'legend' }, ...Object.keys(COLORS).map((k) => {
    const s = el('span', { class: 'swatch' });
    s.style.background = COLORS[k];
    return el('span', {}, s, k);
  }));
  return el('div', {}, svg, legend);
}

// dailyChart draws the month's live checks per day as bars.
function dailyChart(daily) {
  const ns = 'http://www.w3.org/2000/svg';
  const w = 720, h = 120, bw = w / Math.max(daily.length, 1);
  const max = Math.max(1, ...daily.map((d) => d.checks));
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h + 20}`);
  svg.setAttribute('width', String(w));
  svg.setAttribute('id', 'daily-chart');
  daily.forEach((d, i) => {
    const bh = (d.checks / max) * h;
    const r = document.createElementNS(ns, 'rect');
    r.setAttribute('x', String(i * bw + 1)); r.setAttribute('y', String(h - bh));
    r.setAttribute('width', String(bw - 2)); r.setAttribute('height', String(bh));
    r.setAttribute('fill', COLORS.succeeded);
    const title = document.createElementNS(ns, 'title');
    title.textContent = `${d.date}: ${d.checks} checks`;
    r.append(title);
    svg.append(r);
    if (i % 7 === 0) {
      const t = document.createElementNS(ns, 'text');
      t.setAttribute('x', String(i * bw)); t.setAttribute('y', String(h + 15)); t.setAttribute('font-size', '11');
      t.textContent = d.date.slice(5);
      svg.append(t);
    }
  });
  return svg;
}

function money(cents) { return '$' + (cents / 100).toFixed(2); }

function quotaText(q) { return `${q.used} of ${q.limit} live checks used this month; ${q.remaining} left until ${when(q.period_end)}`; }

// viewBilling shows the live quota and usage, the invoices and the payment methods.
async function viewBilling(view) {
  const [b, invoices, methods] = await Promise.all([api('GET', '/admin/billing'), api('GET', '/admin/billing/invoices'),
    api('GET', '/admin/billing/payment-methods')]);
  const invoiceRows = invoices.data.map((i) => el('tr', {}, el('td', {}, el('a', { href: '#/invoices/' + encodeURIComponent(i.id), class: 'invoice-link' }, i.number)),
    el('td', {}, i.period), statusCell(i.status), el('td', {}, money(i.total_cents)), el('td', {}, when(i.issued_at))));
  const methodRows = methods.data.map((m) => {
    const remove = el('button', { type: 'button', class: 'remove-pm' }, 'Remove');
    remove.addEventListener('click', async () => {
      if (!window.confirm('Remove ' + m.brand + ' …' + m.last4 + '?')) return;
      try { await api('DELETE', '/admin/billing/payment-methods/' + encodeURIComponent(m.id)); await viewBilling(view); } catch (e) { failed(e); }
    });
    let makeDefault = null;
    if (!m.default) {
      makeDefault = el('button', { type: 'button', class: 'default-pm' }, 'Make default');
      makeDefault.addEventListener('click', async () => {
        try { await api('POST', '/admin/billing/payment-methods/' + encodeURIComponent(m.id) + '/default'); await viewBilling(view); } catch (e) { failed(e); }
      });
    }
    return el('tr', { 'data-pm-id': m.id }, el('td', {}, m.brand + ' …' + m.last4), el('td', {}, `${m.exp_month}/${m.exp_year}`),
      el('td', {}, m.processor + ' ' + m.processor_ref), el('td', {}, m.default ? 'default' : ''), el('td', {}, makeDefault, ' ', remove));
  });
  view.replaceChildren(el('h1', {}, 'Billing'),
    el('p', { id: 'billing-quota' }, quotaText(b.quota)),
    el('h2', {}, 'Live checks per day, this month'), dailyChart(b.daily || []),
    el('div', { id: 'usage-totals' }, table(['Package', 'Checks', 'Amount'], b.totals.map((t) => el('tr', {}, el('td', {}, t.package),
      el('td', {}, t.quantity), el('td', {}, money(t.amount_cents))))), el('p', {}, 'This month so far: ', money(b.total_cents))),
    el('h2', {}, 'Invoices'),
    invoiceRows.length ? el('div', { id: 'invoice-list' }, table(['Invoice', 'Period', 'Status', 'Total', 'Issued'], invoiceRows)) : el('p', { id: 'invoice-list' }, 'No invoices yet.'),
    el('h2', {}, 'Payment methods'),
    el('p', {}, 'Cards are held by your payment processor; bgcheck keeps only its reference.'),
    el('div', { id: 'payment-methods' }, table(['Card', 'Expires', 'Processor reference', '', ''], methodRows)));
}

// viewInvoice is the printable invoice.
async function viewInvoice(view, id) {
  const i = await api('GET', '/admin/billing/invoices/' + encodeURIComponent(id));
  const print = el('button', { type: 'button', id: 'print-invoice', class: 'no-print' }, 'Print');
  print.addEventListener('click', () => window.print());
  view.replaceChildren(el('div', { class: 'invoice', id: 'invoice' },
    el('h1', {}, 'Invoice ' + i.number),
    el('p', {}, 'Checks of ', i.period, ' (UTC) · issued ', when(i.issued_at), ' · ', i.status),
    table(['Package', 'Checks', 'Unit price', 'Amount'], i.lines.map((l) => el('tr', {}, el('td', {}, l.package), el('td', {}, l.quantity),
      el('td', {}, money(l.unit_price_cents)), el('td', {}, money(l.amount_cents))))),
    el('p', { id: 'invoice-total' }, el('b', {}, 'Total ' + money(i.total_cents) + ' ' + i.currency.toUpperCase())),
    print));
}

async function viewOverview(view) {
  const o = await api('GET', '/admin/overview');
  const card = (label, n, id) => el('div', { class: 'card', id }, el('b', {}, n), label);
  view.replaceChildren(
    el('h1', {}, o.account.name),
    el('div', { class: 'cards' }, card('candidates', o.counts.candidates), card('checks', o.counts.checks, 'count-checks'),
      card('webhook endpoints', o.counts.webhook_endpoints),
      card('events (24 h)', o.counts.events_24h)),
    el('p', { id: 'overview-quota' }, quotaText(o.quota)),
    el('h2', {}, 'Deliveries of the last 24 hours by status (pending: all in flight)'),
    el('div', { class: 'cards' }, card('pending', o.deliveries.pending, 'count-pending'), card('succeeded', o.deliveries.succeeded, 'count-succeeded'),
      card('failed', o.deliveries.failed, 'count-failed'), card('canceled', o.deliveries.canceled, 'count-canceled')),
    el('h2', {}, 'Deliveries per hour, last 24 hours'),
    chart(o.hourly || []),
    el('h2', {}, 'Newest failed deliveries'),
    o.failed_deliveries.length ? el('div', { id: 'failed-deliveries' }, table(deliveryHeaders, deliveryRows(o.failed_deliveries)))
      : el('p', { id: 'failed-deliveries' }, 'No failed deliveries.'));
}

async function viewDeliveries(view, params) {
  const q = new URLSearchParams();
  for (const k of ['status', 'mode', 'event_type', 'endpoint_id']) if (params.get(k)) q.set(k, params.get(k));
  const page = await api('GET', '/admin/deliveries?' + q.toString());
  const select = (name, options) => el('label', {}, name, el('select', { name },
    ...['', ...options].map((o) => { const opt = el('option', { value: o }, o || 'any'); if (params.get(name) === o) opt.selected = true; return opt; })));
  const text = (name) => { const i = el('input', { name, value: params.get(name) || '' }); return el('label', {}, name, i); };
  const form = el('form', { class: 'filters', id: 'delivery-filters' },
    select('status', ['pending', 'succeeded', 'failed', 'canceled']), select('mode', ['test', 'live']),
    text('event_type'), text('endpoint_id'), el('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) f.set(k, v);
    location.hash = '#/deliveries?' + f.toString();
  });
  view.replaceChildren(el('h1', {}, 'Deliveries'), form,
    el('div', { id: 'delivery-list' }, table(deliveryHeaders, deliveryRows(page.data))),
    page.has_more ? el('p', {}, 'Showing the newest ' + page.data.length + '; narrow the filters to see older ones.') : null);
}

function checkRows(list) {
  return list.map((c) => el('tr', {}, el('td', {}, el('a', { href: '#/checks/' + encodeURIComponent(c.id), class: 'check-link' }, c.id)),
    statusCell(c.status), el('td', {}, c.assessment ?? ''), el('td', {}, c.mode), el('td', {}, c.package),
    el('td', {}, c.candidate_id), el('td', {}, when(c.created_at)), el('td', {}, when(c.completed_at))));
}

async function viewChecks(view, params) {
  const q = new URLSearchParams();
  for (const k of ['status', 'assessment', 'mode']) if (params.get(k)) q.set(k, params.get(k));
  const page = await api('GET', '/admin/checks?' + q.toString());
  const form = filterForm('check-filters', '#/checks', params, {
    status: ['invitation_pending', 'pending', 'complete', 'dispute', 'suspended', 'canceled', 'failed'],
    assessment: ['clear', 'consider'], mode: ['test', 'live'],
  });
  view.replaceChildren(el('h1', {}, 'Checks'), form,
    el('div', { id: 'check-list' }, table(['Check', 'Status', 'Assessment', 'Mode', 'Package', 'Candidate', 'Created', 'Completed'], checkRows(page.data))),
    page.has_more ? el('p', {}, 'Showing the newest ' + page.data.length + '; narrow the filters to see older ones.') : null);
}

async function viewCheck(view, id) {
  const c = await api('GET', '/admin/checks/' + encodeURIComponent(id));
  const ui = (config.temporal_ui_url || '').replace(/\/+$/, '');
  const ns = encodeURIComponent(config.temporal_namespace || 'default');
  const wf = el('a', { id: 'check-workflow-link', href: `${ui}/namespaces/${ns}/workflows/${encodeURIComponent(c.workflow_id)}`, target: '_blank', rel: 'noopener' },
    'Workflow in the Temporal UI');
  view.replaceChildren(el('h1', {}, 'Check ' + c.id),
    el('p', {}, 'Status ', el('b', { id: 'check-status', class: 'status-' + c.status }, c.status),
      c.assessment ? ' · assessment ' + c.assessment : '', c.reason ? ' · ' + c.reason : '', ' · ', c.mode, ' · package ', c.package,
      ' · candidate ', c.candidate_id, ' · check_id ', c.check_id),
    el('p', {}, wf),
    el('h2', {}, 'Screenings'),
    table(['Screening', 'Status', 'Result', 'Reason', 'Completed'], c.screenings.map((s) => el('tr', {}, el('td', {}, s.type),
      statusCell(s.status), el('td', {}, s.result ?? ''), el('td', {}, s.reason ?? ''), el('td', {}, when(s.completed_at))))));
}

// filterForm is a form of selects that, submitted, moves to hash with the chosen values.
function filterForm(id, hash, params, selects) {
  const select = (name, options) => el('label', {}, name, el('select', { name },
    ...['', ...options].map((o) => { const opt = el('option', { value: o }, o || 'any'); if (params.get(name) === o) opt.selected = true; return opt; })));
  const form = el('form', { class: 'filters', id }, ...Object.entries(selects).map(([n, o]) => select(n, o)),
    el('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) f.set(k, v);
    location.hash = hash + '?' + f.toString();
  });
  return form;
}

function checkLink(id) { return el('a', { href: '#/checks/' + encodeURIComponent(id) }, id); }

// viewAdverseActions lists the account's adverse actions; one in its waiting period can be
// withdrawn (no final notice is sent).
async function viewAdverseActions(view, params) {
  const q = new URLSearchParams();
  if (params.get('mode')) q.set('mode', params.get('mode'));
  const page = await api('GET', '/admin/adverse-actions?' + q.toString());
  const rows = page.data.map((a) => {
    let cancel = null;
    if (a.status === 'pending') {
      cancel = el('button', { type: 'button', class: 'cancel-adverse' }, 'Cancel');
      cancel.addEventListener('click', async () => {
        if (!window.confirm('Withdraw adverse action ' + a.id + '? No final notice will be sent.')) return;
        try { await api('POST', '/admin/adverse-actions/' + encodeURIComponent(a.id) + '/cancel'); await viewAdverseActions(view, params); } catch (e) { failed(e); }
      });
    }
    return el('tr', { 'data-adverse-id': a.id }, el('td', {}, a.id), el('td', {}, checkLink(a.check)), el('td', {}, a.mode),
      statusCell(a.status), el('td', {}, a.on_hold ? 'held by a dispute' : ''), el('td', {}, a.reasons.join('; ')),
      el('td', {}, when(a.notice_sent_at)), el('td', {}, when(a.finalize_at)), el('td', {}, cancel));
  });
  view.replaceChildren(el('h1', {}, 'Adverse actions'), filterForm('adverse-filters', '#/adverse-actions', params, { mode: ['test', 'live'] }),
    el('div', { id: 'adverse-list' }, table(['Adverse action', 'Check', 'Mode', 'Status', '', 'Reasons', 'Pre-adverse notice', 'Final notice due'], rows)),
    page.has_more ? el('p', {}, 'Showing the newest ' + page.data.length + '.') : null);
}

async function viewDisputes(view, params) {
  const q = new URLSearchParams();
  for (const k of ['status', 'mode']) if (params.get(k)) q.set(k, params.get(k));
  const page = await api('GET', '/admin/disputes?' + q.toString());
  const rows = page.data.map((d) => el('tr', {}, el('td', {}, el('a', { href: '#/disputes/' + encodeURIComponent(d.id), class: 'dispute-link' }, d.id)),
    el('td', {}, checkLink(d.check)), el('td', {}, d.mode), el('td', {}, d.screening), statusCell(d.status),
    el('td', {}, d.resolution ?? ''), el('td', {}, when(d.filed_at)), el('td', {}, when(d.due_at))));
  view.replaceChildren(el('h1', {}, 'Disputes'),
    filterForm('dispute-filters', '#/disputes', params, { status: ['open', 'resolved'], mode: ['test', 'live'] }),
    el('div', { id: 'dispute-list' }, table(['Dispute', 'Check', 'Mode', 'Screening', 'Status', 'Resolution', 'Filed', 'Due'], rows)),
    page.has_more ? el('p', {}, 'Showing the newest ' + page.data.length + '; narrow the filters to see older ones.') : null);
}

// viewDispute shows a dispute; an open test-mode one can be resolved here. Live disputes are the
// consumer reporting agency's to resolve (bgcheckctl disputes resolve).
async function viewDispute(view, id) {
  const d = await api('GET', '/admin/disputes/' + encodeURIComponent(id));
  let action = null;
  if (d.status === 'open' && d.mode === 'test') {
    const resolution = el('select', { name: 'resolution', id: 'dispute-resolution' },
      ...['verified', 'corrected', 'deleted'].map((r) => el('option', { value: r }, r)));
    const note = el('input', { name: 'note', id: 'dispute-note', placeholder: 'what the reinvestigation found' });
    action = el('form', { class: 'filters', id: 'dispute-resolve' }, el('label', {}, 'Resolution', resolution), el('label', {}, 'Note', note),
      el('button', { type: 'submit', id: 'dispute-resolve-submit' }, 'Resolve'));
    action.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        await api('POST', '/admin/disputes/' + encodeURIComponent(d.id) + '/resolve', { resolution: resolution.value, note: note.value });
        showMessage('Dispute resolved.', 'info');
        await viewDispute(view, id);
      } catch (e) { failed(e); }
    });
  } else if (d.status === 'open') {
    action = el('p', {}, 'Live disputes are resolved by the consumer reporting agency: bgcheckctl disputes resolve ' + d.id);
  }
  view.replaceChildren(el('h1', {}, 'Dispute ' + d.id),
    el('p', {}, 'Status ', el('b', { id: 'dispute-status', class: 'status-' + d.status }, d.status),
      d.resolution ? ' · ' + d.resolution + ' by ' + d.resolved_by : '', ' · ', d.mode, ' · check ', checkLink(d.check),
      ' · screening ', d.screening),
    el('p', {}, 'Filed ', when(d.filed_at), ' · due ', when(d.due_at), d.resolved_at ? ' · resolved ' + when(d.resolved_at) : ''),
    el('h2', {}, 'The candidate\'s reason'), el('p', { id: 'dispute-reason' }, d.reason),
    d.note ? el('p', {}, 'Note: ', d.note) : null,
    action);
}

async function viewSettings(view, params) {
  const st = await api('GET', '/admin/settings');
  const days = el('input', { name: 'adverse_action_waiting_days', id: 'waiting-days', type: 'number', min: '5', max: '30', value: String(st.adverse_action_waiting_days) });
  const form = el('form', { class: 'filters', id: 'settings-form' },
    el('label', {}, 'Waiting period of an adverse action (business days)', days), el('button', { type: 'submit', id: 'settings-save' }, 'Save'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await api('PATCH', '/admin/settings', { adverse_action_waiting_days: Number(days.value) });
      showMessage('Settings saved.', 'info');
    } catch (e) { failed(e); }
  });
  view.replaceChildren(el('h1', {}, 'Settings'), form,
    el('p', {}, 'Applies to adverse actions created from now on without waiting_days; the FCRA asks for at least 5.'),
    await ssoSettings(params));
}

async function viewDelivery(view, id) {
  const d = await api('GET', '/admin/deliveries/' + encodeURIComponent(id));
  const ui = (config.temporal_ui_url || '').replace(/\/+$/, '');
  const ns = encodeURIComponent(config.temporal_namespace || 'default');
  const wf = el('a', { id: 'workflow-link', href: `${ui}/namespaces/${ns}/workflows/${encodeURIComponent(d.workflow_id || d.id)}`, target: '_blank', rel: 'noopener' },
    'Workflow in the Temporal UI');
  const button = el('button', { id: 'redeliver', type: 'button' }, 'Redeliver');
  button.disabled = d.status === 'pending';
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      await api('POST', '/admin/deliveries/' + encodeURIComponent(d.id) + '/redeliver');
      showMessage('Redelivery queued.', 'info');
      await viewDelivery(view, id);
    } catch (e) { failed(e); button.disabled = false; }
  });
  const attempts = d.attempts.map((a) => el('tr', {}, el('td', {}, a.number), el('td', {}, when(a.started_at)),
    el('td', {}, a.duration_ms + ' ms'), el('td', {}, a.status_code ?? '—'), el('td', {}, a.error ?? ''),
    el('td', { class: 'snippet' }, a.response_snippet ?? '')));
  view.replaceChildren(el('h1', {}, 'Delivery ', d.id),
    el('p', {}, 'Status: ', el('b', { id: 'delivery-status', class: 'status-' + d.status }, d.status),
      ` · ${d.mode} · ${d.event_type} · endpoint ${d.endpoint_id} · event ${d.event_id}`),
    el('p', {}, wf, ' ', button),
    el('h2', {}, 'Attempts'),
    d.attempts.length ? table(['#', 'Started', 'Duration', 'Status code', 'Error', 'Start of the answer'], attempts) : el('p', {}, 'No attempts yet.'));
}

async function viewKeys(view) {
  const page = await api('GET', '/admin/api-keys');
  const name = el('input', { name: 'name', id: 'key-name', placeholder: 'name' });
  const mode = el('select', { name: 'mode', id: 'key-mode' }, el('option', { value: 'test' }, 'test'), el('option', { value: 'live' }, 'live'));
  const shown = el('div', { id: 'new-key' });
  const form = el('form', { class: 'filters', id: 'key-create' }, el('label', {}, 'Name', name), el('label', {}, 'Mode', mode),
    el('button', { type: 'submit', id: 'key-create-submit' }, 'Create key'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const k = await api('POST', '/admin/api-keys', { name: name.value, mode: mode.value });
      await viewKeys(view);
      const code = el('code', { class: 'key', id: 'new-key-value' }, k.key);
      const copy = el('button', { type: 'button', id: 'copy-key' }, 'Copy');
      copy.addEventListener('click', () => navigator.clipboard.writeText(k.key).then(() => { copy.textContent = 'Copied'; }));
      $('new-key').replaceChildren(el('p', {}, 'Your new key, shown this once only: ', code, ' ', copy));
    } catch (e) { failed(e); }
  });
  const rows = page.data.map((k) => {
    const revoke = el('button', { type: 'button', class: 'revoke', 'data-key-id': k.id }, 'Revoke');
    revoke.addEventListener('click', async () => {
      if (!window.confirm('Revoke ' + (k.name || k.id) + '? It stops working at once.')) return;
      try { await api('DELETE', '/admin/api-keys/' + encodeURIComponent(k.id)); await viewKeys(view); } catch (e) { failed(e); }
    });
    return el('tr', { 'data-key-id': k.id }, el('td', {}, k.name), el('td', {}, k.mode), el('td', {}, k.prefix + '…' + k.last4),
      el('td', {}, k.scopes.length ? k.scopes.join(', ') : 'all'), el('td', {}, when(k.last_used_at)), el('td', {}, when(k.created_at)),
      el('td', {}, revoke));
  });
  view.replaceChildren(el('h1', {}, 'API keys'), form, shown,
    el('div', { id: 'key-list' }, table(['Name', 'Mode', 'Key', 'Scopes', 'Last used', 'Created', ''], rows)));
}

async function viewEndpoints(view) {
  const page = await api('GET', '/admin/webhook-endpoints');
  const rows = page.data.map((e) => {
    let enable = null;
    if (!e.enabled) {
      enable = el('button', { type: 'button', class: 'enable-endpoint' }, 'Enable');
      enable.addEventListener('click', async () => {
        try { await api('POST', '/admin/webhook-endpoints/' + encodeURIComponent(e.id) + '/enable'); await viewEndpoints(view); } catch (err) { failed(err); }
      });
    }
    const state = e.enabled ? 'yes' : (e.disabled_reason === 'failing' ? 'disabled: every delivery failed since ' + when(e.failing_since) : 'no');
    return el('tr', { 'data-endpoint-id': e.id }, el('td', {}, el('a', { href: '#/deliveries?endpoint_id=' + encodeURIComponent(e.id) }, e.id)),
      el('td', {}, e.mode), el('td', {}, e.url), el('td', { class: 'endpoint-state' }, state, ' ', enable),
      el('td', { class: 'success-rate' }, e.recent.success_rate === null ? '—' : (e.recent.success_rate * 100).toFixed(1) + ' %'),
      el('td', {}, `${e.recent.succeeded} succeeded, ${e.recent.failed} failed, ${e.recent.pending} pending`),
      el('td', {}, when(e.last_success_at)), el('td', { class: 'failing-since' }, e.failing_since ? when(e.failing_since) : '—'));
  });
  view.replaceChildren(el('h1', {}, 'Webhook endpoints'),
    el('div', { id: 'endpoint-list' }, table(['Endpoint', 'Mode', 'URL', 'Enabled', 'Success rate (24 h)', 'Deliveries (24 h)', 'Last success', 'Failing since'], rows)));
}

function failed(e) {
  if (e instanceof AdminOnly) {
    clearSession();
    $('nav').hidden = true;
    $('view').replaceChildren();
    $('signin').hidden = false;
  }
  if (e && e.message !== 'signed out') showMessage(e.message);
}

async function route() {
  if (!store.getItem('access_token')) { signedOut(); return; }
  const [path, query] = (location.hash.slice(1) || '/overview').split('?');
  const params = new URLSearchParams(query || '');
  const view = $('view');
  view.setAttribute('data-view', 'loading');
  try {
    let name = 'overview';
    if (path === '/deliveries') { name = 'deliveries'; await viewDeliveries(view, params); }
    else if (path.startsWith('/deliveries/')) { name = 'delivery'; await viewDelivery(view, decodeURIComponent(path.slice('/deliveries/'.length))); }
    else if (path === '/checks') { name = 'checks'; await viewChecks(view, params); }
    else if (path.startsWith('/checks/')) { name = 'check'; await viewCheck(view, decodeURIComponent(path.slice('/checks/'.length))); }
    else if (path === '/adverse-actions') { name = 'adverse-actions'; await viewAdverseActions(view, params); }
    else if (path === '/disputes') { name = 'disputes'; await viewDisputes(view, params); }
    else if (path.startsWith('/disputes/')) { name = 'dispute'; await viewDispute(view, decodeURIComponent(path.slice('/disputes/'.length))); }
    else if (path === '/settings') { name = 'settings'; await viewSettings(view, params); }
    else if (path === '/billing') { name = 'billing'; await viewBilling(view); }
    else if (path.startsWith('/invoices/')) { name = 'invoice'; await viewInvoice(view, decodeURIComponent(path.slice('/invoices/'.length))); }
    else if (path === '/keys') { name = 'keys'; await viewKeys(view); }
    else if (path === '/endpoints') { name = 'endpoints'; await viewEndpoints(view); }
    else await viewOverview(view);
    view.setAttribute('data-view', name);
  } catch (e) { failed(e); view.setAttribute('data-view', 'error'); }
}

document.addEventListener('DOMContentLoaded', async () => {
  $('signin').addEventListener('submit', (ev) => signIn(ev).catch(failed));
  $('signout').addEventListener('click', () => signOut());
  window.addEventListener('hashchange', () => { showMessage(''); if (!$('nav').hidden) route(); });
  // A click on the link of the page one is on changes no hash: draw the page afresh all the same.
  $('nav').addEventListener('click', (ev) => {
    const a = ev.target.closest('a');
    if (a && a.getAttribute('href') === location.hash) { showMessage(''); route(); }
  });
  try { config = await (await fetch('config.json')).json(); } catch (e) { /* keep the default */ }
  $('use-password').addEventListener('click', (ev) => { ev.preventDefault(); askPassword(); });
  const [path, query] = location.hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  if (path === '/sso' && params.get('code')) { await finishSSO(params.get('code')); return; }
  if (path === '/signin' && params.get('sso_error')) {
    // A link can carry any text here: it is shown as text, and signs nobody out.
    history.replaceState(null, '', location.pathname);
    if (store.getItem('access_token')) { await start(); showMessage('Single sign-on failed: ' + params.get('sso_error')); return; }
    signedOut('Single sign-on failed: ' + params.get('sso_error'));
    return;
  }
  if (store.getItem('access_token')) await start(); else signedOut();
});
