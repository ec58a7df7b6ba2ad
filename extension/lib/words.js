// Words for the owner: what an agent may do, for how long, what it did.
// The console and the question windows use them; they read only the
// broker's own vocabulary (kinds, roles, names, origins, counts), never
// page content.
import { LIMITS } from './protocol.js';

export const LEASE_MINUTES = Math.round(LIMITS.LEASE_TTL_MS / 60000);

// tabNumber is the browser's tab number in a tab handle "instance:N".
export const tabNumber = (handle) => String(handle).split(':').pop();

// duration says how long ms is, to the second: "4 min 05 s", "42 s".
export function duration(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

// left says how long until at: "4 min 05 s left", or "expired".
export const left = (at, now) => (at > now ? `${duration(at - now)} left` : 'expired');

// mayDo says what a lease lets an agent do, and where.
export function mayDo(scope, origin) {
  const what = 'read the page, click, type and press keys in this tab';
  if (scope === 'tab') return `${what}, on whatever web page the tab shows (personal mode)`;
  return `${what}, only while it shows ${origin}`;
}

// howToStop lists the ways to take a lease back.
export const HOW_TO_STOP = 'press Stop (in the toolbar popup or the console), close the tab, or leave the site';

// chars says how much text: "1 character", "13 characters".
const chars = (n) => (n === undefined || n === null ? 'text' : `${n} character${n === 1 ? '' : 's'}`);

// describeAction says what an activity entry asked for, in words.
export function describeAction(e) {
  const target = e.role || e.name ? `${e.role ?? ''} “${e.name ?? ''}”`.trim() : 'an element no longer on the page';
  let s;
  switch (e.kind) {
    case 'click': s = `click ${target}`; break;
    case 'fill': s = `fill ${target} with ${chars(e.textLength)}`; break;
    case 'type': s = `type ${chars(e.textLength)} into ${target}`; break;
    case 'append': s = `append ${chars(e.textLength)} to ${target}`; break;
    case 'press': s = `press ${e.key} on ${target}`; break;
    default: s = `${e.kind} ${target}${e.textLength !== undefined ? ` (${chars(e.textLength)})` : ''}`;
  }
  return e.step !== undefined ? `batch step ${e.step + 1}: ${s}` : s;
}

// describeResult says how an entry ended.
export function describeResult(e) {
  if (e.state === 'running') return 'in progress';
  if (e.state === 'interrupted') return 'interrupted: the broker stopped before the outcome was recorded; the input may have happened';
  const code = e.code ? ` (${e.code})` : '';
  if (e.dispatch === 'notDispatched') return `${e.outcome === 'cancelled' ? 'cancelled' : 'refused'}: nothing was sent to the page${code}`;
  switch (e.outcome) {
    case 'succeeded': return 'done, and the expected result appeared';
    case 'failed': return `done, but the expected result did not appear${code}`;
    case 'cancelled': return `cancelled after it was sent to the page${code}`;
  }
  return e.dispatch === 'observed' ? 'done (the agent asked for no check)' : `sent to the page; what it did is not known${code}`;
}

// admissionWords says where a client stands with the owner.
export function admissionWords(c) {
  switch (c.admission) {
    case 'token': return 'admitted by the broker’s token (admission is open)';
    case 'granted': return 'admitted by you';
    case 'denied': return 'denied by you: it can do nothing on this connection';
    default: return c.asking ? 'waiting for you to admit it' : 'waiting to be admitted (asks again on its next request)';
  }
}
