// Package hub is Snug hosting in the broker: the snug provider kind's
// service. It owns the user database (STATE/user.snug), serves the snug.*
// client methods (apps and their versions, opening an app, the agent app
// turns go to), and runs every app a runner tab shows.
//
// # Runners
//
// A snug provider is the extension's service worker on a native port of
// its own. It holds runner tabs: extension pages that show one app each in
// a sandboxed iframe (sandbox="allow-scripts", a CSP with no connections).
// The runner page routes the iframe's messages by event.source (R4) and the
// provider relays them; everything else happens here. For each runner the
// hub keeps a frame.Instance (R1–R7: instanceId, host-ready, one terminal
// answer per request, supersede), an appdb.Instance (the app's storage,
// bound to the app the runner was opened for, never to what a frame
// claims) and the app's version and runtime contract.
//
// Messages for a runner travel in pieces (package snug/apps): the app's
// document, its frames both ways and the display metadata, cut so that no
// native message is over 1 MiB while a db frame may be 8 MiB. Pieces from
// the provider arrive as events and are applied in the order sent; pieces
// to it go out through one ordered queue per provider, batched into
// deliver calls.
//
// # Agent turns
//
// An app-message becomes the chat envelope (package snug/chat) and goes to
// the agent the user configured: an OpenAI-compatible endpoint (package
// snug/agent, its key in snug_secrets), or the user's MCP host through
// sampling on a `broker mcp` connection that offered it. The reply streams
// back as cumulative app-response frames (suppressed when the request
// carries a responseSchema) and ends with one terminal frame: the parsed
// object, PARSE_FAILED with the budget's attemptsRemaining, or the agent's
// error. THREAD_CONFLICT is retried after 100, 250 and 500 ms. The turn's
// system instructions come from the version's runtime contract when it is
// valid (package snug/contract), else generic ones.
//
// # The chat panel
//
// Beside each app the runner page shows a chat panel (host chrome, out of
// the app's reach; only a provider the owner's software runs is heard).
// Each message is classified by the same agent into one of the eight
// intents and handled by its lane (package snug/appchat; an unusable
// classification gets a clarifying reply). The data lane reads on a
// read-only throwaway copy holding only the app's tables
// (userdb.DB.Scratch), results bounded before they reach the model; it
// proposes writes as verbatim statements with the rows they change,
// computed on a writable copy, and runs them on live data only when the
// user approves and only if they change exactly those rows
// (userdb.Runtime.Apply): a drift in any row's contents halts them. The
// feature lane saves a new version at once, says that it did not ask, and
// offers the revert. The provider lane sends nothing yet (the executor
// is here; the lane's request prompt and the model-bound scrub are not);
// the answer lane answers in words.
package hub
