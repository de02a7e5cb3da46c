package cycle

import "os"

// osPID is the process ID recorded in the heartbeat.
func osPID() int { return os.Getpid() }
