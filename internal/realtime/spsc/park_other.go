//go:build !linux

package spsc

import "time"

// parkPlaces is 0 where there is no timerfd: every waiter sleeps (polls).
const parkPlaces = 0

type parking struct{}

type place struct{}

func (*parking) take() *place         { return nil }
func (*parking) prepare(int)          {}
func (*parking) release(*place)       {}
func (*parking) wakeAll()             {}
func (*place) arm(time.Duration) bool { return false }
func (*place) park()                  {}
func (*place) disarm()                {}
