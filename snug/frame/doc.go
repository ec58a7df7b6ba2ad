// Package frame is Part I of the Snug protocol on the host's side: the
// thirteen postMessage frames between a sandboxed micro-app and its host,
// parsed, checked and answered by the rules R1–R7 and C1.
//
// The runner page routes each message by its event.source, the app's
// iframe, and relays it as raw JSON text. The host keeps one [Instance] per
// iframe and hands it every frame from that iframe ([Instance.Receive]);
// the Instance sends every frame to the iframe through the function it was
// given. [Parse] and [Encode] are the codec underneath, usable alone.
//
// # Where each rule is enforced
//
//   - R1 versioning: [Parse] refuses v ≠ 1 with UNSUPPORTED_VERSION and a
//     broken frame with MALFORMED, recovering its requestId when the raw
//     frame carried a string of 1–128 characters. [Error.Answer] is the
//     "answer on the wire or stay silent" decision: only a request type with
//     a recovered id is answered; Receive sends it, unless that requestId is
//     in flight.
//   - R2 additivity: Parse ignores non-Snug messages and unknown snug:* types
//     ([ErrIgnored]) and unknown members of known frames, except on the
//     strict frames net-request, net-response, open-url-request and
//     open-url-result, where an unknown key rejects.
//   - R3 terminal frame: a [Pending] request gets exactly one terminal
//     answer, whatever ends it (the answer, a cancel, a supersede, an
//     over-size or invalid answer replaced by an error, [Pending.Close]);
//     streaming frames are cumulative ([Pending.Stream]) and stop with it.
//   - R4 identity: [Instance] mints the instanceId ([NewInstanceID]), drops
//     frames for any other one ([ErrStale]), supersedes every request in
//     flight on a re-announce or a reload (SUPERSEDED) and keeps requestIds
//     unique per instance ([ErrDuplicate]). appId is display metadata.
//   - R5 codes: [Codes], [NetCodes], and MALFORMED ([CodeMalformed]).
//   - R6 limits: Parse checks a frame's size class on its raw bytes first
//     ([Type.SizeLimit]); Encode refuses an over-size frame, and Pending
//     turns an over-size answer into NET_SIZE_EXCEEDED (net) or HOST_ERROR.
//     The parse-failure budget is package chat's.
//   - R7 push hints: a host-event is sent only as a [Hint], made of
//     references, integers and booleans: it cannot carry content.
//   - C1: a net-request with a credential-shaped header ([StripHeaders]) is
//     MALFORMED; [IsWhitelistedResponseHeader] bounds what a net-response
//     may carry back.
//
// §3 and §4's prose rules, which the published schemas cannot express, are
// checked by Parse as well: no body on GET or HEAD; an open-url URL that
// parses, is https: and carries no userinfo.
//
// # Conformance
//
// The published schemas are in protocol/snug. The tests hold Parse to them
// on golden frames and deterministic mutations (protocol/testdata/
// snug-vectors.json), the prose rules above excepted, each by name.
package frame
