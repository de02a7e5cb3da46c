package spikes

import "github.com/ecagent/ecagent/contract"

// Class is a bounded class of causes (contract.SpikeClass).
type Class = contract.SpikeClass

// The classes of causes, under the names attribution uses.
const (
	ClassHost         = contract.SpikeHost
	ClassTask         = contract.SpikeTask
	ClassSelf         = contract.SpikeCycleProcess
	ClassIRQ          = contract.SpikeIRQ
	ClassSoftirq      = contract.SpikeSoftirq
	ClassKernelWork   = contract.SpikeKernelWork
	ClassKernelMemory = contract.SpikeKernelMemory
	ClassThrottling   = contract.SpikeThrottling
	ClassUnknown      = contract.SpikeUnknown
)

// Cause is one cause of a spike (contract.SpikeCause).
type Cause = contract.SpikeCause

// Spike is one late cycle, explained (contract.CycleSpike).
type Spike = contract.CycleSpike
