// Bounded accessibility reads and literal searches. The extension only
// fetches and trims AX nodes; projection into observations is the broker's.
import { CodeError, fail, orFail } from './errors.js';
import { MAX_VALUE_BYTES } from './transport.js';

export const BUDGET = { nodes: 2048, calls: 512, depth: 64, bytes: 1 << 20 };
const MAX_MATCHES = 128;
const PREFETCH = 8; // child fetches in flight ahead of the walk
const PROPS = ['disabled', 'focusable', 'focused', 'editable', 'checked', 'expanded', 'hidden', 'required'];
const utf8 = new TextEncoder();

// A Reader holds one read's budgets and its output.
class Reader {
  constructor(send, page) {
    this.send = send;
    this.calls = 0;
    this.nodes = [];
    this.truncated = false;
    // Node JSON is capped at 1 MiB, and further so that the whole value
    // stays under the 900,000-byte reply cap (else the read is useless).
    const frame = JSON.stringify({ ...page, truncated: false, nodes: [] });
    this.bytesLeft = Math.min(BUDGET.bytes, MAX_VALUE_BYTES - utf8.encode(frame).length - 8);
    this.page = page;
  }

  call(method, params) {
    this.calls++;
    return this.send(method, params);
  }

  stop() {
    this.truncated = true;
    return false;
  }

  get canCall() {
    return this.calls < BUDGET.calls;
  }

  // add projects a non-ignored node; false when a budget stops the read.
  // A secret node (a password field) is returned without its value.
  add(n, parentAxId, secret) {
    if (this.nodes.length >= BUDGET.nodes) return this.stop();
    const node = { axId: n.nodeId };
    if (parentAxId !== undefined) node.parentAxId = parentAxId;
    if (n.backendDOMNodeId !== undefined) node.backendNodeId = n.backendDOMNodeId;
    node.role = String(n.role?.value ?? '');
    node.name = String(n.name?.value ?? '');
    if (n.value?.value !== undefined && !secret) node.value = String(n.value.value);
    node.ignored = false;
    node.props = {};
    for (const p of n.properties ?? []) {
      if (PROPS.includes(p.name) && p.value?.value !== undefined) node.props[p.name] = p.value.value;
    }
    const size = utf8.encode(JSON.stringify(node)).length + 1;
    if (size > this.bytesLeft) return this.stop();
    this.bytesLeft -= size;
    this.nodes.push(node);
    return true;
  }

  // secret tells whether n may be a password field with a value. Chromium
  // masks password values, but masking is a browser setting, so the DOM
  // decides: a single-line editable field with a value is asked for its
  // input type, and one that cannot be asked counts as a password.
  async secret(n) {
    const prop = (name) => n.properties?.find((p) => p.name === name)?.value?.value;
    if (n.value?.value === undefined || prop('editable') === undefined || prop('multiline') === true) return false;
    if (n.backendDOMNodeId === undefined || !this.canCall) return true;
    try {
      const { node } = await this.call('DOM.describeNode', { backendNodeId: n.backendDOMNodeId });
      const attrs = node.attributes ?? [];
      const type = attrs.findIndex((a, i) => i % 2 === 0 && a.toLowerCase() === 'type');
      return node.nodeName === 'INPUT' && type >= 0 && String(attrs[type + 1]).toLowerCase() === 'password';
    } catch (e) {
      if (e instanceof CodeError) throw e;
      return true;
    }
  }

  result() {
    return { ...this.page, truncated: this.truncated, nodes: this.nodes };
  }
}

// read walks the AX tree depth-first from the root (or from the AX node of
// backendNodeId) with getRootAXNode / getPartialAXTree / getChildAXNodes,
// walking through ignored nodes without returning them.
export async function read(send, page, backendNodeId) {
  const r = new Reader(send, page);
  const known = new Map();
  const learn = (nodes) => nodes?.forEach((n) => known.set(n.nodeId, n));
  let root;
  if (backendNodeId === undefined) {
    root = (await r.call('Accessibility.getRootAXNode', {})).node;
  } else {
    const res = await orFail(r.call('Accessibility.getPartialAXTree', { backendNodeId, fetchRelatives: false }), 'STALE_TARGET');
    learn(res.nodes);
    root = res.nodes?.find((n) => n.backendDOMNodeId === backendNodeId);
  }
  if (!root) fail('STALE_TARGET');
  learn([root]);

  // Children are fetched ahead for the next entries of the walk, a few at a
  // time: the walk stays depth-first, but its CDP round trips overlap.
  const fetched = new Map(); // AX node id -> Promise of its children, or of the error
  const needsKids = (n, depth) => depth < BUDGET.depth && n.role?.value !== 'StaticText' && (n.childIds ?? []).some((k) => !known.has(k));
  const fetchKids = (id) => {
    if (!fetched.has(id) && r.canCall) {
      fetched.set(id, r.call('Accessibility.getChildAXNodes', { id }).then((res) => res.nodes ?? [], (e) => (e instanceof Error ? e : new Error(String(e)))));
    }
    return fetched.get(id);
  };
  const stack = [{ id: root.nodeId, depth: 1, parent: undefined }];
  while (stack.length) {
    const { id, depth, parent } = stack.pop();
    const n = known.get(id);
    if (!n) continue; // a child the browser no longer reports
    let parentOfChildren = parent;
    if (!n.ignored) {
      // Inline text boxes repeat their StaticText parent's name: skipping
      // them leaves the budgets to nodes that carry something.
      if (n.role?.value === 'InlineTextBox') continue;
      const secret = await r.secret(n);
      if (!r.add(n, parent, secret)) break;
      if (secret) continue; // a password field's inner text is its value
      parentOfChildren = n.nodeId;
    }
    // A StaticText's children are InlineTextBoxes, which repeat its name:
    // fetching them would spend a third of the call budget on nothing.
    if (n.role?.value === 'StaticText') continue;
    const kids = n.childIds ?? [];
    if (kids.length === 0) continue;
    if (depth >= BUDGET.depth) {
      r.truncated = true;
      continue;
    }
    if (needsKids(n, depth)) {
      const own = fetchKids(n.nodeId);
      for (let j = stack.length - 1; j >= 0 && j >= stack.length - PREFETCH; j--) {
        const next = known.get(stack[j].id);
        if (next && needsKids(next, stack[j].depth)) fetchKids(next.nodeId);
      }
      const res = await own;
      if (res === undefined) {
        r.truncated = true; // the call budget is spent
        continue;
      }
      if (res instanceof Error) {
        if (res instanceof CodeError) throw res; // the gate, or a cancel
        r.truncated = true; // the node went away under us: keep what we have
        continue;
      }
      learn(res);
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ id: kids[i], depth: depth + 1, parent: parentOfChildren });
  }
  return r.result();
}

// find is a literal, case-sensitive search by accessible name (and role).
export async function find(send, page, name, role) {
  const r = new Reader(send, page);
  const { root } = await r.call('DOM.getDocument', { depth: 0 });
  const params = { backendNodeId: root.backendNodeId, accessibleName: name };
  if (role !== undefined) params.role = role;
  const { nodes } = await r.call('Accessibility.queryAXTree', params);
  const matches = (nodes ?? []).filter((n) => !n.ignored);
  if (matches.length > MAX_MATCHES) r.truncated = true;
  for (const n of matches.slice(0, MAX_MATCHES)) {
    if (!r.add(n, n.parentId, await r.secret(n))) break;
  }
  return r.result();
}
