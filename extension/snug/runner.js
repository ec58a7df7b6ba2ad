// The runner page: host chrome, and one app in a sandboxed iframe
// (sandbox="allow-scripts" only; frame.html carries the sandbox CSP). It
// routes the iframe's messages by event.source (R4) and relays them to the
// service worker, which relays them to the broker's hub; frames from the
// hub go to the iframe with targetOrigin '*' (the app's origin is opaque).
// It parses no frame: the hub does. Its own dialogs (dialogs.js) put the
// owner's questions and the connect flow over the app's frame.
import { SNUG } from '../lib/snug.js';
import { createDialogs } from './dialogs.js';

const app = new URLSearchParams(location.search).get('app') ?? '';
const $ = (id) => document.getElementById(id);
const stage = $('stage');

let port = null;
let iframe = null;
let armed = false; // frame.html loaded: its "ready" may be answered
let html = null; // the app's current document
let installed = null; // the app as installed (apps.App)

function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = !text;
}

// mount shows the app in a fresh iframe: a fresh document, a fresh
// instanceId once it loads.
function mount() {
  iframe?.remove();
  armed = false;
  iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.title = 'app';
  iframe.addEventListener('load', () => {
    armed = true;
  });
  iframe.src = 'frame.html';
  stage.append(iframe);
}

function unmount() {
  iframe?.remove();
  iframe = null;
}

const colorPattern = /^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{1,20})$/;

function showDisplay(d) {
  $('name').textContent = d.displayName;
  document.title = d.displayName;
  $('icon').textContent = d.iconEmoji || '▢';
  // Only a plain color: an app's iconColor never becomes a URL the page loads.
  $('icon').style.backgroundColor = colorPattern.test(d.iconColor ?? '') ? d.iconColor : '';
  $('version').textContent = `v${d.version}`;
  const agent = $('agent');
  agent.classList.toggle('blocked', d.agentBlocked);
  agent.textContent = d.agentBlocked ? 'agent paused: 3 unreadable replies' : d.agent ? 'agent ready' : 'no agent';
  $('reset-agent').disabled = !d.agentBlocked;
  const name = installed?.displayName ?? d.displayName;
  $('about').textContent = `Installed as “${name}” · version ${d.version} · id ${d.id}` +
    (d.announced ? ' · the name above is the app’s own' : '');
}

function fromWorker(msg) {
  switch (msg?.type) {
    case 'attached':
      installed = msg.app;
      notice('');
      return;
    case 'html':
      html = msg.html;
      return mount();
    case 'frame':
      // Parsed once more only to post it as an object, as apps expect.
      if (iframe) iframe.contentWindow.postMessage(JSON.parse(msg.text), '*');
      return;
    case 'app':
      return showDisplay(msg.display);
    case 'status':
      if (!msg.connected) notice('Not connected to the DSH broker. The app comes back when the broker is running again.');
      return;
    case 'error':
      return notice(msg.code === 'STALE_TARGET' ? 'This app is not installed.' : `The broker refused to open this app (${msg.code}).`);
    case 'closed':
      unmount();
      return notice(msg.reason);
    case 'dropped':
      return notice(`The app sent a message of ${msg.bytes} bytes, more than the host carries (${SNUG.MAX_RELAY_BYTES}); it was dropped.`);
    case 'confirm':
      return dialogs.question(msg);
    case 'result':
      return dialogs.result(msg);
    case 'chat':
      return showChatItem(msg.item);
  }
}

// The chat panel. Messages go to the hub, which answers with items
// (Go: apps.ChatItem). What an item holds came from the agent or the app's
// data: it is shown as text only, never as markup.
const chatLog = $('chat-log');
let chatN = 0;
const working = new Map(); // message or decision -> its "working" line
const decisions = new Map(); // proposal id -> its Approve/Decline buttons

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function addLine(cls, text) {
  const li = el('li', text, cls);
  chatLog.append(li);
  li.scrollIntoView({ block: 'end' });
  return li;
}

function done(key) {
  working.get(key)?.remove();
  working.delete(key);
}

function sendChat(text) {
  const id = `m${++chatN}`;
  addLine('user', text);
  working.set(id, addLine('working', 'Working…'));
  port.postMessage({ type: 'chat', op: 'send', id, text });
}

function decide(op, id) {
  decisions.get(id)?.querySelectorAll('button').forEach((b) => { b.disabled = true; });
  working.set(`p:${id}`, addLine('working', op === 'approve' ? 'Running the approved change…' : 'Declining…'));
  port.postMessage({ type: 'chat', op, proposal: id });
}

function table(head, rows) {
  const t = el('table');
  const tr = el('tr');
  for (const h of head) tr.append(el('th', h));
  t.append(tr);
  for (const row of rows) t.append(row);
  return t;
}

function resultTable(columns, rows) {
  return table(columns, rows.map((r) => {
    const tr = el('tr');
    for (const c of r) tr.append(el('td', c === null ? 'NULL' : String(c)));
    return tr;
  }));
}

// changesTable shows the rows a change touches: an update as its row
// before and after, the values that change marked.
function changesTable(changes) {
  const wrap = el('div');
  for (const c of changes) {
    const rows = [];
    const line = (label, values, other) => {
      const tr = el('tr');
      tr.append(el('td', label));
      values.forEach((v, i) => tr.append(el('td', v, other && other[i] !== v ? 'changed' : undefined)));
      rows.push(tr);
    };
    if (c.before) line(c.op === 'update' ? 'before' : c.op, c.before, c.after);
    if (c.after) line(c.op === 'update' ? 'after' : c.op, c.after, c.before);
    wrap.append(el('div', `${c.op} in ${c.table}`, 'note'), table(['', ...c.columns], rows));
  }
  return wrap;
}

function showChatItem(it) {
  if (!it || typeof it.kind !== 'string') return;
  if (it.replyTo) done(it.replyTo);
  if (it.proposal?.id && it.kind !== 'proposal') {
    done(`p:${it.proposal.id}`);
    decisions.get(it.proposal.id)?.remove();
    decisions.delete(it.proposal.id);
  }
  const li = addLine(it.kind);
  li.append(el('div', it.text ?? '', 'text'));
  if (it.sql?.length) li.append(el('pre', it.sql.join(';\n'), 'sql'));
  if (it.result) {
    li.append(resultTable(it.result.columns, it.result.rows));
    if (it.result.truncated) li.append(el('div', `Truncated: ${it.result.truncated}`, 'note'));
  }
  if (it.proposal?.changes?.length) {
    li.append(changesTable(it.proposal.changes));
    const more = it.proposal.total - it.proposal.changes.length;
    if (more > 0) li.append(el('div', `… and ${more} more rows`, 'note'));
  }
  const actions = el('div', undefined, 'actions');
  if (it.kind === 'proposal' && it.proposal?.id) {
    const id = it.proposal.id;
    const approve = el('button', 'Approve', 'approve');
    const decline = el('button', 'Decline', 'decline');
    approve.addEventListener('click', () => decide('approve', id));
    decline.addEventListener('click', () => decide('decline', id));
    actions.append(approve, decline);
    decisions.set(id, actions);
  }
  if (it.kind === 'version' && it.version?.restores) {
    const v = it.version.restores;
    const revert = el('button', `Revert to version ${v}`, 'revert');
    revert.addEventListener('click', () => {
      revert.disabled = true;
      working.set('revert', addLine('working', `Restoring version ${v}…`));
      port.postMessage({ type: 'chat', op: 'revert', version: v });
    });
    actions.append(revert);
  }
  if (it.kind === 'reverted' || (it.kind === 'error' && working.has('revert') && !it.replyTo && !it.proposal)) done('revert');
  if (actions.childElementCount) li.append(actions);
  li.scrollIntoView({ block: 'end' });
}

$('chat-button').addEventListener('click', () => {
  const chat = $('chat');
  chat.hidden = !chat.hidden;
  $('chat-button').setAttribute('aria-expanded', String(!chat.hidden));
  if (!chat.hidden) $('chat-input').focus();
});
$('chat-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const input = $('chat-input');
  const text = input.value.trim();
  if (text === '' || text.length > SNUG.MAX_CHAT_CHARS) return;
  input.value = '';
  sendChat(text);
});
$('chat-input').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    $('chat-form').requestSubmit();
  }
});

// Messages from the app's iframe, and only from it.
window.addEventListener('message', (e) => {
  if (!iframe || e.source !== iframe.contentWindow) return;
  const d = e.data;
  if (armed && d !== null && typeof d === 'object' && d.snugRunner === 'ready') {
    armed = false;
    port.postMessage({ type: 'load' }); // before any frame of the new document
    iframe.contentWindow.postMessage({ snugRunner: 'document', html }, '*');
    return;
  }
  if (d === null || typeof d !== 'object' || typeof d.type !== 'string' || !d.type.startsWith('snug:')) return;
  let text;
  try {
    text = JSON.stringify(d);
  } catch {
    return; // not JSON (a cycle, a BigInt): not a frame
  }
  if (text.length > SNUG.MAX_RELAY_BYTES) { // UTF-16 units never exceed UTF-8 bytes
    notice(`The app sent a message of over ${SNUG.MAX_RELAY_BYTES} bytes, more than the host carries; it was dropped.`);
    return;
  }
  port.postMessage({ type: 'frame', text });
});

$('menu-button').addEventListener('click', () => {
  const menu = $('menu');
  menu.hidden = !menu.hidden;
  $('menu-button').setAttribute('aria-expanded', String(!menu.hidden));
});
$('reload').addEventListener('click', () => {
  $('menu').hidden = true;
  if (html !== null) mount();
});
$('reset-agent').addEventListener('click', () => {
  $('menu').hidden = true;
  port.postMessage({ type: 'resetAgent' });
});

$('connections-button').addEventListener('click', () => dialogs.connections());

port = chrome.runtime.connect({ name: SNUG.RUNNER_PORT });
const dialogs = createDialogs({ $, port, appName: () => installed?.displayName ?? $('name').textContent });
port.onMessage.addListener(fromWorker);
port.onDisconnect.addListener(() => notice('The extension restarted: reload this tab to show the app again.'));
port.postMessage({ type: 'attach', app });
