// The in-page reader's source must stand alone: the driver sends its text
// (String(pageReader)) into a world of the page, where nothing of this
// module exists. Here it runs from its text in a bare context over a
// fake document, so that a reference to anything outside its body fails.
// What it reads in a real page is held to Chromium's tree by
// test/bench/pagereader_test.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { pageReader, removeTags } from '../lib/pagereader.js';

// fakeElement is an element with the few members the reader asks for,
// and listeners it records.
function fakeElement(localName, children = [], attrs = {}) {
  const el = {
    nodeType: 1, localName, tagName: localName.toUpperCase(), namespaceURI: 'http://www.w3.org/1999/xhtml',
    childNodes: children, children: children.filter((c) => c.nodeType === 1), attrs, listeners: [],
    getAttribute: (name) => attrs[name] ?? null,
    hasAttribute: (name) => name in attrs,
    addEventListener(type, fn) { el.listeners.push([type, fn]); },
    removeEventListener(type, fn) { el.listeners = el.listeners.filter(([t, f]) => t !== type || f !== fn); },
    getRootNode: () => doc,
    getBoundingClientRect: () => ({ width: 10, height: 10 }),
    closest: () => null,
    matches: () => false,
    isContentEditable: false,
    tabIndex: 0,
  };
  for (const c of children) c.parentNode = c.parentElement = el;
  return el;
}

const text = (data) => ({ nodeType: 3, data });

// fakeDocument is a document of html and body around children.
function fakeDocument(children) {
  const html = fakeElement('html', [fakeElement('body', children)]);
  const d = {
    nodeType: 9, childNodes: [html], styleSheets: [], designMode: 'off', documentElement: html,
    getElementById: () => null, querySelector: () => null, querySelectorAll: () => [],
    listeners: [],
    addEventListener(type, fn) { d.listeners.push([type, fn]); },
    removeEventListener(type, fn) { d.listeners = d.listeners.filter(([t, f]) => t !== type || f !== fn); },
  };
  html.parentNode = d;
  const own = (n) => n.childNodes?.forEach((c) => {
    c.ownerDocument = d;
    own(c);
  });
  own(d);
  return d;
}

const button = fakeElement('button', [text('Go')]);
const doc = fakeDocument([button]);

// world is a context holding only what a page's world has that the
// reader uses (its own builtins come with it); one context is one world.
// page is its document, now its clock (performance.now).
function world(page = doc, now = () => 0) {
  const style = { display: 'block', visibility: 'visible', cursor: 'auto', whiteSpace: 'normal', textTransform: 'none', content: 'normal' };
  page.createTreeWalker = (root) => {
    const all = [];
    const visit = (n) => n.childNodes?.forEach((c) => {
      if (c.nodeType === 1) {
        all.push(c);
        visit(c);
      }
    });
    visit(root);
    let i = 0;
    return { nextNode: () => all[i++] ?? null };
  };
  const context = vm.createContext({
    document: page, getComputedStyle: () => style, NodeFilter: { SHOW_ELEMENT: 1 }, Node: { DOCUMENT_POSITION_FOLLOWING: 4 },
    performance: { now }, location: { href: 'https://a.test/page#top' },
  });
  return (fn, ...args) => {
    context.args = args;
    return vm.runInContext(`(${String(fn)})(...args)`, context);
  };
}

test('pageReader runs from its source text alone and tags the elements it answers', () => {
  const opts = { tag: 'dsh-t-', budgets: { controls: 120, regions: 24, texts: 240, textBytes: 32768, nodeBytes: 40960 }, listened: [['click']] };
  button.listeners = [];
  doc.listeners = [];
  const answer = JSON.parse(world()(pageReader, opts, button));
  assert.deepEqual(answer.nodes.map((n) => [n.role, n.name, n.el ?? false]), [['button', 'Go', true], ['StaticText', 'Go', false]]);
  assert.equal(answer.nodes[0].props.clickable, true);
  assert.equal(answer.nodes[1].parentAxId, answer.nodes[0].axId);
  assert.equal(answer.truncated, false);
  assert.equal(answer.frameOwners, 0);
  assert.equal(answer.url, 'https://a.test/page#top', 'the document\'s URL as its location has it');
  assert.deepEqual(answer.foreign, []);
  assert.deepEqual(button.listeners.map(([type]) => type), ['dsh-t-0']);
  assert.deepEqual(doc.listeners.map(([type]) => type), ['dsh-t-document']); // the driver tells its listeners apart
});

test('a listened element of another document (a child frame\'s) is named foreign, by its index', () => {
  const inFrame = fakeDocument([fakeElement('button', [text('In a frame')])]).documentElement.children[0].children[0];
  const opts = { tag: 'dsh-t-', listened: [['click'], ['click']] };
  const answer = JSON.parse(world()(pageReader, opts, inFrame, button));
  assert.deepEqual(answer.foreign, [0]);
  assert.deepEqual(answer.nodes.filter((n) => n.role === 'button').map((n) => n.name), ['Go']);
});

test('a second read removes the first read\'s tags, and removeTags its own', () => {
  const opts = { tag: 'dsh-t-', listened: [] };
  button.listeners = [];
  doc.listeners = [];
  const run = world();
  run(pageReader, opts);
  run(pageReader, opts);
  assert.equal(button.listeners.length, 1);
  assert.equal(doc.listeners.length, 1);
  run(removeTags);
  assert.equal(button.listeners.length, 0);
  assert.equal(doc.listeners.length, 0);
});

test('a read stops, truncated, past its time limit: 2 s, the product\'s (its driver passes none)', () => {
  const opts = { tag: 'dsh-t-', listened: [] };
  const two = fakeDocument([fakeElement('button', [text('One')]), fakeElement('button', [text('Two')])]);
  // The clock reads 0 as the read starts (its deadline: 2000 ms), then
  // at the k-th node the walk enters (1 the document, 2 html, 3 body, 4
  // the first button, 5 its text, 6 the second button) 2000 while k is at
  // most entered, and just past it after.
  const read = (entered) => {
    let calls = 0;
    const now = () => (calls++ === 0 ? 0 : calls - 1 <= entered ? 2000 : 2000.001);
    return JSON.parse(world(two, now)(pageReader, opts));
  };
  const whole = read(Infinity); // at the limit, all along
  assert.deepEqual(whole.nodes.map((n) => [n.role, n.name]), [['button', 'One'], ['StaticText', 'One'], ['button', 'Two'], ['StaticText', 'Two']]);
  assert.equal(whole.truncated, false);
  const cut = read(5); // past it from the second button on
  assert.deepEqual(cut.nodes.map((n) => [n.role, n.name]), [['button', 'One'], ['StaticText', 'One']]);
  assert.equal(cut.truncated, true);
});
