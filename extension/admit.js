// admit.html shows one pending admission question of the worker and sends
// back the user's answer; the worker closes this window when it settles.
// Deny has the focus, so that an accidental Enter never admits.
import { LEASE_MINUTES } from './lib/words.js';

const req = new URLSearchParams(location.search).get('req');
const details = await chrome.runtime.sendMessage({ type: 'approval.get', req });
const $ = (id) => document.getElementById(id);

if (details) {
  $('client').textContent = details.client;
  $('connection').textContent = `#${details.connection}`;
  const state = await chrome.runtime.sendMessage({ type: 'popup.state' });
  $('what').textContent = /Personal/.test(state?.status ?? '')
    ? 'List your tabs and control any web tab without asking you (the broker runs in personal mode).'
    : `List your tabs, and ask you before it controls one (each tab for up to ${LEASE_MINUTES} minutes, only on that tab’s exact origin).`;
  const answer = (allow) => chrome.runtime.sendMessage({ type: 'approval.answer', req, allow });
  $('allow').addEventListener('click', () => answer(true));
  $('deny').addEventListener('click', () => answer(false));
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') answer(false);
  });
  $('ask').addEventListener('submit', (e) => e.preventDefault());
  $('ask').hidden = false; // shown only once the buttons work
  $('deny').focus();
} else {
  $('gone').hidden = false;
}
