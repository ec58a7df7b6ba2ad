// Command nativehost is the DSH browser broker's native-messaging host: a
// relay between the MV3 extension (Chrome's stdio) and the broker's Unix
// socket. Chrome starts it through the launcher that `broker install`
// writes, with the caller origin as the first argument:
//
//	nativehost [--config PATH] [--runtime-dir DIR] [--socket PATH] ORIGIN [ignored ...]
//
// It refuses any origin not in the installed allowlist (CONFIG/native-host.json,
// see install.HostConfig), requires the first frame to be a provider hello,
// injects the broker's auth token (RUNTIME/auth-token) into it, connects to
// the broker and then relays frames both ways without interpreting them.
// Stdout carries protocol frames only; logs go to stderr, and
// NATIVEHOST_DEBUG=1 adds a one-line summary of every frame (never its
// params, so never the token).
//
// Exit status: 0 when either side closes the connection or on SIGTERM,
// 1 on a refusal or error, 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
