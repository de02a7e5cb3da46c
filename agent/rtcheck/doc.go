// Package rtcheck is the real-time host doctor: it checks the host tuning an
// EtherCAT master needs (PREEMPT_RT kernel, an isolated cycle core, no
// interrupts on it, no frequency or C-state games, a quiet NIC) and says, for
// each check, whether it passes, what it found and the exact command that
// fixes it.
//
// Every check reads /proc and /sys (and /dev, /run) below roots given in
// [Options], so tests point them at fixture trees; the NIC's ethtool settings
// come through the [NICInfo] interface. Nothing here changes the host.
//
// Each check has a stable snake_case ID (see [IDs]); [Run] always returns one
// [Result] per check, in the same order, with [Skip] where a check does not
// apply, so the IDs can label a gauge such as ecagent_rt_check{check="…"}.
package rtcheck
