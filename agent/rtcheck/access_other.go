//go:build !linux

package rtcheck

import "errors"

// canWrite is only implemented on Linux.
func canWrite(path string) error {
	return errors.New("cannot check write access on this platform")
}
