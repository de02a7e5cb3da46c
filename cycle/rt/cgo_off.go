//go:build !cgo

package rt

// cgoThreads says that the runtime starts its threads through the C
// library; without cgo it allocates their small stacks itself.
const cgoThreads = false
