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
  }
}

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
