package master

import "time"

// SetStateTimeout replaces m's Config.StateTimeout, which bounds AL state
// transitions and the wait for a mailbox answer. It lets a fuzz target give
// up quickly on a disturbed transfer and still allow an ordinary one its
// time. Only between transfers: nothing else may use m meanwhile.
func (m *Master) SetStateTimeout(d time.Duration) { m.cfg.StateTimeout = d }
