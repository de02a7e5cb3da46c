//go:build !linux

package main

import "errors"

// setLinkUp is not supported off Linux.
func setLinkUp(ifname string, up bool) error {
	return errors.New("setting an interface up or down needs Linux")
}
