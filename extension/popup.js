// The popup shows the connection and the controlled tabs. Allow gives prior
// consent for the tab shown (its current origin): a claim of it is then
// granted without the approval window. Stop revokes every lease at once and
// forgets every consent (the worker does the work); the console shows the
// rest.
const status = document.getElementById('status');
const list = document.getElementById('tabs');
const here = document.getElementById('here');
let shown; // the tab Allow applies to

async function render() {
  const state = await chrome.runtime.sendMessage({ type: 'popup.state' });
  status.textContent = state.status;
  list.replaceChildren(...state.tabs.map((t) => {
    const li = document.createElement('li');
    li.textContent = t.title || t.url;
    li.title = t.url;
    return li;
  }));
  shown = state.here;
  here.hidden = !shown;
  if (!shown) return;
  document.getElementById('here-title').textContent = shown.title;
  document.getElementById('here-origin').textContent = shown.origin;
  document.getElementById('allow').hidden = shown.allowed;
  document.getElementById('allowed').hidden = !shown.allowed;
}

document.getElementById('allow').addEventListener('click', async () => {
  if (shown) await chrome.runtime.sendMessage({ type: 'popup.allow', tabId: shown.tabId });
  await render();
});

document.getElementById('stop').addEventListener('click', async () => {
  await chrome.runtime.sendMessage({ type: 'popup.stop' });
  await render();
});

document.getElementById('console').addEventListener('click', async () => {
  await chrome.runtime.sendMessage({ type: 'popup.console' });
  window.close();
});

render();
