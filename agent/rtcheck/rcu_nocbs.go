package rtcheck

func rcuNocbsCheck() check {
	return check{id: "rcu_nocbs", title: "RCU callbacks off the cycle core (rcu_nocbs)", run: checkRcuNocbs}
}

// checkRcuNocbs passes when rcu_nocbs= covers the cycle core, or nohz_full=
// does (the kernel offloads RCU callbacks from tickless CPUs as well).
func checkRcuNocbs(h *host) verdict {
	return cpuListParamCheck(h, "rcu_nocbs", "nohz_full")
}
