// The runner's own dialogs: the page's check before it opens a URL, and
// the words that say where a credential goes (the connect flow shows them
// beside the verbatim requirement).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkOpenURL, injection } from '../snug/dialogs.js';

test('only an https URL without userinfo is opened', () => {
  assert.equal(checkOpenURL('https://example.com/a?b#c'), true);
  for (const bad of ['http://example.com/', 'https://u:p@example.com/', 'https://u@example.com/', 'javascript:alert(1)',
    'data:text/html,x', 'chrome://settings', 'file:///etc/passwd', 'not a url', '']) {
    assert.equal(checkOpenURL(bad), false, bad);
  }
});

test('where the credential goes, per kind and template', () => {
  assert.deepEqual(injection({ kind: 'api_key', fields: [{ key: 'api_key' }] }), ['header X-Api-Key: {{api_key}}']);
  assert.deepEqual(injection({ kind: 'bearer_token', fields: [{ key: 'token' }] }), ['header Authorization: Bearer {{token}}']);
  assert.deepEqual(injection({ kind: 'basic_auth', fields: [{ key: 'u' }, { key: 'p' }] }), ['header Authorization: Basic base64({{u}}:{{p}})']);
  assert.deepEqual(injection({ kind: 'none' }), ['no credential is sent']);
  assert.deepEqual(injection({ kind: 'api_key', request: { headerTemplate: { 'X-Key': '{{k}}' }, queryTemplate: { key: '{{k}}' } } }),
    ['header X-Key: {{k}}', 'query parameter key={{k}}']);
});
