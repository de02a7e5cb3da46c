package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setLinkUp sets the interface ifname administratively up or down
// (SIOCSIFFLAGS, as `ip link set IF up|down`); needs CAP_NET_ADMIN. On a
// veth pair the peer loses its carrier while this end is down.
func setLinkUp(ifname string, up bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("set %s up=%v: socket: %w", ifname, up, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(ifname)
	if err != nil {
		return fmt.Errorf("set %s up=%v: %w", ifname, up, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set %s up=%v: SIOCGIFFLAGS: %w", ifname, up, err)
	}
	flags := ifr.Uint16()
	if up {
		flags |= unix.IFF_UP
	} else {
		flags &^= unix.IFF_UP
	}
	ifr.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set %s up=%v: SIOCSIFFLAGS: %w", ifname, up, err)
	}
	return nil
}
