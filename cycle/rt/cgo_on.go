//go:build cgo

package rt

// cgoThreads says that the runtime starts its threads through the C
// library (a binary built with cgo): each gets a C stack of RLIMIT_STACK,
// 8 MiB by default, mapped in full.
const cgoThreads = true
