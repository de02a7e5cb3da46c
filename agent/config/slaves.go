package config

import "github.com/ecagent/ecagent/contract"

// The items of bus.slaves: the cycle process reads them as they are (see
// package contract).
type (
	// Slave is an item of bus.slaves.
	Slave = contract.Slave
	// StartupSDO is an item of bus.slaves[].sdos.
	StartupSDO = contract.StartupSDO
	// InitCmd is an item of bus.slaves[].initcmds.
	InitCmd = contract.InitCmd
)
