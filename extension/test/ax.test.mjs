// Bounded AX reads and finds over a FAKE accessibility tree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from './fake-chrome.mjs';
import { BUDGET, READ } from '../lib/ax.js';
import { PAGE_READ } from '../lib/pageread.js';

// These are tests of the AX read: a whole document is read in the page
// otherwise (pageread.test.mjs).
PAGE_READ.on = false;

// tree serves nodes {nodeId, childIds, ...} the way Chromium does: getChildAXNodes
// answers a node's children.
function serve(t, nodes) {
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  t.chrome.cdp.set('Accessibility.getRootAXNode', () => ({ node: nodes[0] }));
  t.chrome.cdp.set('Accessibility.getChildAXNodes', ({ id }) => ({ nodes: (byId.get(id).childIds ?? []).map((c) => byId.get(c)) }));
  t.chrome.cdp.set('Accessibility.getPartialAXTree', ({ backendNodeId }) => {
    const n = nodes.find((x) => x.backendDOMNodeId === backendNodeId);
    if (!n) throw new Error('No node found for given backend id');
    return { nodes: [n] };
  });
}

// serveBulk serves nodes for getFullAXTree too (each with its parentId, as
// Chromium gives them), and a document of domNodes DOM nodes to
// Performance.getMetrics.
function serveBulk(t, nodes, domNodes) {
  serve(t, nodes);
  const parents = new Map(nodes.flatMap((n) => (n.childIds ?? []).map((c) => [c, n.nodeId])));
  t.chrome.cdp.set('Accessibility.getFullAXTree', () => ({ nodes: nodes.map((n) => (parents.has(n.nodeId) ? { ...n, parentId: parents.get(n.nodeId) } : n)) }));
  t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Documents', value: 1 }, { name: 'Nodes', value: domNodes }] }));
}

const node = (nodeId, role, name, extra = {}) => ({
  nodeId, ignored: false, role: { type: 'role', value: role }, name: { type: 'computedString', value: name }, ...extra,
});

async function granted() {
  const t = await setup({ personal: true });
  t.chrome.addTab(1, 'https://a.test/', 'A');
  const { lease } = await t.grant(1);
  t.read = (request = {}) => t.call('ax.read', { lease, request });
  t.find = (request) => t.call('ax.find', { lease, request });
  t.calls = (m) => t.chrome.commands.filter((c) => c.method === m).length;
  return t;
}

test('a read walks through ignored nodes in document order and projects the listed props', async () => {
  const t = await granted();
  serve(t, [
    node('1', 'RootWebArea', 'A', { childIds: ['2', '5'], backendDOMNodeId: 1 }),
    { nodeId: '2', ignored: true, role: { value: 'none' }, childIds: ['3', '4'] },
    node('3', 'button', 'Save', { backendDOMNodeId: 30, properties: [
      { name: 'focusable', value: { type: 'booleanOrUndefined', value: true } },
      { name: 'disabled', value: { type: 'boolean', value: false } },
      { name: 'labelledby', value: { type: 'nodeList', relatedNodes: [] } },
    ] }),
    node('4', 'StaticText', 'hello', { childIds: ['-9'] }),
    node('-9', 'InlineTextBox', 'hello'),
    node('5', 'checkbox', 'Agree', { properties: [{ name: 'checked', value: { type: 'tristate', value: 'mixed' } }] }),
  ]);
  const r = await t.read();
  assert.deepEqual(r.value, {
    documentEpoch: 'F1:L1', url: 'https://a.test/', title: 'A', truncated: false,
    nodes: [
      { axId: '1', backendNodeId: 1, role: 'RootWebArea', name: 'A', ignored: false, props: {} },
      { axId: '3', parentAxId: '1', backendNodeId: 30, role: 'button', name: 'Save', ignored: false, props: { focusable: true, disabled: false } },
      { axId: '4', parentAxId: '1', role: 'StaticText', name: 'hello', ignored: false, props: {} },
      { axId: '5', parentAxId: '1', role: 'checkbox', name: 'Agree', ignored: false, props: { checked: 'mixed' } },
    ],
  });
  assert.equal(t.calls('Accessibility.getFullAXTree'), 0);
});

test('a read from backendNodeId starts at its AX node; a gone node is STALE_TARGET', async () => {
  const t = await granted();
  serve(t, [node('1', 'RootWebArea', 'A', { childIds: ['2'] }), node('2', 'list', 'L', { backendDOMNodeId: 20, childIds: ['3'] }), node('3', 'listitem', 'x')]);
  const r = await t.read({ backendNodeId: 20 });
  assert.deepEqual(r.value.nodes.map((n) => [n.axId, n.parentAxId]), [['2', undefined], ['3', '2']]);
  assert.equal((await t.read({ backendNodeId: 21 })).code, 'STALE_TARGET');
  assert.equal((await t.read({ backendNodeId: -1 })).code, 'INVALID_REQUEST');
});

test('password values and their inner text are never returned', async () => {
  const t = await granted();
  const editable = (multiline) => [
    { name: 'editable', value: { type: 'token', value: 'plaintext' } },
    { name: 'multiline', value: { type: 'boolean', value: multiline } },
  ];
  serve(t, [
    node('1', 'RootWebArea', 'A', { childIds: ['2', '4', '5'] }),
    node('2', 'textbox', 'Password', { backendDOMNodeId: 20, value: { value: 'hunter2' }, properties: editable(false), childIds: ['3'] }),
    node('3', 'StaticText', 'hunter2'),
    node('4', 'textbox', 'Name', { backendDOMNodeId: 40, value: { value: 'Ada' }, properties: editable(false) }),
    node('5', 'textbox', 'Notes', { backendDOMNodeId: 50, value: { value: 'long' }, properties: editable(true) }),
  ]);
  t.chrome.cdp.set('DOM.describeNode', ({ backendNodeId }) => ({
    node: { nodeName: 'INPUT', attributes: backendNodeId === 20 ? ['id', 'p', 'TYPE', 'Password'] : ['type', 'text'] },
  }));
  const nodes = (await t.read()).value.nodes;
  assert.deepEqual(nodes.map((n) => [n.name, n.value]), [['A', undefined], ['Password', undefined], ['Name', 'Ada'], ['Notes', 'long']]);
  assert.equal(t.calls('DOM.describeNode'), 2); // not for the multi-line field
  t.chrome.cdp.set('Runtime.evaluate', ({ expression }) => ({ result: { type: 'object', objectId: expression === 'document' ? 'doc' : '?' } }));
  t.chrome.cdp.set('Accessibility.queryAXTree', () => ({ nodes: [node('2', 'textbox', 'Password', { backendDOMNodeId: 20, value: { value: 'hunter2' }, properties: editable(false) })] }));
  const found = (await t.find({ name: 'Password' })).value.nodes;
  assert.deepEqual(found.map((n) => [n.name, n.value]), [['Password', undefined]]);
});

test('a field that cannot be asked for its type keeps its value back', async () => {
  const t = await granted();
  serve(t, [node('1', 'textbox', 'X', { backendDOMNodeId: 2, value: { value: 'v' }, properties: [{ name: 'editable', value: { value: 'plaintext' } }] })]);
  t.chrome.cdp.set('DOM.describeNode', () => { throw new Error('gone'); });
  assert.equal((await t.read()).value.nodes[0].value, undefined);
});

test('the node budget stops at 2,048 nodes', async () => {
  const t = await granted();
  const kids = Array.from({ length: 3000 }, (_, i) => node(`k${i}`, 'listitem', `${i}`));
  serve(t, [node('1', 'list', 'L', { childIds: kids.map((k) => k.nodeId) }), ...kids]);
  const r = (await t.read()).value;
  assert.equal(r.nodes.length, BUDGET.nodes);
  assert.equal(r.truncated, true);
  assert.equal(r.nodes.at(-1).name, '2046');
});

test('the call budget stops at 512 CDP calls', async () => {
  const t = await granted();
  const nodes = [node('1', 'list', 'L', { childIds: [] })];
  for (let i = 0; i < 600; i++) {
    nodes[0].childIds.push(`g${i}`);
    nodes.push(node(`g${i}`, 'group', '', { childIds: [`c${i}`] }), node(`c${i}`, 'text', `${i}`));
  }
  serve(t, nodes);
  const before = t.chrome.commands.length;
  const r = (await t.read()).value;
  // The walk's calls, without the two Page.getFrameTree that fence the document.
  const walk = t.chrome.commands.slice(before).filter((c) => c.method !== 'Page.getFrameTree');
  assert.equal(walk.length, BUDGET.calls);
  assert.equal(r.truncated, true);
});

test('the depth budget stops at 64 levels', async () => {
  const t = await granted();
  const nodes = Array.from({ length: 100 }, (_, i) => node(`${i}`, 'group', `${i}`, i < 99 ? { childIds: [`${i + 1}`] } : {}));
  serve(t, nodes);
  const r = (await t.read()).value;
  assert.equal(r.nodes.length, BUDGET.depth);
  assert.equal(r.truncated, true);
});

test('the node JSON budget keeps the whole value under the reply cap', async () => {
  const t = await granted();
  const kids = Array.from({ length: 2000 }, (_, i) => node(`k${i}`, 'paragraph', 'x'.repeat(1000)));
  serve(t, [node('1', 'main', '', { childIds: kids.map((k) => k.nodeId) }), ...kids]);
  const r = await t.read();
  assert.equal(r.ok, true);
  assert.equal(r.value.truncated, true);
  const size = Buffer.byteLength(JSON.stringify(r.value));
  assert.ok(size <= 900_000 && size > 890_000, `${size}`);
});

test('a find is a literal queryAXTree search returning at most 128 non-ignored matches', async () => {
  const t = await granted();
  t.chrome.cdp.set('Runtime.evaluate', ({ expression }) => ({ result: { type: 'object', objectId: expression === 'document' ? 'doc' : '?' } }));
  const matches = Array.from({ length: 200 }, (_, i) => node(`m${i}`, 'button', 'Go', { ignored: i % 2 === 1, parentId: 'p' }));
  t.chrome.cdp.set('Accessibility.queryAXTree', () => ({ nodes: matches }));
  const r = (await t.find({ name: 'Go', role: 'button' })).value;
  // From the document as an object: DOM.getDocument would bind it to the
  // DOM agent, and the next hit test would push its node path to the
  // session, every sibling on the way (hundreds of ms on a long page).
  assert.deepEqual(t.chrome.commands.find((c) => c.method === 'Accessibility.queryAXTree').params, { objectId: 'doc', accessibleName: 'Go', role: 'button' });
  assert.equal(t.calls('DOM.getDocument'), 0);
  assert.ok(t.chrome.commands.some((c) => c.method === 'Runtime.releaseObjectGroup' && c.params.objectGroup === 'dsh-find'));
  assert.equal(r.nodes.length, 100);
  assert.equal(r.truncated, false);
  assert.deepEqual(r.nodes[0], { axId: 'm0', parentAxId: 'p', role: 'button', name: 'Go', ignored: false, props: {} });
  matches.forEach((m) => (m.ignored = false));
  const all = (await t.find({ name: 'Go' })).value;
  assert.equal(all.nodes.length, 128);
  assert.equal(all.truncated, true);
  assert.equal((await t.find({ name: '' })).code, 'INVALID_REQUEST');
  // Under a root (rootRef): queryAXTree from that element.
  await t.find({ name: 'Go', backendNodeId: 77 });
  assert.deepEqual(t.chrome.commands.findLast((c) => c.method === 'Accessibility.queryAXTree').params, { accessibleName: 'Go', backendNodeId: 77 });
});

test('a read that spans a navigation is labelled with no document: it is read again, then refused', async () => {
  const t = await granted();
  serve(t, [node('1', 'RootWebArea', 'A', { backendDOMNodeId: 1 })]);
  let loader = 0;
  const frameTree = (bump) => () => ({ frameTree: { frame: { id: 'F1', loaderId: `L${bump ? ++loader : loader}`, url: 'https://a.test/' } } });
  // Every Page.getFrameTree sees a new document: the page keeps navigating.
  t.chrome.cdp.set('Page.getFrameTree', frameTree(true));
  const r = await t.read();
  assert.equal(r.code, 'STALE_TARGET');
  assert.equal(t.calls('Accessibility.getRootAXNode'), 2);

  // A navigation that commits before the read but is not yet reported by
  // Page.frameNavigated: the read carries the new document's epoch.
  loader = 7;
  t.chrome.cdp.set('Page.getFrameTree', frameTree(false));
  const fresh = await t.read();
  assert.equal(fresh.value.documentEpoch, 'F1:L7');
});

test('a find on a tab that is not shown walks instead of asking queryAXTree, which never answers there', async () => {
  const t = await granted();
  const editable = [{ name: 'editable', value: { type: 'token', value: 'plaintext' } }];
  serve(t, [
    node('1', 'RootWebArea', 'A', { childIds: ['2', '4', '6'] }),
    node('2', 'generic', '', { ignored: true, childIds: ['3'] }),
    node('3', 'button', 'Go', { backendDOMNodeId: 30 }),
    node('4', 'textbox', 'Password', { backendDOMNodeId: 40, value: { value: 'Go' }, properties: editable, childIds: ['5'] }),
    node('5', 'StaticText', 'Go'), // a password's inner text: never a match
    node('6', 'link', 'Go', { backendDOMNodeId: 60 }),
  ]);
  t.chrome.cdp.set('DOM.describeNode', () => ({ node: { nodeName: 'INPUT', attributes: ['type', 'password'] } }));
  t.chrome.cdp.set('Accessibility.queryAXTree', () => new Promise(() => {})); // as on a hidden tab
  t.chrome.tabs_.get(1).active = false;
  const all = (await t.find({ name: 'Go' })).value;
  assert.deepEqual(all.nodes.map((n) => [n.axId, n.role]), [['3', 'button'], ['6', 'link']]);
  assert.equal(all.truncated, false);
  assert.deepEqual((await t.find({ name: 'Go', role: 'link' })).value.nodes.map((n) => n.axId), ['6']);
  assert.equal(t.calls('Accessibility.queryAXTree'), 0);
  // Shown again: queryAXTree is asked.
  t.chrome.tabs_.get(1).active = true;
  t.chrome.cdp.set('Runtime.evaluate', ({ expression }) => ({ result: { type: 'object', objectId: expression === 'document' ? 'doc' : '?' } }));
  t.chrome.cdp.set('Accessibility.queryAXTree', () => ({ nodes: [node('3', 'button', 'Go')] }));
  assert.deepEqual((await t.find({ name: 'Go' })).value.nodes.map((n) => n.axId), ['3']);
  assert.equal(t.calls('Accessibility.queryAXTree'), 1);
});

test('a walking find stops at 128 matches and says truncated', async () => {
  const t = await granted();
  const kids = Array.from({ length: 130 }, (_, i) => node(`b${i}`, 'button', 'Go'));
  serve(t, [node('1', 'RootWebArea', 'A', { childIds: kids.map((k) => k.nodeId) }), ...kids]);
  t.chrome.tabs_.get(1).active = false;
  const r = (await t.find({ name: 'Go' })).value;
  assert.equal(r.nodes.length, 128);
  assert.equal(r.truncated, true);
});

test('a read of a child frame: only while it and every frame above it are of the main origin', async () => {
  const t = await granted();
  serve(t, [node('1', 'RootWebArea', 'Child', { childIds: ['2'] }), node('2', 'button', 'Inside', { backendDOMNodeId: 20 })]);
  const frame = (id, origin, loaderId, childFrames = []) => ({ frame: { id, loaderId, url: `${origin}/x`, securityOrigin: origin }, childFrames });
  let tree;
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: tree }));
  const same = 'https://a.test';
  const read = (f) => t.read({ frame: f });
  tree = { ...frame('F1', same, 'L1', [frame('C1', same, 'LC', [frame('G1', 'https://b.test', 'LG')]), frame('C2', 'https://b.test', 'L2', [frame('G2', same, 'LG2')])]) };
  tree.frame.url = 'https://a.test/';

  const r = (await read({ frameId: 'C1', loaderId: 'LC' })).value;
  assert.equal(r.documentEpoch, 'C1:LC');
  assert.deepEqual(r.nodes.map((n) => n.name), ['Child', 'Inside']);
  assert.deepEqual(t.chrome.commands.find((c) => c.method === 'Accessibility.getRootAXNode').params, { frameId: 'C1' });
  assert.ok(t.chrome.commands.filter((c) => c.method === 'Accessibility.getChildAXNodes').every((c) => c.params.frameId === 'C1'));

  const before = t.chrome.commands.length;
  assert.equal((await read({ frameId: 'G1', loaderId: 'LG' })).code, 'POLICY_DENIED'); // another origin
  assert.equal((await read({ frameId: 'G2', loaderId: 'LG2' })).code, 'POLICY_DENIED'); // same origin below another
  assert.equal((await read({ frameId: 'C1', loaderId: 'old' })).code, 'STALE_TARGET'); // another document now
  assert.equal((await read({ frameId: 'gone', loaderId: 'L' })).code, 'STALE_TARGET');
  assert.equal((await read({ frameId: 'F1', loaderId: 'L1' })).code, 'STALE_TARGET'); // the main frame is not a child
  assert.ok(t.chrome.commands.slice(before).every((c) => !c.method.startsWith('Accessibility.')), 'an AX read was sent');
  for (const bad of [{ frameId: 'C1' }, { frameId: 'C1', loaderId: 'LC', x: 1 }, { frameId: '', loaderId: 'LC' }]) {
    assert.equal((await read(bad)).code, 'INVALID_REQUEST', JSON.stringify(bad));
  }
  // A subtree of the frame (observe.frame-subtree.v1): from its element.
  const sub = (await t.read({ frame: { frameId: 'C1', loaderId: 'LC' }, backendNodeId: 20 })).value;
  assert.deepEqual(sub.nodes.map((n) => n.name), ['Inside']);
  assert.equal(sub.documentEpoch, 'C1:LC');

  // A find in a frame walks the frame's tree, under the same checks.
  const found = (await t.find({ name: 'Inside', role: 'button', frame: { frameId: 'C1', loaderId: 'LC' } })).value;
  assert.deepEqual(found.nodes.map((n) => n.axId), ['2']);
  assert.equal(found.documentEpoch, 'C1:LC');
  assert.equal(t.calls('Accessibility.queryAXTree'), 0);
  assert.equal((await t.find({ name: 'Inside', frame: { frameId: 'G1', loaderId: 'LG' } })).code, 'POLICY_DENIED');
  assert.equal((await t.find({ name: 'Inside', frame: { frameId: 'C1' } })).code, 'INVALID_REQUEST');
  // Under a root: from that element's AX node.
  const under = (await t.find({ name: 'Inside', frame: { frameId: 'C1', loaderId: 'LC' }, backendNodeId: 20 })).value;
  assert.deepEqual(under.nodes.map((n) => n.axId), ['2']);
  assert.equal((await t.find({ name: 'Inside', backendNodeId: 0 })).code, 'INVALID_REQUEST');
});

test('a read marks the elements clickable by the page\'s own doing, from one DOM snapshot of its document', async () => {
  const t = await granted();
  serve(t, [
    node('1', 'RootWebArea', 'A', { childIds: ['2', '3', '4', '5', '6', '7', '8', '9'], backendDOMNodeId: 1 }),
    node('2', 'generic', '', { backendDOMNodeId: 20 }), // a click listener
    node('3', 'generic', '', { backendDOMNodeId: 30, description: { value: 'Code view' } }), // cursor:pointer, titled
    node('4', 'generic', '', { backendDOMNodeId: 40 }), // inside 30, cursor:pointer inherited
    node('5', 'generic', '', { backendDOMNodeId: 50 }), // tabindex=0
    node('6', 'generic', '', { backendDOMNodeId: 60 }), // tabindex=-1
    node('7', 'LabelText', '', { backendDOMNodeId: 70 }), // a label: clickable by nature only
    node('8', 'generic', '', { backendDOMNodeId: 80 }), // nothing
    node('9', 'generic', '', { backendDOMNodeId: 90 }), // draggable="true"
  ]);
  const strings = ['F1', 'DIV', 'SPAN', 'LABEL', 'pointer', 'auto', 'tabindex', '0', '-1', 'C9', 'draggable', 'true'];
  const doc = (frameId, clickable) => ({
    frameId,
    nodes: {
      backendNodeId: [1, 20, 30, 40, 50, 60, 70, 80, 90],
      parentIndex: [-1, 0, 0, 2, 0, 0, 0, 0, 0],
      nodeType: [9, 1, 1, 1, 1, 1, 1, 1, 1],
      nodeName: [1, 1, 2, 2, 1, 1, 3, 1, 1],
      attributes: [[], [], [], [], [6, 7], [6, 8], [], [], [10, 11]],
      isClickable: { index: clickable },
    },
    layout: { nodeIndex: [1, 2, 3, 4, 5, 6, 7, 8], styles: [[5], [4], [4], [5], [5], [5], [5], [5]] },
  });
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', ({ computedStyles }) => {
    assert.deepEqual(computedStyles, ['cursor']);
    return { strings, documents: [doc(9, [1, 6]), doc(0, [1, 6])] }; // a child frame's first: the main one is found by its frame ID
  });
  const r = await t.read();
  const marked = r.value.nodes.filter((n) => n.props.clickable).map((n) => [n.backendNodeId, n.description]);
  assert.deepEqual(marked, [[20, undefined], [30, 'Code view'], [50, undefined], [90, undefined]]);
  assert.equal(t.calls('DOMSnapshot.captureSnapshot'), 1);
  // It is asked before the walk (with the document's size).
  const methods = t.chrome.commands.map((c) => c.method);
  assert.ok(methods.indexOf('DOMSnapshot.captureSnapshot') < methods.indexOf('Accessibility.getRootAXNode'));
  // A snapshot that fails marks nothing and the read goes on.
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => { throw new Error('boom'); });
  const again = await t.read();
  assert.equal(again.ok, true);
  assert.equal(again.value.nodes.filter((n) => n.props.clickable).length, 0);
  assert.equal(again.value.frameOwners, undefined, 'a failed snapshot cannot tell');
});

test('a whole read counts the frame owners of its document from the same snapshot', async () => {
  const t = await granted();
  serve(t, [node('1', 'RootWebArea', 'A', { backendDOMNodeId: 1 })]);
  const strings = ['F1', 'C9', '#document', 'HTML', 'iframe', 'EMBED', 'DIV', 'IFRAME'];
  // The main document: two owners by name (an XHTML one in lower case), and
  // a DIV that holds a content document all the same; a child frame's own
  // IFRAME is not the main document's.
  const main = { frameId: 0, nodes: { backendNodeId: [1, 2, 3, 4, 5], parentIndex: [-1, 0, 1, 1, 1], nodeType: [9, 1, 1, 1, 1],
    nodeName: [2, 3, 4, 5, 6], contentDocumentIndex: { index: [2, 4], value: [1, 1] } } };
  const child = { frameId: 1, nodes: { backendNodeId: [6, 7], parentIndex: [-1, 0], nodeType: [9, 1], nodeName: [2, 7] } };
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ strings, documents: [main, child] }));
  const r = await t.read();
  assert.equal(r.value.frameOwners, 3);
  assert.equal(t.calls('DOMSnapshot.captureSnapshot'), 1);
  // No owner at all: 0, which tells the broker not to list frames.
  main.nodes = { backendNodeId: [1, 2], parentIndex: [-1, 0], nodeType: [9, 1], nodeName: [2, 6] };
  assert.equal((await t.read()).value.frameOwners, 0);
  // A read from an element says nothing of the document's frames.
  const from = await t.read({ backendNodeId: 1 });
  assert.equal(from.ok, true);
  assert.equal(from.value.frameOwners, undefined);
});

test('a read marks the elements with a press listener of their own, and the items of one that listens for a grab', async () => {
  const t = await granted();
  const ids = [1, 10, 20, 30, 31, 32, 40, 41, 42, 43, 50, 51, 52, 60, 70];
  serve(t, [node('r', 'RootWebArea', 'A', { childIds: ids.slice(1).map(String), backendDOMNodeId: 1 }),
    ...ids.slice(1).map((id) => node(String(id), 'generic', '', { backendDOMNodeId: id }))]);
  const strings = ['F1', '#document', 'BODY', 'LABEL', 'UL', 'LI', 'DIV', 'class', 'card', 'bar', 'SPAN'];
  // body(10) > label(20, dblclick), ul(30, pointerdown) > li(31), li(32);
  // div(40, mousedown) > div.card(41), div.card(42), div.bar(43);
  // div(50, keydown) > span(51), span(52); span(60, touchstart); span(70)
  // under body, which listens for mousedown.
  const names = { 1: 1, 10: 2, 20: 3, 30: 4, 31: 5, 32: 5, 40: 6, 41: 6, 42: 6, 43: 6, 50: 6, 51: 10, 52: 10, 60: 10, 70: 10 };
  const parents = { 1: -1, 10: 0, 20: 1, 30: 1, 31: 3, 32: 3, 40: 1, 41: 6, 42: 6, 43: 6, 50: 1, 51: 10, 52: 10, 60: 1, 70: 1 };
  const attrs = { 41: [7, 8], 42: [7, 8], 43: [7, 9] };
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ strings, documents: [{ frameId: 0, nodes: {
    backendNodeId: ids, parentIndex: ids.map((id) => parents[id]), nodeType: ids.map((id) => (id === 1 ? 9 : 1)),
    nodeName: ids.map((id) => names[id]), attributes: ids.map((id) => attrs[id] ?? []),
  } }] }));
  const listeners = [['dblclick', 20], ['pointerdown', 30], ['mousedown', 40], ['keydown', 50], ['touchstart', 60], ['mousedown', 10], ['mousedown', 1]];
  // The main frame's document is its main world's, asked before the
  // snapshot: the listeners are read before the snapshot answers.
  t.chrome.cdp.set('Runtime.evaluate', (p) => {
    assert.deepEqual(p, { expression: 'document' });
    return { result: { type: 'object', objectId: 'doc' } };
  });
  const snapshot = t.chrome.cdp.get('DOMSnapshot.captureSnapshot');
  let snapped = false;
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', async (p) => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    snapped = true;
    return snapshot(p);
  });
  t.chrome.cdp.set('DOMDebugger.getEventListeners', ({ objectId, depth, pierce }) => {
    assert.deepEqual([objectId, depth, pierce, snapped], ['doc', -1, true, false]);
    return { listeners: listeners.map(([type, backendNodeId]) => ({ type, backendNodeId, useCapture: false })) };
  });
  t.chrome.cdp.set('Runtime.releaseObject', () => ({}));
  const marked = async () => {
    const id = t.request('ax.read', { lease: t.lease(1), request: {} });
    for (let i = 0; i < 200 && !t.port.response(id); i++) await new Promise((resolve) => setTimeout(resolve, 1));
    return t.port.response(id).value.nodes.filter((n) => n.props.clickable).map((n) => n.backendNodeId);
  };
  // The body, the label and the span listen themselves; the list's items,
  // and the cards (not the one bar), are what the list's and the div's
  // grab listeners are for.
  assert.deepEqual(await marked(), [10, 20, 31, 32, 41, 42, 60]);
  assert.equal(t.calls('DOMDebugger.getEventListeners'), 1);
  assert.equal(t.calls('DOM.resolveNode'), 0);
  assert.equal(t.calls('Runtime.releaseObject'), 1);
  // A listener read that fails marks what the snapshot shows (nothing here).
  t.chrome.cdp.set('DOMDebugger.getEventListeners', () => { throw new Error('boom'); });
  assert.deepEqual(await marked(), []);
});

test('a read of the whole document adds the drawn clickable elements that aria-hidden keeps out of the tree, with their DOM identity', async () => {
  const t = await granted();
  serve(t, [node('r', 'RootWebArea', 'A', { childIds: ['2'], backendDOMNodeId: 1 }), node('2', 'generic', '', { backendDOMNodeId: 30 })]);
  const strings = ['F1', '#document', 'BODY', 'DIV', 'SPAN', 'aria-hidden', 'true', 'role', 'Button  x', 'aria-label', '  Fold\n rows 1-3 ',
    'title', 'Tip', 'tabindex', '0', 'pointer', 'auto', 'false'];
  // body(10) > div(20, aria-hidden) > span(21, a pointer, role and label),
  // span(22, a pointer, no box), div(24, aria-hidden="false") > span(23,
  // a tab stop with a title); div(30, a pointer, in the tree) > span(31).
  const ids = [1, 10, 20, 21, 22, 24, 23, 30, 31];
  const parents = [-1, 0, 1, 2, 2, 2, 5, 1, 7];
  const names = [1, 2, 3, 4, 4, 3, 4, 3, 4];
  const attrs = [[], [], [5, 6], [7, 8, 9, 10, 11, 12], [7, 8], [5, 17], [13, 14, 11, 12], [], []];
  const cursors = [16, 16, 15, 15, 16, 16, 15, 16];
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ strings, documents: [{ frameId: 0,
    nodes: { backendNodeId: ids, parentIndex: parents, nodeType: ids.map((id) => (id === 1 ? 9 : 1)), nodeName: names, attributes: attrs },
    layout: { nodeIndex: [1, 2, 3, 4, 5, 6, 7, 8], styles: cursors.map((c) => [c]),
      bounds: [[0, 0, 800, 600], [0, 0, 40, 100], [30, 0, 11, 14], [30, 14, 0, 0], [0, 20, 40, 14], [0, 20, 20, 14], [50, 0, 100, 20], [50, 0, 10, 10]] },
  }] }));
  const r = (await t.read()).value;
  assert.deepEqual(r.nodes.filter((n) => n.axId.startsWith('hidden-')), [
    { axId: 'hidden-21', backendNodeId: 21, role: 'button', name: 'Fold rows 1-3', ignored: false, props: { clickable: true } },
    { axId: 'hidden-23', backendNodeId: 23, role: 'generic', name: 'Tip', ignored: false, props: { clickable: true } },
  ]);
  assert.deepEqual(r.nodes.filter((n) => n.props.clickable).map((n) => n.backendNodeId), [30, 21, 23]);
  // A read of a subtree adds none.
  const sub = (await t.read({ backendNodeId: 30 })).value;
  assert.deepEqual(sub.nodes.map((n) => n.axId), ['2']);
});

// trees are AX trees of every shape the walk handles: ignored nodes, inline
// text boxes, props, a password field and its inner text, and a child it
// must fetch because the whole tree does not list it.
const trees = () => {
  const editable = [{ name: 'editable', value: { type: 'token', value: 'plaintext' } }];
  return {
    mixed: [
      node('1', 'RootWebArea', 'A', { childIds: ['2', '5', '6'], backendDOMNodeId: 1 }),
      { nodeId: '2', ignored: true, role: { value: 'none' }, childIds: ['3', '4'] },
      node('3', 'button', 'Save', { backendDOMNodeId: 30, properties: [{ name: 'focusable', value: { type: 'booleanOrUndefined', value: true } }] }),
      node('4', 'StaticText', 'hello', { childIds: ['-9'] }),
      node('-9', 'InlineTextBox', 'hello'),
      node('5', 'checkbox', 'Agree', { properties: [{ name: 'checked', value: { type: 'tristate', value: 'mixed' } }] }),
      node('6', 'textbox', 'Password', { backendDOMNodeId: 60, value: { value: 'hunter2' }, properties: editable, childIds: ['7'] }),
      node('7', 'StaticText', 'hunter2'),
    ],
    wide: [node('1', 'list', 'L', { childIds: Array.from({ length: 300 }, (_, i) => `k${i}`) }),
      ...Array.from({ length: 300 }, (_, i) => node(`k${i}`, 'listitem', `${i}`, { childIds: [`t${i}`] })),
      ...Array.from({ length: 300 }, (_, i) => node(`t${i}`, 'StaticText', `item ${i}`))],
    deep: Array.from({ length: 100 }, (_, i) => node(`${i}`, 'group', `${i}`, i < 99 ? { childIds: [`${i + 1}`] } : {})),
  };
};

test('a small document is read with one getFullAXTree, and reads as the walk does', async () => {
  for (const [name, nodes] of Object.entries(trees())) {
    const t = await granted();
    t.chrome.cdp.set('DOM.describeNode', () => ({ node: { nodeName: 'INPUT', attributes: ['type', 'password'] } }));
    serve(t, nodes);
    const walked = (await t.read()).value;
    assert.equal(t.calls('Accessibility.getFullAXTree'), 0, name);
    const before = t.chrome.commands.length;
    serveBulk(t, nodes, READ.bulkMaxNodes);
    const bulk = (await t.read()).value;
    assert.deepEqual(bulk, walked, name);
    const calls = t.chrome.commands.slice(before).map((c) => c.method).filter((m) => m !== 'Page.getFrameTree' && m !== 'DOM.describeNode');
    // The size (the renderer's nodes, the document's elements), the
    // document for the listener read (which fails here), the clickable
    // elements' snapshot, the tree: nothing else.
    assert.deepEqual(calls, ['Performance.getMetrics', 'Runtime.evaluate', 'Runtime.evaluate', 'DOMSnapshot.captureSnapshot', 'Accessibility.getFullAXTree'], name);
  }
});

test('a document past the bulk size, or of unknown size, is walked', async () => {
  const nodes = trees().mixed;
  const t = await granted();
  t.chrome.cdp.set('DOM.describeNode', () => ({ node: { nodeName: 'INPUT', attributes: ['type', 'password'] } }));
  serveBulk(t, nodes, READ.bulkMaxNodes + 1);
  const walked = (await t.read()).value;
  assert.equal(t.calls('Accessibility.getFullAXTree'), 0);
  assert.ok(t.calls('Accessibility.getChildAXNodes') > 0);
  t.chrome.cdp.set('Performance.getMetrics', () => { throw new Error('Performance agent is not enabled'); });
  assert.deepEqual((await t.read()).value, walked);
  t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Documents', value: 1 }] }));
  assert.deepEqual((await t.read()).value, walked);
  assert.equal(t.calls('Accessibility.getFullAXTree'), 0);
  // Past the bound, the document's own elements, counted by an evaluation
  // without side effects (V8 refuses one that might have some).
  const counted = [];
  const elements = (answer) => t.chrome.cdp.set('Runtime.evaluate', (p) => {
    if (p.expression === 'document') throw new Error('no listeners here');
    counted.push(p);
    return answer();
  });
  t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Nodes', value: 50_000 }] }));
  elements(() => ({ result: { type: 'number', value: READ.bulkMaxNodes / 2 + 1 } }));
  assert.deepEqual((await t.read()).value, walked);
  assert.equal(t.calls('Accessibility.getFullAXTree'), 0);
  assert.deepEqual(counted.at(-1), { expression: "document.getElementsByTagName('*').length", returnByValue: true, throwOnSideEffect: true, silent: true });
  elements(() => ({ result: { type: 'object', className: 'EvalError' }, exceptionDetails: { text: 'Uncaught' } }));
  assert.deepEqual((await t.read()).value, walked);
  assert.equal(t.calls('Accessibility.getFullAXTree'), 0);
  // The bfcache's pages, other tabs of the site: the nodes say big, the
  // document's elements say small.
  elements(() => ({ result: { type: 'number', value: READ.bulkMaxNodes / 2 } }));
  assert.deepEqual((await t.read()).value, walked);
  assert.equal(t.calls('Accessibility.getFullAXTree'), 1);
});

test('a bulk read keeps the budgets, and fetches what the whole tree does not list', async () => {
  const t = await granted();
  const kids = Array.from({ length: 3000 }, (_, i) => node(`k${i}`, 'listitem', `${i}`));
  serveBulk(t, [node('1', 'list', 'L', { childIds: kids.map((k) => k.nodeId) }), ...kids], 10);
  const r = (await t.read()).value;
  assert.equal(r.nodes.length, BUDGET.nodes);
  assert.equal(r.truncated, true);
  assert.equal(t.calls('Accessibility.getChildAXNodes'), 0);
  // A child the whole tree leaves out (another document's) is fetched.
  const nodes = [node('1', 'RootWebArea', 'A', { childIds: ['2'] }), node('2', 'iframe', 'F', { childIds: ['3'] }), node('3', 'button', 'In')];
  serveBulk(t, nodes, 10);
  t.chrome.cdp.set('Accessibility.getFullAXTree', () => ({ nodes: nodes.slice(0, 2) }));
  assert.deepEqual((await t.read()).value.nodes.map((n) => n.name), ['A', 'F', 'In']);
  assert.equal(t.calls('Accessibility.getChildAXNodes'), 1);
});

test('a bulk read asks for the frame tree after its last call, before the answers: the renderer runs them in turn', async () => {
  const t = await granted();
  const editable = [{ name: 'editable', value: { type: 'token', value: 'plaintext' } }];
  const nodes = [node('1', 'RootWebArea', 'A', { childIds: ['2'], backendDOMNodeId: 1 }), node('2', 'button', 'Go', { backendDOMNodeId: 20 })];
  serveBulk(t, nodes, 10);
  t.chrome.cdp.set('Runtime.evaluate', () => ({ result: { type: 'object', objectId: 'doc' } }));
  t.chrome.cdp.set('DOMDebugger.getEventListeners', () => ({ listeners: [] }));
  t.chrome.cdp.set('Runtime.releaseObject', () => ({}));
  t.chrome.cdp.set('DOM.describeNode', () => ({ node: { nodeName: 'INPUT', attributes: ['type', 'text'] } }));
  // Every answer of the read waits, so that what was sent before it shows.
  let answered = 0;
  for (const m of ['DOMSnapshot.captureSnapshot', 'Accessibility.getFullAXTree', 'DOMDebugger.getEventListeners']) {
    const answer = t.chrome.cdp.get(m);
    t.chrome.cdp.set(m, async (p) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      answered++;
      return answer(p);
    });
  }
  const seen = []; // how many of those had answered at each frame tree
  const frameTree = t.chrome.cdp.get('Page.getFrameTree');
  t.chrome.cdp.set('Page.getFrameTree', (p, tabId) => {
    seen.push(answered);
    return frameTree(p, tabId);
  });
  const read = async () => {
    const before = t.chrome.commands.length;
    const id = t.request('ax.read', { lease: t.lease(1), request: {} });
    for (let i = 0; i < 200 && !t.port.response(id); i++) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.equal(t.port.response(id).ok, true);
    return t.chrome.commands.slice(before).map((c) => c.method);
  };
  // The frame tree before, the read's calls, the frame tree after them:
  // nothing was answered when it went (the snapshot answers first, 5 ms on).
  const calls = (await read()).filter((m) => m !== 'Runtime.releaseObject');
  assert.deepEqual([calls[0], calls.at(-1)], ['Page.getFrameTree', 'Page.getFrameTree']);
  assert.deepEqual(calls.slice(1, -1).sort(), ['Accessibility.getFullAXTree', 'DOMDebugger.getEventListeners', 'DOMSnapshot.captureSnapshot',
    'Performance.getMetrics', 'Runtime.evaluate', 'Runtime.evaluate']);
  assert.deepEqual(seen, [0, 0]);
  // A field that may be a password is asked about once the tree came, after
  // that frame tree: another one follows it.
  nodes[1] = node('2', 'textbox', 'Name', { backendDOMNodeId: 20, value: { value: 'Ada' }, properties: editable });
  const secret = (await read()).filter((m) => m !== 'Runtime.releaseObject');
  assert.deepEqual(secret.slice(-3), ['Page.getFrameTree', 'DOM.describeNode', 'Page.getFrameTree']);
  // A walk asks for it once its answers came, as before.
  t.chrome.cdp.set('Performance.getMetrics', () => ({ metrics: [{ name: 'Nodes', value: READ.bulkMaxNodes + 1 }] }));
  const walk = await read();
  assert.equal(walk.filter((m) => m === 'Page.getFrameTree').length, 2);
  assert.equal(walk.at(-1), 'Page.getFrameTree');
});

test('a bulk read that spans a navigation is read again, then refused', async () => {
  const t = await granted();
  serveBulk(t, [node('1', 'RootWebArea', 'A', { backendDOMNodeId: 1 })], 10);
  let loader = 0;
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: { frame: { id: 'F1', loaderId: `L${++loader}`, url: 'https://a.test/' } } }));
  assert.equal((await t.read()).code, 'STALE_TARGET');
  assert.equal(t.calls('Accessibility.getFullAXTree'), 2);
  assert.equal(t.calls('Page.getFrameTree'), 4 + 1); // and the grant's
});

test('a bulk read of a child frame asks for that frame\'s tree; a subtree read still walks', async () => {
  const t = await granted();
  serveBulk(t, [node('1', 'RootWebArea', 'Child', { childIds: ['2'] }), node('2', 'button', 'Inside', { backendDOMNodeId: 20 })], 10);
  const frame = (id, loaderId, childFrames = []) => ({ frame: { id, loaderId, url: 'https://a.test/x', securityOrigin: 'https://a.test' }, childFrames });
  const tree = frame('F1', 'L1', [frame('C1', 'LC')]);
  tree.frame.url = 'https://a.test/';
  t.chrome.cdp.set('Page.getFrameTree', () => ({ frameTree: tree }));
  const trees = t.calls('Page.getFrameTree');
  const r = (await t.read({ frame: { frameId: 'C1', loaderId: 'LC' } })).value;
  assert.deepEqual(r.nodes.map((n) => n.name), ['Child', 'Inside']);
  // One tree before the read and one after: the main document's checks and
  // the frame's share them.
  assert.equal(t.calls('Page.getFrameTree') - trees, 2);
  assert.deepEqual(t.chrome.commands.find((c) => c.method === 'Accessibility.getFullAXTree').params, { frameId: 'C1' });
  assert.equal(t.calls('Runtime.evaluate'), 0); // the main world's document is not the frame's: neither its elements nor its listeners
  const sub = (await t.read({ backendNodeId: 20 })).value;
  assert.deepEqual(sub.nodes.map((n) => n.name), ['Inside']);
  assert.equal(t.calls('Accessibility.getFullAXTree'), 1);
});

test('a gone document in a bulk read is STALE_TARGET', async () => {
  const t = await granted();
  serveBulk(t, [node('1', 'RootWebArea', 'A')], 10);
  t.chrome.cdp.set('Accessibility.getFullAXTree', () => { throw new Error('Frame with the given id was not found.'); });
  assert.equal((await t.read()).code, 'STALE_TARGET');
  t.chrome.cdp.set('Accessibility.getFullAXTree', () => ({ nodes: [] }));
  assert.equal((await t.read()).code, 'STALE_TARGET');
});

// buttons is a page of n buttons, each with its label's StaticText, whose
// label text is `label(i)`, and options for every button.
function buttons(n, label = (i) => `B ${i}`, extra = () => ({})) {
  const nodes = [node('r', 'RootWebArea', 'A', { childIds: Array.from({ length: n }, (_, i) => `b${i}`) })];
  for (let i = 0; i < n; i++) {
    nodes.push(node(`b${i}`, 'button', label(i), { backendDOMNodeId: i + 1, childIds: [`t${i}`], ...extra(i) }));
    nodes.push(node(`t${i}`, 'StaticText', label(i)));
  }
  return nodes;
}

test('a read stops once the projection is full: 120 controls and 240 text fragments', async () => {
  const t = await granted();
  serve(t, buttons(300));
  const r = (await t.read()).value;
  // 120 buttons fill the controls, the labels of 240 fill the text.
  assert.equal(r.nodes.length, 1 + 240 * 2);
  assert.deepEqual(r.nodes.at(-1), { axId: 't239', parentAxId: 'b239', role: 'StaticText', name: 'B 239', ignored: false, props: {} });
  assert.equal(r.truncated, true);
  assert.ok(t.calls('Accessibility.getChildAXNodes') <= 1 + 240 + 8, `${t.calls('Accessibility.getChildAXNodes')} calls`); // 8 fetched ahead
  // One node fewer and the projection is not full: all of it is read.
  const small = await granted();
  serve(small, buttons(239));
  const all = (await small.read()).value;
  assert.equal(all.nodes.length, 1 + 239 * 2);
  assert.equal(all.truncated, false);
});

test('a read goes on while the projection would keep less than its counts say', async () => {
  const cases = {
    // Hidden controls and text are not shown: they do not fill anything.
    hidden: buttons(300).map((n) => (Number(n.nodeId.slice(1)) < 100 ? { ...n, properties: [{ name: 'hidden', value: { value: true } }] } : n)),
    // A name past 1,000 characters is dropped from the observation.
    long: buttons(300, (i) => (i < 100 ? 'x'.repeat(1001) : `B ${i}`)),
    // 240 fragments past 32 KiB: the projection keeps fewer.
    bytes: buttons(300, (i) => `${i} ${'y'.repeat(200)}`),
    // White space alone is no text fragment, in Go's sense of white space.
    blank: [node('r', 'RootWebArea', 'A', { childIds: ['list', 'blank'] }), ...buttons(130).slice(1).map((n) => (n.nodeId === 'r' ? n : n)),
      node('blank', 'group', '', { childIds: Array.from({ length: 300 }, (_, i) => `s${i}`) }),
      ...Array.from({ length: 300 }, (_, i) => node(`s${i}`, 'StaticText', '\u0085\u00a0\u3000 '))],
  };
  cases.blank[0].childIds = ['blank', ...Array.from({ length: 130 }, (_, i) => `b${i}`)];
  for (const [name, nodes] of Object.entries(cases)) {
    const t = await granted();
    serve(t, nodes);
    const r = (await t.read()).value;
    const all = nodes.filter((n) => n.role.value !== 'InlineTextBox').length;
    assert.equal(r.nodes.length, Math.min(all, BUDGET.nodes), name);
  }
});

test('a find is not cut at the projection\'s budgets', async () => {
  const t = await granted();
  serve(t, buttons(300));
  t.chrome.tabs_.get(1).active = false; // a find then walks
  const found = (await t.find({ name: 'B 299' })).value;
  assert.deepEqual(found.nodes.map((n) => n.axId), ['b299', 't299']);
});

test('an element clickable by the page\'s doing fills no control of the projection: it may hold one', async () => {
  // 300 clickable wrappers, each around a button and four fragments of
  // text: the broker gives the buttons refs, not the wrappers, so the
  // projection's controls fill at the 120th button, not the 60th.
  const nodes = [node('r', 'RootWebArea', 'A', { childIds: Array.from({ length: 300 }, (_, i) => `w${i}`), backendDOMNodeId: 1 })];
  for (let i = 0; i < 300; i++) {
    nodes.push(node(`w${i}`, 'generic', '', { backendDOMNodeId: 1000 + i, childIds: [`b${i}`, `x${i}`] }));
    nodes.push(node(`b${i}`, 'button', `B ${i}`, { backendDOMNodeId: 2000 + i, childIds: [`t${i}`] }));
    nodes.push(node(`t${i}`, 'StaticText', `B ${i}`));
    nodes.push(node(`x${i}`, 'paragraph', '', { childIds: [0, 1, 2].map((k) => `x${i}.${k}`) }));
    for (const k of [0, 1, 2]) nodes.push(node(`x${i}.${k}`, 'StaticText', `text ${i}.${k}`));
  }
  const t = await granted();
  serve(t, nodes);
  const ids = Array.from({ length: 300 }, (_, i) => 1000 + i);
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ strings: ['F1', 'DIV'], documents: [{ frameId: 0,
    nodes: { backendNodeId: ids, parentIndex: ids.map(() => -1), nodeType: ids.map(() => 1), nodeName: ids.map(() => 1), isClickable: { index: ids.map((_, i) => i) } } }] }));
  const r = (await t.read()).value;
  assert.equal(r.nodes.filter((n) => n.props.clickable).length > 100, true);
  assert.ok(r.nodes.some((n) => n.axId === 'b119'), 'the 120th button was not read');
  assert.equal(r.truncated, true);
});

// lateMarks has the clickable snapshot answer only once the walk has made
// k getChildAXNodes calls (at once for 0, and at the latest 30 ms after it
// was asked), so that the marks come at any point of a walk.
function lateMarks(t, k) {
  const snapshot = t.chrome.cdp.get('DOMSnapshot.captureSnapshot');
  const kids = t.chrome.cdp.get('Accessibility.getChildAXNodes');
  let release;
  let n = 0;
  t.chrome.cdp.set('DOMSnapshot.captureSnapshot', (p) => new Promise((resolve, reject) => {
    n = 0;
    release = () => {
      try {
        resolve(snapshot(p));
      } catch (e) {
        reject(e);
      }
    };
    setTimeout(release, 30);
    if (k === 0) release();
  }));
  t.chrome.cdp.set('Accessibility.getChildAXNodes', (p) => {
    if (++n === k) release?.();
    return kids(p);
  });
}

test('the clickable marks are read beside the walk: whenever they come, the read is the one they give from the start', async (c) => {
  // Wrappers clickable by the page's doing, each around a button and
  // text: with their marks the projection is not full at the 120th button
  // (the wrappers' names may take its bytes), without them it is.
  const wrapped = [node('r', 'RootWebArea', 'A', { childIds: Array.from({ length: 300 }, (_, i) => `w${i}`), backendDOMNodeId: 1 })];
  for (let i = 0; i < 300; i++) {
    wrapped.push(node(`w${i}`, 'generic', '', { backendDOMNodeId: 1000 + i, childIds: [`b${i}`, `x${i}`] }));
    wrapped.push(node(`b${i}`, 'button', `B ${i}`, { backendDOMNodeId: 2000 + i, childIds: [`t${i}`] }));
    wrapped.push(node(`t${i}`, 'StaticText', `B ${i}`));
    wrapped.push(node(`x${i}`, 'StaticText', `text ${i}`));
  }
  const marked = Array.from({ length: 300 }, (_, i) => 1000 + i);
  // A wide list of groups that runs into the call budget, its items marked.
  const wide = [node('1', 'list', 'L', { childIds: Array.from({ length: 600 }, (_, i) => `g${i}`), backendDOMNodeId: 1 })];
  for (let i = 0; i < 600; i++) wide.push(node(`g${i}`, 'group', '', { childIds: [`c${i}`], backendDOMNodeId: 10 + i }), node(`c${i}`, 'text', `${i}`));
  const cases = {
    wrapped: { nodes: wrapped, marked },
    buttons: { nodes: buttons(300), marked: Array.from({ length: 300 }, (_, i) => i + 1) },
    wide: { nodes: wide, marked: Array.from({ length: 600 }, (_, i) => 10 + i) },
    mixed: { nodes: trees().mixed, marked: [30, 60] },
  };
  // Subtree reads wait for the snapshot's sizes, which come at any point
  // here: a read whose sizes came sooner may read by subtrees, which is
  // another way and a test of its own. They are off.
  const subtreeMax = READ.subtreeMax;
  READ.subtreeMax = 0;
  c.after(() => { READ.subtreeMax = subtreeMax; });
  for (const [name, { nodes, marked: ids }] of Object.entries(cases)) {
    const reads = [];
    for (const k of [0, 1, 2, 10, 100, 250, 1000]) {
      const t = await granted();
      t.chrome.cdp.set('DOM.describeNode', () => ({ node: { nodeName: 'INPUT', attributes: ['type', 'text'] } }));
      serve(t, nodes);
      t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => ({ strings: ['F1', 'DIV'], documents: [{ frameId: 0, nodes: {
        backendNodeId: [1, ...ids], parentIndex: [-1, ...ids.map(() => 0)], nodeType: [9, ...ids.map(() => 1)], nodeName: [1, ...ids.map(() => 1)],
        isClickable: { index: ids.map((_, i) => i + 1) } } }] }));
      // The listener read answers too: its calls count toward the budget.
      t.chrome.cdp.set('Runtime.evaluate', () => ({ result: { type: 'object', objectId: 'doc' } }));
      t.chrome.cdp.set('DOMDebugger.getEventListeners', () => ({ listeners: [] }));
      t.chrome.cdp.set('Runtime.releaseObject', () => ({}));
      lateMarks(t, k);
      const before = t.chrome.commands.length;
      const id = t.request('ax.read', { lease: t.lease(1), request: {} });
      for (let i = 0; i < 2000 && !t.port.response(id); i++) await new Promise((resolve) => setTimeout(resolve, 1));
      const res = t.port.response(id);
      assert.equal(res?.ok, true, `${name}: ${JSON.stringify(res)}`);
      const r = res.value;
      await new Promise((resolve) => setTimeout(resolve, 0)); // the release of the listener read
      const calls = t.chrome.commands.slice(before).filter((c) => c.method !== 'Page.getFrameTree').length;
      reads.push({ k, r, calls });
    }
    for (const { k, r, calls } of reads.slice(1)) {
      assert.deepEqual(r, reads[0].r, `${name}: marks after ${k} calls`);
      assert.equal(calls, reads[0].calls, `${name}: marks after ${k} calls`);
    }
    assert.ok(reads[0].r.nodes.some((n) => n.props.clickable), name);
    assert.ok(reads[0].calls <= BUDGET.calls, name);
  }
});

test('a wide node\'s children come one by one by their DOM node, and the read is the one of all at once', async () => {
  // IDs as Chromium's: a DOM node's AX node has its backend node ID.
  const el = (id, role, name, extra = {}) => node(String(id), role, name, { backendDOMNodeId: id, ...extra });
  const page = (kids, more) => [el(1, 'RootWebArea', 'A', { childIds: ['2'] }), el(2, 'main', '', { childIds: kids.map(String) }), ...more];
  // Sections of buttons, then 990 paragraphs: the projection is full
  // within the sections.
  const sections = [];
  const sectionIds = Array.from({ length: 10 }, (_, s) => 100 + s);
  sectionIds.forEach((id, s) => {
    const buttonIds = Array.from({ length: 30 }, (_, i) => 1000 + s * 100 + i);
    sections.push(el(id, 'region', `S ${s}`, { childIds: buttonIds.map(String) }));
    for (const b of buttonIds) sections.push(el(b, 'button', `B ${b}`, { childIds: [`${b + 50_000}`] }), el(b + 50_000, 'StaticText', `B ${b}`));
  });
  const paragraphs = Array.from({ length: 990 }, (_, i) => 200_000 + i);
  const big = page([...sectionIds, ...paragraphs], [...sections,
    ...paragraphs.flatMap((p) => [el(p, 'paragraph', '', { childIds: [`${p + 1_000_000}`] }), el(p + 1_000_000, 'StaticText', `Paragraph ${p}`)])]);
  // Ignored children with children, children without a DOM node (negative
  // IDs) and children that went away, all read whole.
  const odd = [];
  const oddIds = Array.from({ length: 100 }, (_, i) => (i % 10 === 3 ? -(i + 1) : 3000 + i));
  for (const id of oddIds) {
    if (id % 7 === 0) continue; // gone
    if (id < 0) odd.push(node(String(id), 'StaticText', `pseudo ${id}`));
    else if (id % 2) odd.push({ nodeId: String(id), backendDOMNodeId: id, ignored: true, role: { value: 'none' }, childIds: [`${id + 10_000}`] }, el(id + 10_000, 'link', `L ${id}`));
    else odd.push(el(id, 'checkbox', `C ${id}`));
  }
  const gone = page(oddIds, odd);
  // Three wide lists, all read: the singles run out in the second.
  const lists = [];
  const listIds = [500, 501, 502];
  listIds.forEach((l, k) => {
    const items = Array.from({ length: 70 }, (_, i) => 5000 + k * 100 + i);
    lists.push(el(l, 'list', `L ${k}`, { childIds: items.map(String) }), ...items.map((i) => el(i, 'listitem', '')));
  });
  const many = page(listIds, lists);
  const cases = { big, gone, many };
  for (const [name, nodes] of Object.entries(cases)) {
    const byId = new Map(nodes.map((n) => [n.nodeId, n]));
    const answers = [];
    for (const wide of [Infinity, READ.wide]) {
      const t = await granted();
      serve(t, nodes);
      // getChildAXNodes lists an ignored child's children too, as Chromium does.
      t.chrome.cdp.set('Accessibility.getChildAXNodes', ({ id }) => ({ nodes: (byId.get(id).childIds ?? []).flatMap((c) => {
        const n = byId.get(c);
        if (!n) return [];
        return n.ignored ? [n, ...(n.childIds ?? []).map((k) => byId.get(k))] : [n];
      }) }));
      t.chrome.cdp.set('Accessibility.getPartialAXTree', ({ backendNodeId, fetchRelatives }) => {
        assert.equal(fetchRelatives, false);
        const n = byId.get(String(backendNodeId));
        if (!n) throw new Error('No node with given id found');
        return { nodes: [n] };
      });
      const saved = READ.wide;
      READ.wide = wide;
      try {
        answers.push({ r: (await t.read()).value, single: t.calls('Accessibility.getPartialAXTree'), all: t.chrome.commands.filter((c) => c.method === 'Accessibility.getChildAXNodes' && c.params.id === '2').length });
      } finally {
        READ.wide = saved;
      }
    }
    const [whole, single] = answers;
    assert.deepEqual(single.r, whole.r, name);
    assert.ok(single.single > 0, name);
    assert.ok(single.single <= READ.singles, name);
    if (name === 'big') {
      assert.equal(single.all, 0, 'the paragraphs were never fetched');
      assert.equal(whole.r.truncated, true);
    }
    if (name === 'gone') assert.equal(single.all, 1, 'what could not come singly came with all the children');
  }
});

test('a subtree of a shown tab is read with one queryAXTree, and the read is the walk\'s', async () => {
  const el = (id, role, name, extra = {}) => node(String(id), role, name, { backendDOMNodeId: id, ...extra });
  // Sections of list items, each an ignored wrapper around a StaticText
  // and its inline text box; a section's DOM subtree is 31 nodes.
  const nodes = [el(1, 'RootWebArea', 'A', { childIds: ['2'] }), el(2, 'main', '', { childIds: ['10', '11', '12', '13', '14'] })];
  for (let s = 10; s < 15; s++) {
    const items = Array.from({ length: 10 }, (_, i) => s * 100 + i * 3);
    nodes.push(el(s, 'list', `L ${s}`, { childIds: items.map(String) }));
    for (const i of items) {
      nodes.push({ nodeId: String(i), backendDOMNodeId: i, ignored: true, role: { value: 'none' }, childIds: [String(i + 1)] });
      nodes.push(el(i + 1, 'StaticText', `item ${i}`, { childIds: [`-${i}`] }), node(`-${i}`, 'InlineTextBox', `item ${i}`));
    }
  }
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  // The DOM: every AX node of a DOM node, under its nearest such ancestor.
  const parentOf = new Map(nodes.flatMap((n) => (n.childIds ?? []).map((c) => [c, n.nodeId])));
  const dom = nodes.filter((n) => n.backendDOMNodeId);
  const snapshot = (owners) => ({ strings: ['F1', 'DIV', 'IFRAME'], documents: [{ frameId: 0, nodes: {
    backendNodeId: dom.map((n) => n.backendDOMNodeId), parentIndex: dom.map((n) => dom.findIndex((p) => p.nodeId === parentOf.get(n.nodeId))),
    nodeType: dom.map(() => 1), nodeName: dom.map((n) => (owners && n.nodeId === '14' ? 2 : 1)) } }] });
  // queryAXTree gives an ignored node its own role (here one the walk
  // would not look under) where the other calls say none.
  const subtree = (id) => {
    const n = byId.get(id);
    const self = n.ignored ? { ...n, role: { type: 'role', value: 'StaticText' }, name: { type: 'computedString', value: '' } } : n;
    return [self, ...(n.childIds ?? []).flatMap(subtree)];
  };
  const read = async ({ shown = true, owners = false, answer = true } = {}) => {
    const t = await granted();
    serve(t, nodes);
    t.chrome.cdp.set('DOMSnapshot.captureSnapshot', () => snapshot(owners));
    t.chrome.cdp.set('Accessibility.queryAXTree', ({ backendNodeId, accessibleName, role }) => {
      assert.deepEqual([accessibleName, role], [undefined, undefined]);
      if (answer === 'fail') throw new Error('Node not found');
      return answer ? { nodes: subtree(String(backendNodeId)) } : new Promise(() => {});
    });
    if (!shown) t.chrome.tabs_.get(1).active = false;
    const id = t.request('ax.read', { lease: t.lease(1), request: {} });
    for (let i = 0; i < 2000 && !t.port.response(id); i++) await new Promise((resolve) => setTimeout(resolve, 1));
    const res = t.port.response(id);
    assert.equal(res?.ok, true, JSON.stringify(res));
    return { r: res.value, queries: t.chrome.commands.filter((c) => c.method === 'Accessibility.queryAXTree').map((c) => c.params.backendNodeId),
      kids: t.calls('Accessibility.getChildAXNodes') };
  };
  const walked = await read({ shown: false });
  assert.deepEqual(walked.queries, [], 'a tab not shown is walked');
  assert.equal(walked.r.nodes.length, 2 + 5 + 50);
  // Shown: a section (31 DOM nodes) in one call once the snapshot told
  // the sizes; main (157) is past READ.subtreeMax here.
  const saved = { ...READ };
  try {
    READ.subtreeMax = 100;
    const queried = await read();
    assert.deepEqual(queried.r, walked.r);
    assert.ok(queried.queries.length >= 1 && queried.queries.every((b) => b >= 10 && b < 15), `${queried.queries}`);
    assert.ok(queried.kids < walked.kids, `${queried.kids} < ${walked.kids}`);
    // A document with frames: walked.
    assert.deepEqual((await read({ owners: true })).queries, []);
    // A query that fails, or one never answered: the walk goes on the
    // other way.
    const failed = await read({ answer: 'fail' });
    assert.deepEqual(failed.r, walked.r);
    assert.ok(failed.queries.length >= 1);
    READ.subtreeWait = 20;
    const late = await read({ answer: false });
    assert.deepEqual(late.r, walked.r);
    assert.ok(late.queries.length >= 1);
  } finally {
    Object.assign(READ, saved);
  }
});
