// The host's own dialogs in a runner tab: the owner's confirm of a
// mutating net request or of a URL to open, and the connect flow. They are
// drawn in this page, over the app's frame; the app (a sandboxed frame of
// another origin) can neither draw over them nor reach them, and a button
// answers only a trusted click, after a short arming delay so that a click
// the app lured the user into cannot land on it.
//
// Everything shown comes from the broker; app- and agent-written text
// (names, steps, templates) is set as text, never as markup, and shown
// verbatim and untruncated.

export const ARM_MS = 700;
const QUESTION_MS = 110_000; // a little under the broker's wait

// el makes an element with text.
export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// checkOpenURL is the page's own check before it opens anything: https, a
// host, no userinfo (the broker checked the frame already).
export function checkOpenURL(s) {
  let u;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  return u.protocol === 'https:' && u.hostname !== '' && u.username === '' && u.password === '';
}

// injection says, in words, where a requirement's credential goes.
export function injection(req) {
  const lines = [];
  const t = req.request ?? {};
  for (const [k, v] of Object.entries(t.headerTemplate ?? {})) lines.push(`header ${k}: ${v}`);
  for (const [k, v] of Object.entries(t.queryTemplate ?? {})) lines.push(`query parameter ${k}=${v}`);
  if (lines.length > 0) return lines;
  const f = (i) => `{{${req.fields?.[i]?.key ?? '?'}}}`;
  switch (req.kind) {
    case 'none': return ['no credential is sent'];
    case 'api_key': return [`header X-Api-Key: ${f(0)}`];
    case 'basic_auth': return [`header Authorization: Basic base64(${f(0)}:${f(1)})`];
    case 'oauth2_client_creds':
    case 'oauth2_auth_code': return ['header Authorization: Bearer <the access token the provider issues>'];
  }
  return [`header Authorization: Bearer ${f(0)}`];
}

const PROVENANCE = {
  user: 'you, or a program holding your broker token (broker app connections)',
  inference: 'an agent (its guess, not an authority)',
  user_docs: 'an agent, from documentation you gave',
  starter: 'the installed starter app',
  registry: 'the provider registry',
  shared: 'a shared app bundle',
};

const SIGN_IN = {
  pending: 'sign-in not finished',
  connected: 'signed in',
  expired: 'signed out: the sign-in expired, sign in again',
  error: 'the last sign-in failed',
};

const STATUS = {
  declared: 'not connected',
  approved: 'connected',
  revoked: 'revoked',
};

export function createDialogs({ $, port, appName }) {
  const dialog = $('dialog');
  const queue = []; // questions waiting to be shown, FIFO
  let showing = null;
  let calls = 0;
  const pending = new Map(); // call id -> resolve

  // armed makes a button answer only a trusted click, once armed.
  function armed(b, onClick) {
    b.disabled = true;
    setTimeout(() => { b.disabled = false; }, ARM_MS);
    b.addEventListener('click', (e) => {
      if (e.isTrusted && !b.disabled) onClick();
    });
    return b;
  }

  function show(title, body, buttons) {
    $('dialog-title').textContent = title;
    $('dialog-body').replaceChildren(...body);
    $('dialog-buttons').replaceChildren(...buttons);
    dialog.hidden = false;
  }

  function hide() {
    dialog.hidden = true;
    $('dialog-body').replaceChildren();
    $('dialog-buttons').replaceChildren();
  }

  function dl(pairs) {
    const d = el('dl');
    for (const [k, v, cls] of pairs) {
      if (v === undefined || v === null || v === '') continue;
      d.append(el('dt', k), el('dd', v, cls));
    }
    return d;
  }

  // Questions from the broker.

  function question(msg) {
    queue.push({ ...msg, expires: setTimeout(() => settle(msg.id, null), QUESTION_MS) });
    next();
  }

  function settle(id, result) {
    const i = queue.findIndex((q) => q.id === id);
    if (i >= 0) {
      clearTimeout(queue[i].expires);
      queue.splice(i, 1);
    }
    port.postMessage({ type: 'confirmed', id, result: result ?? {} });
    if (showing?.id === id) {
      showing = null;
      hide();
      next();
    }
  }

  function next() {
    if (showing || queue.length === 0) return; // a question goes over the connect flow
    showing = queue[0];
    const q = showing.ask;
    if (q.kind === 'openUrl') {
      const open = el('button', 'Open', 'primary');
      open.id = 'open-confirm';
      const cancel = el('button', 'Cancel');
      cancel.id = 'open-cancel';
      cancel.addEventListener('click', () => settle(showing.id, { status: 'declined' }));
      armed(open, async () => {
        const id = showing.id;
        if (!checkOpenURL(q.url)) return settle(id, { status: 'declined' });
        // Opened on the user's click, in a tab of the user's browser; the
        // app's sandbox gains nothing.
        try {
          await chrome.tabs.create({ url: q.url, active: true });
          settle(id, { status: 'opened' });
        } catch {
          settle(id, { status: 'declined' });
        }
      });
      show('Open this page?', [
        el('p', `“${q.app}” asks to open this page in a new tab:`),
        el('pre', q.url, 'url'),
        el('p', 'Check the address before you open it. The app learns only whether it was opened.', 'note'),
      ], [cancel, open]);
      return;
    }
    const allow = el('button', 'Allow', 'primary');
    allow.id = 'confirm-allow';
    const deny = el('button', 'Deny');
    deny.id = 'confirm-deny';
    deny.addEventListener('click', () => settle(showing.id, { allowed: false }));
    armed(allow, () => settle(showing.id, { allowed: true }));
    const body = [
      el('p', `“${q.app}” wants to send a ${q.method} request to ${q.host}, with your credential for it.`),
      dl([['Method', q.method], ['Host', q.host], ['URL', q.url, 'url'], ['Connection', q.slot]]),
    ];
    if (q.body !== undefined) body.push(el('h3', 'Body'), el('pre', q.body));
    body.push(el('p', 'Requests that change data always ask. Deny if you did not expect this.', 'note'));
    show(`Allow this ${q.method} request?`, body, [deny, allow]);
  }

  // The connect flow.

  function call(method, params) {
    const id = String(++calls);
    return new Promise((resolve, reject) => {
      pending.set(id, (m) => (m.ok ? resolve(m.value) : reject(new Error(m.code))));
      port.postMessage({ type: 'call', id, method, params });
    });
  }

  function result(msg) {
    const done = pending.get(msg.id);
    pending.delete(msg.id);
    done?.(msg);
  }

  async function connections(note) {
    if (showing) return; // a question is on screen: it comes first
    let list;
    try {
      list = await call('snug.connections', {});
    } catch (e) {
      list = e;
    }
    if (showing) return; // a question came meanwhile: it stays on screen
    if (list instanceof Error) return show('Connections', [el('p', `The broker could not list them (${list.message}).`, 'error')], [closeButton()]);
    const body = [];
    if (note) body.push(el('p', note, 'note'));
    if (list.length === 0) body.push(el('p', 'This app has no connections. A connection is proposed by you or by an agent (never by the app itself), and you approve it here.'));
    for (const c of list) {
      const card = el('div', undefined, 'card');
      const what = el('div', undefined, 'what');
      what.append(el('strong', c.provider || c.slot), el('span', ` (${c.slot}) `));
      const status = c.needsReapproval ? 'change waiting for your approval' : c.imported ? 'imported: review it again' : STATUS[c.status];
      what.append(el('span', status, `status ${c.status}`));
      if (c.status === 'approved') what.append(el('div', `Hosts: ${c.allowedHosts.join(', ')}`));
      if (c.status === 'approved' && c.kind === 'oauth2_auth_code') {
        what.append(el('div', SIGN_IN[c.signIn] ?? 'not signed in yet'));
        if (c.signInError) what.append(el('div', `The provider said: ${c.signInError}`, 'error'));
      }
      if (c.status === 'revoked') what.append(el('div', `Revoked ${c.revokedAt}. It stays revoked; a new proposal is refused.`));
      card.append(what);
      if (c.status === 'declared') {
        const b = el('button', 'Review and connect');
        b.id = `connect-${c.slot}`;
        b.addEventListener('click', () => review(c, false));
        card.append(b);
      }
      if (c.needsReapproval) {
        const b = el('button', 'Review the change');
        b.id = `reapprove-${c.slot}`;
        b.addEventListener('click', () => review(c, true));
        card.append(b);
      }
      if (c.status === 'approved' && c.kind === 'oauth2_auth_code') {
        const b = el('button', c.signIn === 'connected' ? 'Sign in again' : 'Sign in');
        b.id = `signin-${c.slot}`;
        armed(b, () => signIn(c));
        card.append(b);
      }
      if (c.status === 'approved') {
        const b = el('button', 'Revoke');
        b.id = `revoke-${c.slot}`;
        armed(b, async () => {
          try {
            await call('snug.connection.revoke', { slot: c.slot });
            connections(`${c.provider} was revoked: its credential is deleted.`);
          } catch (e) {
            connections(`Revoking failed (${e.message}).`);
          }
        });
        card.append(b);
      }
      body.push(card);
    }
    show('Connections', body, [closeButton()]);
  }

  // signIn runs an OAuth authorization-code sign-in: the broker makes the
  // provider's authorize URL (PKCE, a signed state), the user signs in in
  // a window of their browser (chrome.identity), and the broker exchanges
  // the code it came back with. The app takes no part.
  async function signIn(c) {
    let note;
    try {
      const { url } = await call('snug.connection.authorize', { slot: c.slot, redirectUri: chrome.identity.getRedirectURL() });
      const back = await chrome.identity.launchWebAuthFlow({ url, interactive: true });
      await call('snug.connection.complete', { slot: c.slot, callback: back });
      note = `${c.provider || c.slot}: signed in.`;
    } catch (e) {
      note = `Signing in to ${c.provider || c.slot} did not finish (${e.message}).`;
    }
    connections(note);
  }

  function closeButton() {
    const b = el('button', 'Close');
    b.id = 'dialog-close';
    b.addEventListener('click', () => { hide(); next(); });
    return b;
  }

  // review shows a requirement verbatim and untruncated — who proposed it,
  // the provider, the walkthrough, where the credential goes, the full host
  // list and what approving freezes — with the fields to type the
  // credential into. For a staged change: the field-by-field diff.
  function review(c, reapprove) {
    const req = reapprove ? c.pending : c.requirement;
    const hosts = reapprove ? c.pendingHosts : c.ceiling;
    const body = [el('p', `Proposed by ${PROVENANCE[c.provenance] ?? c.provenance}. Check every line: approving lets “${appName()}” use your credential with the hosts below, without ever seeing it.`)];
    for (const r of c.priorRevocations ?? []) {
      body.push(el('p', `You revoked a connection to ${r.provider} (${r.slot}) on ${r.revokedAt}. This is a new proposal for the same provider or hosts.`, 'note'));
    }
    if (reapprove) {
      body.push(el('h3', 'What changed'));
      const table = el('table');
      table.append(row('th', ['Field', 'Before', 'After']));
      for (const d of c.diff ?? []) table.append(row('td', [d.path, d.old ?? '', d.new ?? '']));
      body.push(table);
    }
    body.push(dl([
      ['Provider', req.provider?.name], ['Homepage', req.provider?.homepageUrl, 'url'], ['Documentation', req.provider?.docsUrl, 'url'],
      ['Kind', req.kind], ['Connection', req.slot],
    ]));
    if (req.registration) {
      body.push(el('h3', 'Where to get the credential'));
      if (req.registration.consoleUrl) body.push(el('p', req.registration.consoleUrl, 'url'));
      const ol = el('ol');
      for (const step of req.registration.instructions ?? []) ol.append(el('li', step));
      body.push(ol);
    }
    const inputs = {};
    if (req.fields?.length) {
      body.push(el('h3', reapprove ? 'Credential (leave a field empty to keep what is stored)' : 'Credential'));
      for (const f of req.fields) {
        const wrap = el('label', undefined, 'field');
        const required = f.required !== false && !(reapprove && c.credentials?.[f.key]);
        wrap.append(el('span', f.label + (required ? '' : ' (optional)')));
        const input = document.createElement('input');
        input.id = `field-${f.key}`;
        input.type = f.type === 'secret' || f.type === 'password' ? 'password' : f.type === 'url' ? 'url' : 'text';
        input.autocomplete = 'off';
        if (f.placeholder) input.placeholder = f.placeholder;
        inputs[f.key] = input;
        wrap.append(input);
        if (f.description) wrap.append(el('small', f.description));
        body.push(wrap);
      }
    }
    body.push(el('h3', 'How it is sent'));
    for (const line of injection(req)) body.push(el('pre', line));
    if (req.scopes?.length) body.push(el('h3', 'Scopes'), el('pre', req.scopes.join('\n')));
    if (req.endpoints) body.push(el('h3', 'Sign-in endpoints'), el('pre', Object.entries(req.endpoints).map(([k, v]) => `${k}: ${v}`).join('\n')));
    if (req.authorizeParams) body.push(el('h3', 'Sign-in parameters'), el('pre', Object.entries(req.authorizeParams).map(([k, v]) => `${k}=${v}`).join('\n')));
    if (req.kind?.startsWith('oauth2_')) body.push(el('p', req.pkce === false ? 'Sign-in without PKCE.' : 'Sign-in with PKCE (S256).'));
    if (req.testRequest) body.push(el('h3', 'Test request'), el('pre', `${req.testRequest.method} ${req.testRequest.pathAndQuery}`));
    if (req.lanHost) body.push(el('h3', 'Device on your network'), el('pre', `${req.lanHost.label} (${req.lanHost.class}): its address is collected later`));
    body.push(el('h3', `Hosts (${hosts.length})`), el('pre', hosts.join('\n') || '(none yet)'));
    body.push(el('p', 'Approving freezes this list of hosts: the app can use this credential with them and no other. ' +
      'Any change to this connection waits for your approval again, and requests that change data still ask each time.', 'note'));
    const details = el('details');
    details.append(el('summary', 'The requirement, exactly as proposed'), el('pre', JSON.stringify(req, null, 2)));
    body.push(details);
    const error = el('p', '', 'error');
    body.push(error);

    const approve = el('button', reapprove ? 'Approve the change' : 'Approve and connect', 'primary');
    approve.id = 'approve';
    armed(approve, async () => {
      const credentials = {};
      for (const [k, input] of Object.entries(inputs)) if (input.value !== '') credentials[k] = input.value;
      try {
        await call(reapprove ? 'snug.connection.reapprove' : 'snug.connection.approve',
          { slot: c.slot, reviewed: reapprove ? c.pendingText : c.requirementText, credentials });
        for (const input of Object.values(inputs)) input.value = '';
        if (req.kind === 'oauth2_auth_code') return signIn(c);
        connections(`${req.provider?.name} is connected.`);
      } catch (e) {
        error.textContent = e.message === 'INVALID_REQUEST' ? 'Fill in every required field.' :
          e.message === 'POLICY_DENIED' ? 'The connection changed meanwhile: review it again.' : `The broker refused (${e.message}).`;
      }
    });
    const back = el('button', 'Back');
    back.addEventListener('click', () => connections());
    const buttons = [back];
    if (reapprove) {
      const keep = el('button', 'Keep the current one');
      keep.id = 'keep-current';
      armed(keep, async () => {
        try {
          await call('snug.connection.approve', { slot: c.slot, reviewed: c.requirementText });
          connections('The change was discarded.');
        } catch (e) {
          error.textContent = `The broker refused (${e.message}).`;
        }
      });
      buttons.push(keep);
    }
    buttons.push(approve);
    show(reapprove ? `Approve the change to ${req.provider?.name}?` : `Connect to ${req.provider?.name}?`, body, buttons);
  }

  function row(cell, texts) {
    const tr = el('tr');
    for (const t of texts) tr.append(el(cell, t));
    return tr;
  }

  return { question, result, connections };
}
