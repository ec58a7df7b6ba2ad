// approve.html shows one pending request of the worker and sends back the
// user's answer; the worker closes this window when the request settles.
const req = new URLSearchParams(location.search).get('req');
const details = await chrome.runtime.sendMessage({ type: 'approval.get', req });

if (details) {
  for (const id of ['client', 'title', 'origin']) document.getElementById(id).textContent = details[id];
  const answer = (allow) => chrome.runtime.sendMessage({ type: 'approval.answer', req, allow });
  document.getElementById('allow').addEventListener('click', () => answer(true));
  document.getElementById('deny').addEventListener('click', () => answer(false));
  document.getElementById('ask').hidden = false; // shown only once the buttons work
} else {
  document.getElementById('gone').hidden = false;
}
