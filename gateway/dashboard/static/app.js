// docrender dashboard. It calls the public API with the session cookie
// (HttpOnly: this script never sees it) from the service's own origin, so
// the origin checks on cookie requests pass (DESIGN §5). Data from the
// server only ever goes into the page as text (textContent, text nodes),
// never as HTML. Nothing is kept in the browser's web storage: a new API
// key lives in the page until "Done" or a reload.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  // el builds an element; string children become text nodes.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
  }

  // --- talking to the API ---

  class APIError extends Error {
    constructor(status, message, code, details) {
      super(message);
      this.status = status;
      this.code = code || '';
      // details are a 422's failed checks ({kind, message, line?, path?, url?}).
      this.details = Array.isArray(details) ? details : [];
    }
  }

  // errorOf reads an error answer (shape A {statusCode, code, message, hint}
  // or shape B {success:false, message}) into an APIError.
  async function errorOf(resp) {
    let body = null;
    try { body = await resp.json(); } catch { /* not JSON */ }
    let msg = (body && typeof body.message === 'string' && body.message) || `${resp.status} ${resp.statusText}`;
    // A 400 names the field it refused (stages[1].op, scale); the message
    // usually does too, else it is said after it.
    if (body && typeof body.field === 'string' && body.field && !msg.includes(body.field)) msg += ` (field ${body.field})`;
    if (body && typeof body.hint === 'string' && body.hint) msg += ' ' + body.hint;
    const retry = resp.headers.get('Retry-After');
    if (resp.status === 429 && retry) msg += ` Try again in ${retry} s.`;
    return new APIError(resp.status, msg, body && body.code, body && body.details);
  }

  async function api(method, path, body) {
    const init = { method, credentials: 'same-origin', signal: state.abort.signal, headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(path, init);
    if (!resp.ok) throw await errorOf(resp);
    return resp.json();
  }

  // status shows a message under a section; kind is '', 'ok' or 'error'.
  function status(id, msg, kind) {
    const s = $(id);
    s.textContent = msg || '';
    s.className = 'status' + (kind ? ' ' + kind : '');
  }

  // fail reports err in a section; a lost session goes back to sign in.
  function fail(id, err) {
    if (err instanceof APIError && err.status === 401 && state.user) {
      signedOut('Your session ended. Sign in again.');
      return;
    }
    status(id, err.message || String(err), 'error');
  }

  // busy disables a button while fn runs.
  async function busy(button, fn) {
    button.disabled = true;
    try { return await fn(); } finally { button.disabled = false; }
  }

  // --- formatting ---

  function when(iso) {
    if (!iso) return '—';
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toLocaleString();
  }

  function bytes(n) {
    if (!(n >= 0)) return '—';
    const units = ['B', 'KB', 'MB', 'GB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
  }

  function duration(s) {
    if (!(s > 0)) return '—';
    if (s % 86400 === 0) return `${s / 86400} day${s === 86400 ? '' : 's'}`;
    if (s % 3600 === 0) return `${s / 3600} hour${s === 3600 ? '' : 's'}`;
    return `${Math.round(s / 60)} min`;
  }

  // httpURL returns u if it is an http(s) URL, else null: a link's href
  // never takes a javascript: or data: URL from a response.
  function httpURL(u) {
    try {
      const p = new URL(u, location.href);
      return p.protocol === 'http:' || p.protocol === 'https:' ? p.href : null;
    } catch { return null; }
  }

  // --- session ---

  // gen numbers the session: every request notes it when it starts and
  // touches the page only if it is still current when its answer comes, so
  // an answer for the last account never lands after a sign-out or sign-in.
  // abort cancels the requests of the session in flight.
  const state = { user: null, gen: 0, abort: new AbortController(), hostedPage: 1, stream: null, renderURL: null, shotURL: null, tpl: null, tplURL: null };
  const hostedPerPage = 10;

  // newSession drops whatever the last session still has in flight.
  function newSession() {
    state.abort.abort();
    state.abort = new AbortController();
    state.gen++;
    stopStream();
  }

  function show(signedIn) {
    $('loading').hidden = true;
    $('auth').hidden = signedIn;
    $('app').hidden = !signedIn;
    $('nav').hidden = !signedIn;
    $('who').hidden = !signedIn;
  }

  function signedIn(user) {
    newSession();
    state.user = user;
    $('who-email').textContent = user.email;
    $('who-plan').textContent = user.plan;
    show(true);
    status('auth-status', '');
    refreshUsage();
    loadKeys();
    loadHosted(1);
    loadTemplates();
  }

  function signedOut(msg) {
    newSession();
    state.user = null;
    clearNewKey();
    clearRender();
    clearShot();
    clearText();
    clearInspect();
    closeTemplate();
    // Nothing of this account stays on screen for the next person.
    for (const id of ['key-rows', 'hosted-rows', 'limits', 'tpl-rows']) $(id).replaceChildren();
    $('tpl-count').textContent = '';
    $('tpl-upload').open = false;
    for (const f of document.querySelectorAll('#app form')) f.reset();
    for (const s of document.querySelectorAll('#app .status')) status(s.id, '');
    $('batch-view').hidden = true;
    show(false);
    status('auth-status', msg || '', msg ? 'error' : '');
  }

  $('auth-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const register = ev.submitter && ev.submitter.value === 'register';
    const body = { email: $('auth-email').value.trim(), password: $('auth-password').value };
    status('auth-status', register ? 'Creating your account…' : 'Signing in…');
    try {
      const res = await busy(ev.submitter || $('signin'), () => api('POST', register ? '/api/auth/register' : '/api/auth/login', body));
      $('auth-password').value = '';
      signedIn(res.data.user);
    } catch (err) {
      status('auth-status', err.message, 'error');
    }
  });

  $('signout').addEventListener('click', async () => {
    // Drop the requests in flight now, not when the logout has answered.
    newSession();
    try {
      await api('POST', '/api/auth/logout');
    } catch { /* signed out here either way */ }
    signedOut();
  });

  // --- usage ---

  function setMeter(meter, text, used, limit) {
    meter.max = limit > 0 ? limit : 1;
    meter.value = Math.min(used, meter.max);
    meter.low = meter.max * 0.75;
    meter.high = meter.max * 0.9;
    text.textContent = limit > 0 ? `${used} / ${limit}` : String(used);
    meter.title = text.textContent;
  }

  async function refreshUsage() {
    const gen = state.gen;
    try {
      const [u, s] = await Promise.all([api('GET', '/api/billing/usage'), api('GET', '/api/billing/subscription')]);
      if (gen !== state.gen) return;
      const usage = u.data, sub = s.data;
      $('usage-period').textContent = usage.period;
      setMeter($('conv-meter'), $('conv-text'), usage.conversionsUsed, usage.conversionsLimit);
      setMeter($('hosted-meter'), $('hosted-text'), usage.hostedCount, usage.hostedLimit);
      $('who-plan').textContent = sub.plan;
      const l = sub.limits || {};
      $('limits').replaceChildren(
        el('dt', { text: 'Plan' }), el('dd', { text: sub.plan }),
        el('dt', { text: 'Conversions a month' }), el('dd', { text: String(l.conversions) }),
        el('dt', { text: 'Hosted files' }), el('dd', { text: String(l.hosted) }),
        el('dt', { text: 'Kept for' }), el('dd', { text: duration(l.retentionSeconds) }),
        el('dt', { text: 'Documents a batch' }), el('dd', { text: String(l.maxBatch) }),
      );
      status('usage-status', '');
    } catch (err) {
      if (gen === state.gen) fail('usage-status', err);
    }
  }
  $('usage-refresh').addEventListener('click', refreshUsage);

  // --- keys ---

  // confirmButton is a button that asks once more before doing fn.
  function confirmButton(label, ask, fn) {
    const b = el('button', { type: 'button', class: 'danger', text: label });
    let armed = false;
    b.addEventListener('click', async () => {
      if (!armed) {
        armed = true;
        b.textContent = ask;
        b.classList.add('confirm');
        setTimeout(() => { armed = false; b.textContent = label; b.classList.remove('confirm'); }, 4000);
        return;
      }
      await busy(b, fn);
    });
    return b;
  }

  async function loadKeys() {
    const gen = state.gen;
    try {
      const res = await api('GET', '/api/keys');
      if (gen !== state.gen) return;
      const rows = res.data.map((k) => el('tr', { 'data-key-id': k.id },
        el('td', { text: k.name || '—' }),
        el('td', {}, el('code', { text: k.prefix + '…' })),
        el('td', { text: when(k.createdAt) }),
        el('td', { text: k.expiresAt ? when(k.expiresAt) : 'never' }),
        el('td', { class: 'actions' }, confirmButton('Revoke', 'Really revoke?', () => revokeKey(k))),
      ));
      $('key-rows').replaceChildren(...rows);
      $('keys-empty').hidden = rows.length > 0;
    } catch (err) {
      if (gen === state.gen) fail('keys-status', err);
    }
  }

  async function revokeKey(k) {
    const gen = state.gen;
    try {
      await api('DELETE', '/api/keys/' + encodeURIComponent(k.id));
      if (gen !== state.gen) return;
      status('keys-status', `Key “${k.name || k.prefix}” revoked.`, 'ok');
      await loadKeys();
    } catch (err) {
      if (gen === state.gen) fail('keys-status', err);
    }
  }

  function clearNewKey() {
    $('new-key-value').textContent = '';
    $('new-key').hidden = true;
    status('new-key-status', '');
  }

  $('key-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: $('key-name').value.trim() };
    const exp = $('key-expires').value;
    if (exp) body.expiresAt = exp + 'T23:59:59Z';
    const gen = state.gen;
    try {
      const res = await busy($('key-create'), () => api('POST', '/api/keys', body));
      if (gen !== state.gen) return;
      $('new-key-value').textContent = res.data.key;
      $('new-key').hidden = false;
      status('new-key-status', '');
      status('keys-status', '');
      $('key-form').reset();
      await loadKeys();
    } catch (err) {
      if (gen === state.gen) fail('keys-status', err);
    }
  });

  $('new-key-copy').addEventListener('click', async () => {
    const key = $('new-key-value').textContent;
    try {
      await navigator.clipboard.writeText(key);
    } catch {
      // No clipboard API (or no permission): copy the selection the old way.
      const r = document.createRange();
      r.selectNodeContents($('new-key-value'));
      const sel = getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      if (!document.execCommand('copy')) {
        status('new-key-status', 'Copy failed: select the key and copy it by hand.', 'error');
        return;
      }
    }
    status('new-key-status', 'Copied.', 'ok');
  });
  $('new-key-done').addEventListener('click', clearNewKey);

  // --- render a file ---

  function clearRender() {
    if (state.renderURL) URL.revokeObjectURL(state.renderURL);
    state.renderURL = null;
    $('render-result').hidden = true;
    const link = $('render-link');
    link.removeAttribute('href');
    link.removeAttribute('download');
    link.textContent = '';
    $('render-summary').textContent = '';
    status('render-status', '');
  }

  // filenameOf reads the plain filename of a Content-Disposition header.
  function filenameOf(cd) {
    const m = /filename="([^"]*)"/.exec(cd || '');
    return m && m[1] ? m[1] : 'document.pdf';
  }

  // officeFile matches the names of the office documents POST /pdf/office
  // takes (their extension says their format).
  const officeFile = /\.(docx|docm|dotx|doc|dot|xlsx|xlsm|xltx|xls|xlt|pptx|pptm|ppsx|potx|ppt|pps|pot|odt|ott|ods|ots|odp|otp|odg|fodt|fods|fodp|rtf|txt|csv)$/;

  $('render-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearRender();
    const files = $('render-files').files;
    if (!files.length) {
      status('render-status', 'Choose an HTML or Markdown file first.', 'error');
      return;
    }
    let opts = {};
    const raw = $('render-options').value.trim();
    if (raw) {
      try { opts = JSON.parse(raw); } catch (e) {
        status('render-status', 'Options are not valid JSON: ' + e.message, 'error');
        return;
      }
      if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) {
        status('render-status', 'Options must be a JSON object.', 'error');
        return;
      }
    }
    // The document-of-record controls win over the same fields of the JSON.
    const pdfa = $('render-pdfa').value;
    if (pdfa) opts.pdfa = pdfa;
    if ($('render-pdfua').checked) opts.pdfua = true;
    const lang = $('render-lang').value.trim();
    if (lang) opts.lang = lang;
    // So do the long-document controls (DESIGN §10) and the steps (§11);
    // a table of contents and slices are of HTML pages, not office files.
    const officeOnly = Array.from(files, (f) => f.name.toLowerCase()).every((n) => officeFile.test(n));
    if ($('render-toc').checked && !officeOnly) opts.toc = true;
    const split = $('render-split').value;
    if (split && !officeOnly) opts.split = split === 'true';
    const rawStages = $('render-stages').value.trim();
    if (rawStages) {
      let stages;
      try { stages = JSON.parse(rawStages); } catch (e) {
        status('render-status', 'Stages are not valid JSON: ' + e.message, 'error');
        return;
      }
      if (!Array.isArray(stages)) {
        status('render-status', 'Stages must be a JSON list of steps, such as [{"op":"watermark","text":"DRAFT"}].', 'error');
        return;
      }
      opts.stages = stages;
    }
    if ($('render-host').checked) opts.host = true;
    const form = new FormData();
    if (Object.keys(opts).length) form.append('options', JSON.stringify(opts));
    for (const f of files) form.append('files', f, f.name);
    // Markdown without a page of HTML (template.html aside) is printed by
    // POST /pdf/markdown; office documents alone are converted by POST
    // /pdf/office (one PDF each, a ZIP for several; merge:true in the
    // options for one PDF); anything else is generate's.
    const names = Array.from(files, (f) => f.name.toLowerCase());
    const markdown = names.some((n) => /\.(md|markdown)$/.test(n)) && !names.some((n) => /\.html?$/.test(n) && n !== 'template.html');
    const office = names.every((n) => officeFile.test(n));
    const route = office ? '/pdf/office' : markdown ? '/pdf/markdown' : '/pdf/generate';
    status('render-status', office ? 'Converting…' : 'Rendering…');
    const gen = state.gen;
    try {
      await busy($('render-submit'), async () => {
        // No key: /pdf/* takes the session cookie when none is sent (spec §5).
        const resp = await fetch(route, { method: 'POST', body: form, credentials: 'same-origin', signal: state.abort.signal });
        if (!resp.ok) throw await errorOf(resp);
        const link = $('render-link');
        if ((resp.headers.get('Content-Type') || '').startsWith('application/json')) {
          const hosted = await resp.json();
          if (gen !== state.gen) return;
          const href = httpURL(hosted.url);
          link.href = href || '#';
          link.textContent = hosted.url;
          link.removeAttribute('download');
          $('render-summary').textContent = `Hosted until ${when(hosted.expiresAt)}.`;
        } else {
          const blob = await resp.blob();
          if (gen !== state.gen) return;
          const name = filenameOf(resp.headers.get('Content-Disposition'));
          state.renderURL = URL.createObjectURL(blob);
          link.href = state.renderURL;
          link.download = name;
          link.textContent = `Download ${name} (${bytes(blob.size)})`;
          const report = resp.headers.get('Docrender-Render-Report');
          $('render-summary').textContent = 'Rendered.' + (report ? ' ' + report : '');
        }
        $('render-result').hidden = false;
        status('render-status', '');
      });
    } catch (err) {
      if (gen === state.gen) fail('render-status', err);
    }
    if (gen !== state.gen) return;
    refreshUsage();
    if (opts.host) loadHosted(1);
  });

  // --- screenshot a page (DESIGN §11) ---

  function clearShot() {
    if (state.shotURL) URL.revokeObjectURL(state.shotURL);
    state.shotURL = null;
    $('shot-result').hidden = true;
    const img = $('shot-image');
    img.hidden = true;
    img.removeAttribute('src');
    const link = $('shot-link');
    link.removeAttribute('href');
    link.removeAttribute('download');
    link.textContent = '';
    $('shot-summary').textContent = '';
    status('shot-status', '');
  }

  $('shot-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearShot();
    const files = $('shot-files').files;
    const url = $('shot-url').value.trim();
    if (!files.length === !url) {
      status('shot-status', 'Choose an HTML file or give an address, not both.', 'error');
      return;
    }
    let opts;
    try { opts = jsonObject($('shot-options').value, 'Options'); } catch (e) {
      status('shot-status', e.message, 'error');
      return;
    }
    // The controls win over the same fields of the JSON.
    opts.format = $('shot-format').value;
    for (const [id, key] of [['shot-width', 'width'], ['shot-height', 'height']]) {
      const v = $(id).value.trim();
      if (v) opts[key] = Number(v);
    }
    if ($('shot-full').checked) opts.fullPage = true;
    if ($('shot-host').checked) opts.host = true;
    const form = new FormData();
    form.append('options', JSON.stringify(opts));
    if (url) form.append('url', url);
    for (const f of files) form.append('files', f, f.name);
    status('shot-status', 'Capturing…');
    const gen = state.gen;
    try {
      await busy($('shot-submit'), async () => {
        const resp = await fetch('/pdf/screenshot', { method: 'POST', body: form, credentials: 'same-origin', signal: state.abort.signal });
        if (!resp.ok) throw await errorOf(resp);
        const link = $('shot-link');
        if ((resp.headers.get('Content-Type') || '').startsWith('application/json')) {
          const hosted = await resp.json();
          if (gen !== state.gen) return;
          link.href = httpURL(hosted.url) || '#';
          link.textContent = hosted.url;
          $('shot-summary').textContent = `Hosted until ${when(hosted.expiresAt)}.`;
        } else {
          const blob = await resp.blob();
          if (gen !== state.gen) return;
          const name = filenameOf(resp.headers.get('Content-Disposition'));
          state.shotURL = URL.createObjectURL(blob);
          link.href = state.shotURL;
          link.download = name;
          link.textContent = `Download ${name} (${bytes(blob.size)})`;
          const img = $('shot-image');
          img.src = state.shotURL;
          img.hidden = false;
          $('shot-summary').textContent = 'Captured.';
        }
        $('shot-result').hidden = false;
        status('shot-status', '');
      });
    } catch (err) {
      if (gen === state.gen) fail('shot-status', err);
    }
    if (gen !== state.gen) return;
    refreshUsage();
    if (opts.host) loadHosted(1);
  });

  // --- text of a PDF (DESIGN §11) ---

  function clearText() {
    $('text-result').hidden = true;
    $('text-output').textContent = '';
    $('text-summary').textContent = '';
    status('text-status', '');
  }

  $('text-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearText();
    const file = $('text-file').files[0];
    if (!file) {
      status('text-status', 'Choose a PDF first.', 'error');
      return;
    }
    const opts = { format: $('text-format').value };
    const pages = $('text-pages').value.trim();
    if (pages) opts.pages = pages;
    const form = new FormData();
    form.append('options', JSON.stringify(opts));
    form.append('files', file, file.name);
    status('text-status', 'Reading…');
    const gen = state.gen;
    try {
      await busy($('text-submit'), async () => {
        const resp = await fetch('/pdf/text', { method: 'POST', body: form, credentials: 'same-origin', signal: state.abort.signal });
        if (!resp.ok) throw await errorOf(resp);
        const text = await resp.text();
        if (gen !== state.gen) return;
        // Shown as text, never as markup: it is the PDF's, not ours.
        $('text-output').textContent = text;
        $('text-summary').textContent = `${text.length.toLocaleString()} characters of ${opts.format === 'markdown' ? 'Markdown' : 'text'}.`;
        $('text-result').hidden = false;
        status('text-status', '');
      });
    } catch (err) {
      if (gen === state.gen) fail('text-status', err);
    }
    if (gen === state.gen) refreshUsage();
  });

  // --- templates (DESIGN §9) ---

  // loadTemplates lists the account's templates (the first 100, newest
  // first) with their count.
  async function loadTemplates() {
    const gen = state.gen;
    try {
      const res = await api('GET', '/api/templates?limit=100');
      if (gen !== state.gen) return;
      const list = res.data.templates || [];
      const rows = list.map((t) => {
        const open = el('button', { type: 'button', class: 'secondary', text: 'Open' });
        open.addEventListener('click', () => openTemplate(t.id));
        const tr = el('tr', { 'data-template-id': t.id },
          el('td', { text: t.name }),
          el('td', { text: String(t.latestVersion) }),
          el('td', { text: when(t.updatedAt) }),
          el('td', { class: 'actions' }, open, confirmButton('Delete', 'Really delete?', () => deleteTemplate(t))));
        if (state.tpl && state.tpl.id === t.id) tr.classList.add('selected');
        return tr;
      });
      $('tpl-rows').replaceChildren(...rows);
      $('tpl-empty').hidden = rows.length > 0;
      $('tpl-count').textContent = String(res.data.total);
      status('tpl-status', res.data.total > list.length ? `The newest ${list.length} of ${res.data.total}.` : '');
    } catch (err) {
      if (gen === state.gen) fail('tpl-status', err);
    }
  }
  $('tpl-refresh').addEventListener('click', loadTemplates);

  function clearPreview() {
    if (state.tplURL) URL.revokeObjectURL(state.tplURL);
    state.tplURL = null;
    $('tpl-result').hidden = true;
    $('tpl-frame').removeAttribute('src');
    const link = $('tpl-download');
    link.removeAttribute('href');
    link.removeAttribute('download');
    link.textContent = '';
    $('tpl-summary').textContent = '';
    $('tpl-problems').replaceChildren();
    $('tpl-problems').hidden = true;
    status('tpl-preview-status', '');
  }

  function closeTemplate() {
    clearPreview();
    state.tpl = null;
    $('tpl-detail').hidden = true;
    $('tpl-versions').replaceChildren();
    $('tpl-version').replaceChildren();
    $('tpl-name').textContent = '';
    $('tpl-data').value = '';
  }

  // openTemplate shows a template's versions and the preview form.
  async function openTemplate(id) {
    const gen = state.gen;
    try {
      const res = await api('GET', '/api/templates/' + encodeURIComponent(id));
      if (gen !== state.gen) return;
      const t = res.data;
      if (!state.tpl || state.tpl.id !== t.id) {
        clearPreview();
        $('tpl-data').value = '';
      }
      state.tpl = t;
      $('tpl-name').textContent = t.name;
      const versions = Array.isArray(t.versions) ? t.versions : [];
      $('tpl-versions').replaceChildren(...versions.map((v) => el('tr', { 'data-version': String(v.version) },
        el('td', { text: String(v.version) }),
        el('td', { text: when(v.createdAt) }),
        el('td', { text: bytes(v.size) }),
        el('td', { text: (Array.isArray(v.files) ? v.files : []).join(', ') }),
        el('td', { text: v.hasSampleData ? 'yes' : 'no' }))));
      // Newest first in the choice, the latest chosen.
      $('tpl-version').replaceChildren(...versions.slice().reverse().map((v) =>
        el('option', { value: String(v.version), text: `${v.version}${v.version === t.latestVersion ? ' (latest)' : ''}` })));
      for (const tr of document.querySelectorAll('#tpl-rows tr')) tr.classList.toggle('selected', tr.dataset.templateId === t.id);
      $('tpl-detail').hidden = false;
      status('tpl-status', '');
    } catch (err) {
      if (gen === state.gen) fail('tpl-status', err);
    }
  }

  async function deleteTemplate(t) {
    const gen = state.gen;
    try {
      await api('DELETE', '/api/templates/' + encodeURIComponent(t.id));
      if (gen !== state.gen) return;
      if (state.tpl && state.tpl.id === t.id) closeTemplate();
      status('tpl-status', `Deleted “${t.name}”.`, 'ok');
      await loadTemplates();
    } catch (err) {
      if (gen === state.gen) fail('tpl-status', err);
    }
  }

  // jsonObject parses a textarea's JSON object ('' is {}); it throws an
  // Error saying where the text goes wrong.
  function jsonObject(raw, what) {
    raw = raw.trim();
    if (!raw) return {};
    let v;
    try { v = JSON.parse(raw); } catch (e) {
      throw new Error(`${what} is not valid JSON: ${e.message}`);
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`${what} must be a JSON object ({…}).`);
    return v;
  }

  // showProblems lists a 422's details: a template error names the
  // template's line and the data's path.
  function showProblems(details) {
    const items = details.map((d) => {
      if (d.kind === 'template') {
        const li = el('li', { class: 'template-error' }, `Line ${d.line}`);
        if (d.path) li.append(', data ', el('code', { text: d.path }));
        li.append(': ' + (d.message || ''));
        return li;
      }
      return el('li', {}, `${d.kind}: ${d.message || ''}` + (d.url ? ` (${d.url})` : ''));
    });
    $('tpl-problems').replaceChildren(...items);
    $('tpl-problems').hidden = items.length === 0;
  }

  // preview fetches a PDF of the open template and shows it.
  async function preview(button, request, what) {
    const t = state.tpl;
    if (!t) return;
    clearPreview();
    status('tpl-preview-status', 'Rendering…');
    const gen = state.gen;
    try {
      await busy(button, async () => {
        const resp = await request(t);
        if (!resp.ok) throw await errorOf(resp);
        const blob = await resp.blob();
        if (gen !== state.gen || state.tpl !== t) return;
        const name = filenameOf(resp.headers.get('Content-Disposition'));
        state.tplURL = URL.createObjectURL(new Blob([blob], { type: 'application/pdf' }));
        // Shown in the page where the browser can show a PDF; elsewhere
        // (no viewer: the frame would download it) the link is the way.
        const frame = $('tpl-frame');
        frame.hidden = !navigator.pdfViewerEnabled;
        if (navigator.pdfViewerEnabled) frame.src = state.tplURL;
        const link = $('tpl-download');
        link.href = state.tplURL;
        link.download = name;
        link.textContent = `Download ${name} (${bytes(blob.size)})`;
        const report = resp.headers.get('Docrender-Render-Report');
        $('tpl-summary').textContent = what + (report ? ` (${report})` : '') + '.';
        $('tpl-result').hidden = false;
        status('tpl-preview-status', '');
      });
    } catch (err) {
      if (gen !== state.gen) return;
      if (err instanceof APIError) showProblems(err.details);
      fail('tpl-preview-status', err);
    }
    if (gen === state.gen) refreshUsage();
  }

  $('tpl-preview-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    let data;
    try { data = jsonObject($('tpl-data').value, 'The data'); } catch (e) {
      clearPreview();
      status('tpl-preview-status', e.message, 'error');
      return;
    }
    const version = Number($('tpl-version').value);
    preview($('tpl-preview'), (t) => fetch('/pdf/generate', {
      method: 'POST', credentials: 'same-origin', signal: state.abort.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'application/pdf, application/json' },
      body: JSON.stringify({ template: { id: t.id, version }, data }),
    }), `Version ${version} with your data`);
  });

  $('tpl-sample').addEventListener('click', () => {
    const version = Number($('tpl-version').value);
    preview($('tpl-sample'), (t) => fetch(`/api/templates/${encodeURIComponent(t.id)}/preview?version=${version}`, {
      credentials: 'same-origin', signal: state.abort.signal, headers: { Accept: 'application/pdf, application/json' },
    }), `Version ${version} with its sample data`);
  });

  $('tpl-upload-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = $('tpl-upload-name').value.trim();
    const files = $('tpl-upload-files').files;
    if (!name || !files.length) {
      status('tpl-upload-status', 'Give a name and choose the files (an .html file and its assets).', 'error');
      return;
    }
    const form = new FormData();
    form.append('name', name);
    const sample = $('tpl-upload-sample').value.trim();
    if (sample) {
      try { jsonObject(sample, 'The sample data'); } catch (e) {
        status('tpl-upload-status', e.message, 'error');
        return;
      }
      form.append('sampleData', sample);
    }
    for (const f of files) form.append('files', f, f.name);
    status('tpl-upload-status', 'Uploading…');
    const gen = state.gen;
    try {
      await busy($('tpl-upload-submit'), async () => {
        const resp = await fetch('/api/templates', { method: 'POST', body: form, credentials: 'same-origin', signal: state.abort.signal, headers: { Accept: 'application/json' } });
        if (!resp.ok) throw await errorOf(resp);
        const res = await resp.json();
        if (gen !== state.gen) return;
        const v = res.data;
        $('tpl-upload-form').reset();
        status('tpl-upload-status', `Stored “${v.name}” version ${v.version} (${bytes(v.size)}).`, 'ok');
        await loadTemplates();
        await openTemplate(v.id);
      });
    } catch (err) {
      if (gen === state.gen) fail('tpl-upload-status', err);
    }
  });

  // --- inspect a PDF ---

  function clearInspect() {
    $('inspect-result').hidden = true;
    for (const id of ['inspect-facts', 'inspect-attachments', 'inspect-signatures']) $(id).replaceChildren();
    $('inspect-json').textContent = '';
    status('inspect-status', '');
  }

  // claim is a PDF/A or PDF/UA claim as text ("PDF/A-3B"), or "none".
  function claim(prefix, c) {
    if (!c || typeof c !== 'object') return 'none';
    return prefix + String(c.part || '') + String(c.conformance || '').toUpperCase();
  }

  function showInspect(r) {
    const fonts = Array.isArray(r.fonts) ? r.fonts : [];
    const unembedded = fonts.filter((f) => !f.embedded).length;
    const facts = [
      ['Pages', String(r.pages)],
      ['PDF version', String(r.pdfVersion || '—')],
      ['PDF/A', claim('PDF/A-', r.pdfa)],
      ['PDF/UA', claim('PDF/UA-', r.pdfua)],
      ['Tagged', r.tagged ? 'yes' : 'no'],
      ['Encrypted', r.encrypted ? 'yes' : 'no'],
      ['Language', r.lang || '—'],
      ['Title', (r.metadata && r.metadata.title) || '—'],
      ['Fonts', fonts.length ? `${fonts.length} (${unembedded ? unembedded + ' not embedded' : 'all embedded'})` : 'none'],
    ];
    $('inspect-facts').replaceChildren(...facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })]));
    const atts = Array.isArray(r.attachments) ? r.attachments : [];
    $('inspect-attachments').replaceChildren(...(atts.length ? atts.map((a) =>
      el('li', { 'data-name': String(a.fileName) }, `${a.fileName} (${a.mimeType}, ${bytes(a.size)})` + (a.relationship ? `, relationship ${a.relationship}` : '')))
      : [el('li', { class: 'muted', text: 'none' })]));
    const sigs = Array.isArray(r.signatures) ? r.signatures : [];
    $('inspect-signatures').replaceChildren(...(sigs.length ? sigs.map((s) => {
      const verdict = s.valid ? (s.coversWholeDocument ? 'valid, covers the whole document' : 'valid, but the file was changed after signing') : 'NOT valid';
      return el('li', { class: s.valid && s.coversWholeDocument ? 'sig-ok' : 'sig-bad' },
        `${s.signer || 'unknown signer'}: ${verdict}` + (s.level ? `, PAdES ${s.level}` : '') +
        (s.signedAt ? `, ${when(s.signedAt)}` : '') + (s.reason ? ` (“${s.reason}”)` : ''));
    }) : [el('li', { class: 'muted', text: 'none' })]));
    $('inspect-json').textContent = JSON.stringify(r, null, 2);
    $('inspect-result').hidden = false;
  }

  $('inspect-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearInspect();
    const file = $('inspect-file').files[0];
    if (!file) {
      status('inspect-status', 'Choose a PDF first.', 'error');
      return;
    }
    const form = new FormData();
    form.append('files', file, file.name);
    status('inspect-status', 'Inspecting…');
    const gen = state.gen;
    try {
      await busy($('inspect-submit'), async () => {
        const resp = await fetch('/pdf/inspect', { method: 'POST', body: form, credentials: 'same-origin', signal: state.abort.signal });
        if (!resp.ok) throw await errorOf(resp);
        const body = await resp.json();
        if (gen !== state.gen) return;
        showInspect(body.data || {});
        status('inspect-status', '');
      });
    } catch (err) {
      if (gen === state.gen) fail('inspect-status', err);
    }
  });

  // --- hosted files ---

  async function loadHosted(page) {
    const gen = state.gen;
    try {
      const q = new URLSearchParams({ page: String(page), limit: String(hostedPerPage) });
      const res = await api('GET', '/api/hosted-pdfs/list?' + q);
      if (gen !== state.gen) return;
      const pg = res.pagination;
      if (res.data.pdfs.length === 0 && pg.page > 1 && pg.totalPages > 0) {
        // The last item of a page went (deleted, expired): show the page before.
        return loadHosted(Math.min(pg.page - 1, pg.totalPages));
      }
      state.hostedPage = pg.page;
      const rows = res.data.pdfs.map((f) => el('tr', { 'data-pdf-id': f.pdfId },
        el('td', { text: f.originalName }),
        el('td', { text: bytes(f.fileSize) }),
        el('td', { text: when(f.createdAt) }),
        el('td', { text: when(f.expiresAt) }),
        el('td', { text: String(f.downloads) }),
        el('td', { class: 'actions' },
          el('a', { href: '/pdf/view/' + encodeURIComponent(f.pdfId), target: '_blank', rel: 'noopener', text: 'Open' }),
          confirmButton('Delete', 'Really delete?', () => deleteHosted(f))),
      ));
      $('hosted-rows').replaceChildren(...rows);
      $('hosted-empty').hidden = rows.length > 0;
      $('hosted-page').textContent = pg.totalPages > 0 ? `Page ${pg.page} of ${pg.totalPages} (${pg.total} files)` : '';
      $('hosted-prev').disabled = pg.page <= 1;
      $('hosted-next').disabled = pg.page >= pg.totalPages;
      status('hosted-status', '');
    } catch (err) {
      if (gen === state.gen) fail('hosted-status', err);
    }
  }

  async function deleteHosted(f) {
    const gen = state.gen;
    try {
      await api('DELETE', '/api/hosted-pdfs/' + encodeURIComponent(f.pdfId));
      if (gen !== state.gen) return;
      status('hosted-status', `Deleted “${f.originalName}”.`, 'ok');
      await loadHosted(state.hostedPage);
      if (gen === state.gen) refreshUsage();
    } catch (err) {
      if (gen === state.gen) fail('hosted-status', err);
    }
  }

  $('hosted-prev').addEventListener('click', () => loadHosted(state.hostedPage - 1));
  $('hosted-next').addEventListener('click', () => loadHosted(state.hostedPage + 1));
  $('hosted-refresh').addEventListener('click', () => loadHosted(state.hostedPage));

  // --- follow a batch ---

  function stopStream() {
    if (state.stream) state.stream.close();
    state.stream = null;
    $('batch-stop').hidden = true;
  }

  // batchID takes an ID, or the progress or download URL that names one.
  function batchID(s) {
    s = s.trim();
    const m = /\/pdf\/(?:progress|download)\/([^/?#]+)/.exec(s);
    return m ? decodeURIComponent(m[1]) : s;
  }

  // downloadOf finds a completed batch's download link in its message: with
  // host the message is the JSON of the result (spec 4.4: downloadUrl),
  // else a text that names the URL. Only an http(s) URL is a link.
  function downloadOf(msg) {
    let res;
    try { res = JSON.parse(msg); } catch { res = undefined; }
    if (res !== null && typeof res === 'object' && !Array.isArray(res)) {
      return typeof res.downloadUrl === 'string' ? httpURL(res.downloadUrl) : null;
    }
    const m = /https?:\/\/[^\s"<>]+/.exec(msg);
    return m ? httpURL(m[0]) : null;
  }

  function showProgress(p) {
    const bar = $('batch-progress');
    bar.max = p.total > 0 ? p.total : 1;
    bar.value = p.status === 'completed' ? bar.max : Math.min(p.current || 0, bar.max);
    bar.classList.toggle('done', p.status === 'completed');
    bar.classList.toggle('failed', p.status === 'error' || p.status === 'not_found');
    const badge = $('batch-state');
    badge.textContent = p.status;
    badge.className = 'badge ' + p.status;
    $('batch-count').textContent = p.total > 0 ? `${p.current} / ${p.total} documents` : '';
    $('batch-message').textContent = p.message || '';
    const link = $('batch-link');
    const href = p.status === 'completed' ? downloadOf(p.message || '') : null;
    link.hidden = !href;
    if (href) link.href = href;
  }

  $('batch-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    stopStream();
    const id = batchID($('batch-id').value);
    if (!id) return;
    const path = '/pdf/progress/' + encodeURIComponent(id);
    const gen = state.gen;
    $('batch-view').hidden = false;
    showProgress({ total: 0, current: 0, status: 'connecting', message: '' });
    status('batch-status', '');
    // EventSource cannot send a key; the session cookie authenticates it (docs/decisions.md).
    const es = new EventSource(path + '/stream');
    state.stream = es;
    $('batch-stop').hidden = false;
    const onEvent = (final) => (e) => {
      if (state.stream !== es) return;
      let p;
      try { p = JSON.parse(e.data); } catch { return; }
      showProgress(p);
      if (final) stopStream();
    };
    es.addEventListener('progress', onEvent(false));
    es.addEventListener('complete', onEvent(true));
    es.addEventListener('error', async (e) => {
      if (state.stream !== es) return;
      if (typeof e.data === 'string') {
        // The server's own error event: the batch failed or is unknown.
        onEvent(true)(e);
        return;
      }
      if (es.readyState === EventSource.CONNECTING) {
        status('batch-status', 'Connection lost; reconnecting…');
        return;
      }
      // Refused (not signed in, not your batch, too many streams): the
      // stream's answer is not readable here, the polling route's is.
      stopStream();
      try {
        const res = await fetch(path, { credentials: 'same-origin', signal: state.abort.signal, headers: { Accept: 'application/json' } });
        if (!res.ok) throw await errorOf(res);
        const p = await res.json();
        if (gen !== state.gen) return;
        showProgress(p);
        status('batch-status', 'The live stream closed; this is the latest reading.');
      } catch (err) {
        if (gen === state.gen) fail('batch-status', err);
      }
    });
    es.addEventListener('open', () => status('batch-status', ''));
  });
  $('batch-stop').addEventListener('click', stopStream);

  // --- start ---

  (async () => {
    try {
      const res = await api('GET', '/api/auth/me');
      signedIn(res.data.user);
    } catch (err) {
      signedOut(err instanceof APIError && err.status === 401 ? '' : err.message);
    }
  })();
})();
