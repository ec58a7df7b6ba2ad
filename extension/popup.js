// The popup shows the connection and the controlled tabs; Stop revokes
// every lease at once (the worker does the work); the console shows the
// rest.
const status = document.getElementById('status');
const list = document.getElementById('tabs');

async function render() {
  const state = await chrome.runtime.sendMessage({ type: 'popup.state' });
  status.textContent = state.status;
  list.replaceChildren(...state.tabs.map((t) => {
    const li = document.createElement('li');
    li.textContent = t.title || t.url;
    li.title = t.url;
    return li;
  }));
}

document.getElementById('stop').addEventListener('click', async () => {
  await chrome.runtime.sendMessage({ type: 'popup.stop' });
  await render();
});

document.getElementById('console').addEventListener('click', async () => {
  await chrome.runtime.sendMessage({ type: 'popup.console' });
  window.close();
});

render();
