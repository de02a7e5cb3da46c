package rtcheck

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// canWrite asks the kernel whether this process, with its effective IDs and
// capabilities, may open path for writing, without opening it.
func canWrite(path string) error {
	if err := unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("access %s: %w", path, err)
	}
	return nil
}
