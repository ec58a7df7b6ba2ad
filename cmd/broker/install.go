package main

import (
	"context"
	"fmt"
	"io"
)

func runInstall(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "broker install: not wired yet")
	return 1
}

func runUninstall(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "broker uninstall: not wired yet")
	return 1
}
