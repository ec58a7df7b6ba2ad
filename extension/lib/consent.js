// Prior consent: the owner allows a tab, for the origin it shows, from the
// popup; a restricted claim of that tab on exactly that origin is then
// granted at once, without the approval window (a reference client claims
// with a 10-second deadline and expects this). The lease is the same
// exact-origin lease an approval gives. Stop forgets every consent; a
// navigation to another origin, or closing the tab, forgets the tab's; the
// console lists them and forgets one on request.
import { isHttp, originOf } from './gate.js';

// createConsents keeps the consents; onChange is told whenever the set
// changes (the console shows it).
export function createConsents({ onChange = () => {} } = {}) {
  const consents = new Map(); // tab ID -> origin
  const forget = (tabId) => {
    if (!consents.delete(tabId)) return false;
    onChange();
    return true;
  };
  return {
    // allow records consent for the tab's current HTTP(S) origin.
    allow(tab) {
      if (!isHttp(tab.url)) return false;
      consents.set(tab.id, originOf(tab.url));
      onChange();
      return true;
    },
    allows: (tabId, origin) => consents.get(tabId) === origin,
    origin: (tabId) => consents.get(tabId),
    list: () => [...consents].map(([tabId, origin]) => ({ tabId, origin })),
    forget,
    // onUpdated forgets a tab's consent once it shows another origin.
    onUpdated(tabId, change) {
      if (change.url !== undefined && consents.has(tabId) && originOf(change.url) !== consents.get(tabId)) forget(tabId);
    },
    onRemoved: forget,
    clear() {
      if (consents.size === 0) return;
      consents.clear();
      onChange();
    },
  };
}
