// approve.html shows one pending request of the worker and sends back the
// user's answer; the worker closes this window when the request settles.
// It says what the agent may do, for how long and how to take it back, and
// Deny has the focus, so that an accidental Enter never grants.
import { HOW_TO_STOP, LEASE_MINUTES, mayDo } from './lib/words.js';
import { APPROVAL_TIMEOUT_MS } from './lib/approval.js';

const req = new URLSearchParams(location.search).get('req');
const details = await chrome.runtime.sendMessage({ type: 'approval.get', req });
const $ = (id) => document.getElementById(id);

if (details) {
  for (const id of ['client', 'title', 'origin']) $(id).textContent = details[id];
  $('what').textContent = `${mayDo('origin', details.origin)[0].toUpperCase()}${mayDo('origin', details.origin).slice(1)}.`;
  $('how-long').textContent = `Up to ${LEASE_MINUTES} minutes; then it has to ask you again.`;
  $('take-back').textContent = `${HOW_TO_STOP[0].toUpperCase()}${HOW_TO_STOP.slice(1)}.`;
  $('wait').textContent = `${APPROVAL_TIMEOUT_MS / 1000} seconds`;
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
