// Drives `broker mcp` with the official MCP TypeScript SDK client over stdio,
// as an MCP host would. mcp_test.go starts the broker, Chromium with the
// extension and the /counter page, then runs `node --test test/mcp/` with:
//
//   DSH_BROKER_BIN   the built broker binary
//   DSH_RUNTIME_DIR  that broker's runtime directory
//   DSH_INSTANCE     the connected browser's instance id
//   DSH_PAGE_URL     the URL of the /counter page open in a tab
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const env = {
  bin: process.env.DSH_BROKER_BIN,
  runtimeDir: process.env.DSH_RUNTIME_DIR,
  instance: process.env.DSH_INSTANCE,
  pageURL: process.env.DSH_PAGE_URL,
};
const skip = Object.values(env).some((v) => !v) && 'run through `go test ./test/mcp` (it sets DSH_BROKER_BIN, DSH_RUNTIME_DIR, DSH_INSTANCE, DSH_PAGE_URL)';

let stderr = ''; // of broker mcp, shown when a call fails

function textOf(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
}

// call calls a tool and fails on a tool error, showing its text.
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result);
  assert.ok(!result.isError, `${name} ${JSON.stringify(args)} failed:\n${text}\nbroker mcp stderr:\n${stderr}`);
  return { result, text };
}

function images(result) {
  return result.content.filter((c) => c.type === 'image');
}

const escapeRE = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function find(text, re, what) {
  const m = text.match(re);
  assert.ok(m, `no ${what} in:\n${text}`);
  return m[1];
}

test('an MCP host drives the browser through broker mcp', { skip, timeout: 45_000 }, async (t) => {
  const transport = new StdioClientTransport({
    command: env.bin,
    args: ['mcp', '--runtime-dir', env.runtimeDir],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'node-test-host', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const questions = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params.message);
    return { action: 'accept', content: { answer: 'yes' } };
  });
  await client.connect(transport);
  t.after(() => client.close());

  await t.test('lists the tools with their schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    assert.deepEqual(names, ['app_list', 'app_open', 'app_revert', 'app_save_version', 'app_source', 'app_versions', 'app_write', 'browser_act', 'browser_batch', 'browser_claim', 'browser_frames', 'browser_handoff', 'browser_list', 'browser_navigate', 'browser_observe', 'browser_read_page', 'browser_screenshot', 'terminal_interrupt', 'terminal_list', 'terminal_proposal_state', 'terminal_release_control', 'terminal_request_control', 'terminal_send_key', 'terminal_snapshot', 'terminal_type']);
    const act = tools.find((tool) => tool.name === 'browser_act');
    assert.deepEqual(act.inputSchema.required, ['leaseId', 'documentEpoch', 'action']);
    assert.deepEqual(act.inputSchema.properties.action.properties.kind.enum, ['click', 'fill', 'type', 'append', 'press', 'check', 'select', 'scroll', 'wheel', 'navigate', 'dblclick', 'hover', 'chord', 'drag', 'clickAt']);
    assert.match(act.description, /SAME requestId/);
  });

  const { text: browsers } = await call(client, 'browser_list', {});
  assert.ok(browsers.includes(`instanceId=${env.instance}`), browsers);
  const { text: tabs } = await call(client, 'browser_list', { instanceId: env.instance });
  const tab = find(tabs, new RegExp(`tab=(\\S+) "Counter" ${escapeRE(env.pageURL)}`), 'counter tab');

  const { result: claimed, text: claimText } = await call(client, 'browser_claim', { instanceId: env.instance, tab });
  const leaseId = claimed.structuredContent?.leaseId;
  assert.ok(leaseId, `no leaseId in ${JSON.stringify(claimed)}`);
  assert.equal(claimed.structuredContent.tab, tab);
  assert.ok(!('token' in claimed.structuredContent) && !claimText.includes('token'), 'the lease token leaked');

  const { text: outline } = await call(client, 'browser_observe', { leaseId });
  const add = find(outline, /button "Add one" \[ref=(r[0-9a-f]+)\]/, 'Add one button');
  const documentEpoch = find(outline, /documentEpoch=(\S+)/, 'documentEpoch');
  assert.match(outline, /Clicks: 0/);

  await t.test('clicks "Add one" and sees "Clicks: 1"', async () => {
    const { text } = await call(client, 'browser_act', {
      leaseId, documentEpoch,
      action: { kind: 'click', ref: add, expected: { kind: 'text', text: 'Clicks: 1' } },
    });
    assert.match(text, /: succeeded \(dispatch observed, postcondition passed\)/);
    assert.match(text, /Clicks: 1/);
    assert.match(text, /requestId=mcp-[0-9a-f]+/);
  });

  await t.test('runs a batch step the user approves', async () => {
    const { text: now } = await call(client, 'browser_observe', { leaseId });
    const { text } = await call(client, 'browser_batch', {
      leaseId,
      documentEpoch: find(now, /documentEpoch=(\S+)/, 'documentEpoch'),
      steps: [{ action: { kind: 'click', ref: find(now, /button "Add one" \[ref=(r[0-9a-f]+)\]/, 'Add one'), expected: { text: 'Clicks: 2' } } }],
    });
    assert.match(text, /^batch: succeeded/);
    assert.match(text, /Clicks: 2/);
    assert.equal(questions.length, 1);
    assert.match(questions[0], /batch step 1 of 1 \(index 0\): click button "Add one"/);
  });

  await t.test('a stale documentEpoch says to observe again', async () => {
    const { text } = await call(client, 'browser_act', { leaseId, documentEpoch: 'stale:epoch', action: { kind: 'click', ref: add } });
    assert.match(text, /STALE_TARGET: the page changed: call browser_observe again/);
  });

  await t.test('reads the page in one window', async () => {
    const { text } = await call(client, 'browser_read_page', { leaseId });
    assert.match(text, /^page "Counter" \S+  window 1 \(the last\)\n/);
    assert.match(text, /button "Add one" \[ref=r[0-9a-f]+\]/);
    assert.match(text, /Clicks: \d/);
    assert.doesNotMatch(text, /next:/);
    const stale = await client.callTool({ name: 'browser_read_page', arguments: { leaseId, continuation: 'p0' } });
    assert.ok(stale.isError);
    assert.match(textOf(stale), /STALE_TARGET/);
  });

  await t.test('lists the frames: only the main frame', async () => {
    const { text } = await call(client, 'browser_frames', { leaseId });
    const frames = text.split('\n').filter((line) => /^\s*- frame /.test(line));
    assert.equal(frames.length, 1, text);
    assert.match(frames[0], new RegExp(`^- frame \\S+ ${escapeRE(new URL(env.pageURL).origin)} same-origin main$`));
    assert.match(text, /^frames of tab=\S+: 1 frame\n/);
  });

  await t.test('takes a screenshot with nothing to redact', async () => {
    const { result, text } = await call(client, 'browser_screenshot', { leaseId });
    const [image, ...more] = images(result);
    assert.ok(image && more.length === 0, `not one image in ${JSON.stringify(result.content.map((c) => c.type))}`);
    assert.equal(image.mimeType, 'image/jpeg');
    const jpeg = Buffer.from(image.data, 'base64');
    assert.deepEqual([...jpeg.subarray(0, 3)], [0xff, 0xd8, 0xff], 'no JPEG SOI marker');
    assert.deepEqual([...jpeg.subarray(-2)], [0xff, 0xd9], 'no JPEG EOI marker');
    // A viewport of a small page at quality 70, within the broker's 800,000 base64 characters.
    assert.ok(jpeg.length > 1_000 && jpeg.length <= 600_000, `a JPEG of ${jpeg.length} bytes`);
    assert.match(text, /redaction: no frames redacted/);
    assert.match(text, /image \d+×\d+ px of the viewport /);
    assert.match(text, /use refs from browser_observe, not coordinates/);
  });

  await t.test('hands the tab back', async () => {
    await call(client, 'browser_handoff', { leaseId });
    const result = await client.callTool({ name: 'browser_observe', arguments: { leaseId } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^LEASE_REVOKED: .*claim the tab again/);
  });

  await t.test('no screenshot of a released lease', async () => {
    const result = await client.callTool({ name: 'browser_screenshot', arguments: { leaseId } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^LEASE_REVOKED: /);
    assert.equal(images(result).length, 0, 'an image was returned');
  });
});
