// admit.html shows one pending admission question of the worker and sends
// back the user's answer; the worker closes this window when it settles.
const req = new URLSearchParams(location.search).get('req');
const details = await chrome.runtime.sendMessage({ type: 'approval.get', req });

if (details) {
  document.getElementById('client').textContent = details.client;
  document.getElementById('connection').textContent = `#${details.connection}`;
  const answer = (allow) => chrome.runtime.sendMessage({ type: 'approval.answer', req, allow });
  document.getElementById('allow').addEventListener('click', () => answer(true));
  document.getElementById('deny').addEventListener('click', () => answer(false));
  document.getElementById('ask').hidden = false; // shown only once the buttons work
} else {
  document.getElementById('gone').hidden = false;
}
