// console.html: the owner's console. It talks to the service worker over a
// port (lib/owner.js): it asks for the state and the activity log, answers
// questions and presses Stop, and is told when anything changes; then it
// asks again. Everything shown is written with textContent.
import { admissionWords, describeAction, describeResult, duration, left, mayDo, tabNumber, LEASE_MINUTES } from './lib/words.js';

const $ = (id) => document.getElementById(id);
const el = (tag, { dataset, ...props } = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  Object.assign(e.dataset, dataset);
  e.append(...children.filter((c) => c !== undefined && c !== null));
  return e;
};
const clock = (ms) => new Date(ms).toLocaleTimeString();

// --- the port to the worker, reconnected when the worker restarts ---

let port;
let seq = 0;
const waiting = new Map();

function connect() {
  port = chrome.runtime.connect({ name: 'console' });
  port.onMessage.addListener((msg) => {
    if (msg.type === 'changed') return changed(msg.topics ?? []);
    const w = waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id);
    if (msg.ok) w.resolve(msg.value);
    else w.reject(Object.assign(new Error(msg.code), { code: msg.code }));
  });
  port.onDisconnect.addListener(() => {
    for (const w of waiting.values()) w.reject(Object.assign(new Error('CONNECTION_LOST'), { code: 'CONNECTION_LOST' }));
    waiting.clear();
    setTimeout(() => { connect(); changed(['connection']); }, 500);
  });
}

function ask(msg) {
  const id = ++seq;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    try {
      port.postMessage({ ...msg, id });
    } catch (e) {
      waiting.delete(id);
      reject(e);
    }
  });
}

// --- what changed: ask again (coalesced) ---

let stateDue = null;
let logDue = null;
function changed(topics) {
  const whole = topics.includes('connection');
  if (whole || topics.some((t) => ['clients', 'grants', 'questions', 'consents'].includes(t))) {
    stateDue ??= setTimeout(() => { stateDue = null; refreshState(); }, 30);
  }
  if (whole || topics.includes('log')) {
    logDue ??= setTimeout(() => { logDue = null; refreshLog(whole); }, 30);
  }
}

// --- focus survives a re-render: the element with the same key gets it back ---

function keepFocus(render) {
  const key = document.activeElement?.dataset?.key;
  render();
  if (key) document.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

function announce(text) {
  $('announce').textContent = text;
}

// --- state: connection, mode, questions, agents ---

let last = { questions: new Set(), agents: new Map() };

async function refreshState() {
  let s;
  try {
    s = await ask({ type: 'state' });
  } catch {
    return; // the port is reconnecting; a change follows
  }
  renderConnection(s);
  renderMode(s.owner);
  tabTitles = s.tabs ?? {};
  renderLog();
  keepFocus(() => {
    renderQuestions(s.questions);
    renderConsents(s.consents ?? []);
    renderAgents(s.owner?.clients ?? [], s.tabs, s.owner?.services?.browser);
  });
  // Tell a screen reader what arrived or left.
  const qs = new Set(s.questions.map((q) => q.req));
  const fresh = s.questions.filter((q) => !last.questions.has(q.req));
  const agents = new Map((s.owner?.clients ?? []).map((c) => [c.conn, c.label]));
  const came = [...agents].filter(([conn]) => !last.agents.has(conn)).map(([, l]) => `${l} connected.`);
  const went = [...last.agents].filter(([conn]) => !agents.has(conn)).map(([, l]) => `${l} left.`);
  const news = [...fresh.map((q) => `New question: ${questionText(q)}`), ...came, ...went];
  if (news.length) announce(news.join(' '));
  last = { questions: qs, agents };
  filterOptions();
}

function renderConnection(s) {
  const c = $('connection');
  let text = 'Connected to the broker.';
  let bad = true;
  if (s.connection === 'Disconnected' || s.connection === 'Connecting') {
    text = 'Not connected to the broker. Start it (systemctl --user start broker.service, or broker serve); this page updates when it connects.';
  } else if (s.code === 'POLICY_DENIED') {
    text = 'Connected, but the broker does not count this browser as yours (it was not started through the installed native host), so it shows nothing here.';
  } else if (s.code) {
    text = `Connected, but the broker did not answer (${s.code}).`;
  } else {
    bad = false;
  }
  c.textContent = text;
  c.classList.toggle('bad', bad);
}

function renderMode(owner) {
  const dl = $('mode');
  dl.replaceChildren();
  if (!owner) return;
  const add = (k, v) => dl.append(el('dt', { textContent: k }), el('dd', { textContent: v }));
  const b = owner.services?.browser ?? {};
  add('Access', b.accessMode === 'personal'
    ? 'Personal: agents may control any web tab without asking you (broker serve --access-mode=personal).'
    : `Restricted: an agent asks you before it controls a tab, and then only on that tab’s exact origin, for up to ${LEASE_MINUTES} minutes at a time.`);
  if (b.allowOrigins?.length) add('Allowed origins', `Only these may be asked for: ${b.allowOrigins.join(', ')}`);
  add('Admission', owner.admission === 'prompt'
    ? 'Prompt: you admit each program that connects (it waits until you answer).'
    : 'Open: any program of yours that can read the broker’s token may connect.');
  add('Browsers', `${b.instances?.length ?? 0} connected`);
  const j = owner.journal;
  add('Action journal', !j ? 'none (state kept in memory)' : j.problem ? `UNAVAILABLE: ${j.problem} — ${j.fix}` : `${j.path} (${j.uncertain} uncertain)`);
  const l = owner.log;
  add('Activity log', !l ? 'none (no state directory)' : l.problem ? `UNAVAILABLE: ${l.problem.reason} — ${l.problem.fix}. Actions are shown for this run only.` :
    `${l.path}, ${l.entries} actions kept${l.movedAside ? ` (a damaged log was moved to ${l.movedAside})` : ''}`);
  add('Broker', owner.version);
}

function questionText(q) {
  if (q.kind === 'admission') return `${q.client} (connection #${q.connection}) wants to use this browser through the broker.`;
  return `${q.client} wants to control the tab “${q.title}” on ${q.origin}: ${mayDo('origin', q.origin)}, for up to ${LEASE_MINUTES} minutes.`;
}

function renderQuestions(questions) {
  const list = $('questions');
  list.dataset.empty = 'Nothing is waiting for you.';
  $('questions-count').textContent = questions.length ? `(${questions.length})` : '';
  list.replaceChildren(...questions.map((q) => {
    const textId = `q-${q.req}`;
    const answer = (allow) => async () => {
      await ask({ type: 'answer', req: q.req, allow }).catch(() => {});
      announce(`${allow ? 'Allowed' : 'Denied'}: ${q.client}.`);
    };
    const button = (allow) => el('button', {
      type: 'button', textContent: allow ? 'Allow' : 'Deny', className: allow ? 'allow' : 'deny',
      onclick: answer(allow),
    });
    const deny = button(false);
    const allow = button(true);
    for (const [b, verb] of [[deny, 'Deny'], [allow, 'Allow']]) {
      b.setAttribute('aria-label', `${verb} ${q.client}`);
      b.setAttribute('aria-describedby', textId);
      b.dataset.key = `${verb}-${q.req}`;
    }
    return el('li', { className: 'question' },
      el('h3', { textContent: q.kind === 'admission' ? 'A program asks to connect' : 'An agent asks to control a tab' }),
      el('p', { id: textId, textContent: questionText(q) }),
      countdown('p', 'hint left', q.deadline, 'answer'),
      el('div', { className: 'buttons' }, deny, allow));
  }));
}

function renderConsents(consents) {
  const list = $('consents');
  list.dataset.empty = 'No tab is allowed beforehand: every claim asks you.';
  $('consents-count').textContent = consents.length ? `(${consents.length})` : '';
  list.replaceChildren(...consents.map((c) => {
    const forget = el('button', { type: 'button', className: 'deny', textContent: 'Forget' });
    forget.setAttribute('aria-label', `Forget tab ${c.tabId}${c.title ? ` “${c.title}”` : ''} on ${c.origin}`);
    forget.dataset.key = `forget-${c.tabId}`;
    forget.onclick = async () => {
      const r = await ask({ type: 'forget', tabId: c.tabId }).catch(() => ({ forgotten: false }));
      announce(r.forgotten ? `Forgotten: the next claim of tab ${c.tabId} asks you.` : 'It was already forgotten.');
    };
    return el('li', { dataset: { tab: c.tabId } },
      el('p', {}, `Tab ${c.tabId}${c.title ? ` “${c.title}”` : ''} on `, el('span', { className: 'origin', textContent: c.origin }),
        `: a claim on exactly this site is granted without asking, for up to ${LEASE_MINUTES} minutes at a time.`),
      el('div', { className: 'buttons' }, forget));
  }));
}

function renderAgents(clients, tabs, browserStatus) {
  const list = $('agents');
  list.dataset.empty = 'No agent is connected.';
  $('agents-count').textContent = clients.length ? `(${clients.length})` : '';
  const personal = browserStatus?.accessMode === 'personal';
  list.replaceChildren(...clients.map((c) => {
    const since = `Connected at ${clock(Date.parse(c.connectedAt))}`;
    const admitted = c.admittedAt ? `, ${admissionWords(c)} at ${clock(Date.parse(c.admittedAt))}` : `, ${admissionWords(c)}`;
    const grants = c.grants.length === 0
      ? el('p', { className: 'hint', textContent: 'It holds no tab: it cannot see or touch any page.' })
      : el('ul', { className: 'grants' }, ...c.grants.map((g) => {
        const title = tabs?.[g.tab]?.title;
        const expires = Date.parse(g.expiresAt);
        return el('li', {},
          `Tab ${tabNumber(g.tab)}${title ? ` “${title}”` : ''} on `, el('span', { className: 'origin', textContent: g.origin }),
          `${g.scope === 'origin' ? ' (exactly this origin)' : ''}: may ${mayDo(g.scope, g.origin)}. `,
          countdown('span', 'left', expires, 'lease'));
      }));
    const stop = el('button', { type: 'button', className: 'stop', textContent: 'Stop' });
    stop.setAttribute('aria-label', `Stop ${c.label}, connection #${c.conn}`);
    stop.dataset.key = `stop-${c.conn}`;
    stop.onclick = async () => {
      const r = await ask({ type: 'stop', conn: c.conn }).catch(() => ({ stopped: 0 }));
      announce(`Stopped ${c.label}: ${r.stopped} lease${r.stopped === 1 ? '' : 's'} ended.`);
    };
    return el('li', { dataset: { conn: c.conn } },
      el('h3', { textContent: `${c.label} · connection #${c.conn}` }),
      el('p', { className: 'hint', textContent: `${since}${admitted}. ${personal ? 'Personal mode: its claims are not asked.' : ''}` }),
      grants,
      el('div', { className: 'buttons' }, stop));
  }));
}

$('stop-all').addEventListener('click', async () => {
  const r = await ask({ type: 'stop' }).catch(() => ({ stopped: 0 }));
  announce(`Stopped every agent: ${r.stopped} lease${r.stopped === 1 ? '' : 's'} ended.`);
});

// countdown is an element saying how long until deadline: a question's
// time to answer, or a lease's time left. It is rendered locally each
// second; nothing is asked.
function countdown(tag, className, deadline, kind) {
  const e = el(tag, { className, dataset: { deadline, kind } });
  tick(e);
  return e;
}

function tick(e) {
  const d = Number(e.dataset.deadline);
  const now = Date.now();
  e.textContent = e.dataset.kind === 'answer'
    ? (d > now ? `Answer within ${duration(d - now)}, or it is denied.` : 'Time is up: it is denied.')
    : `${left(d, now)} (until ${clock(d)}).`;
}

setInterval(() => document.querySelectorAll('[data-deadline]').forEach(tick), 1000);

// --- the activity log ---

const log = { epoch: null, rev: 0, rows: new Map(), more: false, agents: new Map(), tabs: new Map() };
let tabTitles = {}; // open tabs by handle: {title, url}, from the worker

function query() {
  return { agent: $('filter-agent').value, tab: $('filter-tab').value };
}

async function refreshLog(whole) {
  let page;
  try {
    page = await ask({ type: 'log', query: whole || !log.epoch ? { ...query(), limit: 100 } : { ...query(), since: log.rev, limit: 500 } });
  } catch {
    return;
  }
  if (whole || page.epoch !== log.epoch) {
    if (!whole && log.epoch) return refreshLog(true); // the broker restarted
    log.rows.clear();
    log.more = page.more;
  }
  log.epoch = page.epoch;
  log.rev = page.rev;
  for (const e of page.entries) log.rows.set(e.id, e);
  renderLog();
}

async function older() {
  const ids = [...log.rows.keys()];
  if (!ids.length) return;
  const page = await ask({ type: 'log', query: { ...query(), before: Math.min(...ids), limit: 100 } }).catch(() => null);
  if (!page) return;
  for (const e of page.entries) log.rows.set(e.id, e);
  log.more = page.more;
  renderLog();
}

function renderLog() {
  const entries = [...log.rows.values()].sort((a, b) => b.id - a.id);
  for (const e of entries) {
    log.agents.set(e.agent, e.agent);
    log.tabs.set(e.tab, `${where(e.tab)}${e.origin}`);
  }
  $('log-rows').replaceChildren(...entries.map((e) => {
    const t = Date.parse(e.time);
    const cls = e.state === 'interrupted' ? 'interrupted' : e.outcome === 'failed' ? 'failed' : '';
    return el('tr', { dataset: { id: e.id } },
      el('td', { className: 'time', textContent: clock(t), title: new Date(t).toLocaleString() }),
      el('td', { textContent: e.agent }),
      el('td', {}, where(e.tab), el('span', { className: 'origin', textContent: e.origin })),
      el('td', { textContent: describeAction(e) }),
      el('td', { className: cls, textContent: describeResult(e) }));
  }));
  $('log-empty').hidden = entries.length > 0;
  $('older').hidden = !log.more;
  filterOptions();
}

// where names a tab: its title while it is open, else its number.
function where(handle) {
  const title = tabTitles[handle]?.title;
  return title ? `“${title}” · ` : `tab ${tabNumber(handle)} · `;
}

// filterOptions lists every agent and tab seen, keeping the selection.
function filterOptions() {
  for (const [id, values] of [['filter-agent', log.agents], ['filter-tab', log.tabs]]) {
    const select = $(id);
    const have = new Set([...select.options].map((o) => o.value));
    for (const [value, label] of values) {
      if (!have.has(value)) select.append(el('option', { value, textContent: label }));
    }
  }
  for (const label of last.agents.values()) {
    if (![...$('filter-agent').options].some((o) => o.value === label)) $('filter-agent').append(el('option', { value: label, textContent: label }));
  }
}

$('filter-agent').addEventListener('change', () => refreshLog(true));
$('filter-tab').addEventListener('change', () => refreshLog(true));
$('older').addEventListener('click', older);

connect();
refreshState();
refreshLog(true);
