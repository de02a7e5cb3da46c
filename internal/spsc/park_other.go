//go:build !linux

package spsc

import "time"

// parking has no places where there is no eventfd: waiters sleep (poll).
type parking struct{}

type place struct{}

func (*parking) take() *place     { return nil }
func (*parking) release(*place)   {}
func (*parking) wakeAll()         {}
func (*place) arm()               {}
func (*place) park(time.Duration) {}
func (*place) disarm()            {}
