// The approval windows: a popup window that asks the user one question and
// answers true only for Allow. approve.html asks to allow one client on one
// tab's exact origin; admit.html asks to admit one client connection to the
// broker. Anything but Allow (Deny, closing the window, 60 s) is a deny.
// The owner's console lists the same questions and may answer them in place
// (list, answer); the window stays open until either answers.
export const APPROVAL_TIMEOUT_MS = 60000;

export const APPROVE_WINDOW = { page: 'approve.html', width: 500, height: 560, kind: 'claim' };
export const ADMIT_WINDOW = { page: 'admit.html', width: 500, height: 440, kind: 'admission' };

// onChange runs whenever a question is asked or settled.
export function createApprovals({ chrome, timers, uuid, now = Date.now, onChange = () => {} }) {
  const pending = new Map(); // request ID -> {details, kind, askedAt, windowId, settle}

  // ask resolves true only when the user clicks Allow in time, in a window
  // of the given kind (APPROVE_WINDOW or ADMIT_WINDOW).
  function ask(details, signal, { page, width, height, kind } = APPROVE_WINDOW) {
    return new Promise((resolve) => {
      const req = uuid();
      const entry = { details, kind, askedAt: now(), windowId: undefined };
      const settle = (allow) => {
        if (!pending.delete(req)) return;
        timers.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (entry.windowId !== undefined) chrome.windows.remove(entry.windowId).catch(() => {});
        resolve(allow);
        onChange();
      };
      const onAbort = () => settle(false);
      const timer = timers.setTimeout(() => settle(false), APPROVAL_TIMEOUT_MS);
      entry.settle = settle;
      pending.set(req, entry);
      if (signal.aborted) return settle(false);
      onChange();
      signal.addEventListener('abort', onAbort);
      chrome.windows.create({ url: `${page}?req=${encodeURIComponent(req)}`, type: 'popup', width, height })
        .then((w) => {
          entry.windowId = w.id;
          if (!pending.has(req)) chrome.windows.remove(w.id).catch(() => {}); // settled while opening
          else if (entry.early?.has(w.id)) settle(entry.early.get(w.id)); // answered while opening
        }, () => settle(false));
    });
  }

  // onMessage answers approve.html and admit.html: each reads its request,
  // then answers it.
  // Only the window opened for a request may answer it. The window's page
  // can answer before chrome.windows.create has told the worker which
  // window that is (a busy browser, a quick click): the answer is then kept
  // with the window it came from and applied once that is known to be the
  // request's.
  function onMessage(msg, sender) {
    const entry = pending.get(msg.req);
    if (msg.type === 'approval.get') return entry ? entry.details : null;
    const from = sender.tab?.windowId;
    if (!entry || from === undefined) return true;
    if (entry.windowId === undefined) {
      entry.early ??= new Map(); // window ID -> its first answer
      if (!entry.early.has(from)) entry.early.set(from, msg.allow === true);
    } else if (from === entry.windowId) entry.settle(msg.allow === true);
    return true;
  }

  function onWindowRemoved(windowId) {
    for (const entry of [...pending.values()]) if (entry.windowId === windowId) entry.settle(false);
  }

  // list returns the questions waiting for the owner, oldest first (page
  // content: none; the tab's title as the browser shows it).
  const list = () => [...pending].map(([req, e]) => ({
    req, kind: e.kind, askedAt: e.askedAt, deadline: e.askedAt + APPROVAL_TIMEOUT_MS, ...e.details,
  }));

  // answer settles a question from the owner's console; false when it is
  // no longer waiting.
  function answer(req, allow) {
    const entry = pending.get(req);
    entry?.settle(allow === true);
    return entry !== undefined;
  }

  return { ask, onMessage, onWindowRemoved, list, answer };
}
