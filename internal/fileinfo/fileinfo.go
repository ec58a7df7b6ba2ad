// Package fileinfo reads what every private-file check in the broker needs
// to know about a file beyond its mode: its owner and its hard-link count,
// and the open flags that keep a swapped-in symlink or FIFO from being
// followed or blocking.
package fileinfo
