package rtcheck

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// kernelParam is one parameter of the kernel command line.
type kernelParam struct {
	name     string // with '-' folded to '_', as the kernel compares names
	value    string // without quotes
	hasValue bool   // "name=value" rather than a bare "name"
}

// kernelParams is the kernel command line in order.
type kernelParams []kernelParam

// parseCmdline splits /proc/cmdline into parameters the way the kernel does:
// white space separates them except inside double quotes, quotes are
// dropped, and "--" ends the kernel's part (what follows goes to init).
func parseCmdline(text string) kernelParams {
	var params kernelParams
	for _, word := range splitCmdline(text) {
		if word == "--" {
			break
		}
		word = strings.ReplaceAll(word, `"`, "")
		name, value, hasValue := strings.Cut(word, "=")
		params = append(params, kernelParam{
			name:     strings.ReplaceAll(name, "-", "_"),
			value:    value,
			hasValue: hasValue,
		})
	}
	return params
}

// splitCmdline splits on white space outside double quotes.
func splitCmdline(text string) []string {
	var words []string
	var b strings.Builder
	quoted := false
	for _, r := range text {
		switch {
		case r == '"':
			quoted = !quoted
			b.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if b.Len() > 0 {
				words = append(words, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		words = append(words, b.String())
	}
	return words
}

// lookup returns the last occurrence of a parameter (the one the kernel
// keeps for most parameters).
func (p kernelParams) lookup(name string) (kernelParam, bool) {
	name = strings.ReplaceAll(name, "-", "_")
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].name == name {
			return p[i], true
		}
	}
	return kernelParam{}, false
}

// String gives "name=value" or "name" for reports.
func (k kernelParam) String() string {
	if !k.hasValue {
		return k.name
	}
	return k.name + "=" + k.value
}

// isolation is a parsed isolcpus= value.
type isolation struct {
	flags []string // as given; empty means the default, "domain"
	cpus  cpuSet
}

// domain reports whether the CPUs are taken out of the scheduler's load
// balancing, which is what isolcpus without flags does.
func (iso isolation) domain() bool {
	if len(iso.flags) == 0 {
		return true
	}
	for _, f := range iso.flags {
		if f == "domain" {
			return true
		}
	}
	return false
}

// parseIsolcpus parses the value of isolcpus=: optional flags (nohz, domain,
// managed_irq) followed by a CPU list, e.g. "managed_irq,domain,2-3". last is
// as for [parseCPUList].
func parseIsolcpus(value string, last int) (isolation, error) {
	var iso isolation
	rest := value
	for rest != "" && unicode.IsLetter(rune(rest[0])) && rest != "N" && !strings.HasPrefix(rest, "N-") && !strings.HasPrefix(rest, "N,") {
		word, after, _ := strings.Cut(rest, ",")
		switch word {
		case "nohz", "domain", "managed_irq":
		default:
			return isolation{}, fmt.Errorf("isolcpus=%s: unknown flag %q", value, word)
		}
		iso.flags = append(iso.flags, word)
		rest = after
	}
	cpus, err := parseCPUList(rest, last)
	if err != nil {
		return isolation{}, fmt.Errorf("isolcpus=%s: %w", value, err)
	}
	iso.cpus = cpus
	return iso, nil
}

// cpuListParamCheck decides the checks of parameters whose value is a plain
// CPU list (nohz_full=, rcu_nocbs=): pass when the list covers the cycle
// core. implied, when non-empty, names another parameter whose CPUs count as
// covered too.
func cpuListParamCheck(h *host, name, implied string) verdict {
	if v, stop := h.coreProblem(); stop {
		return v
	}
	params, err := h.cmdline()
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read the kernel command line: %v", err)}
	}
	last := h.lastCPU()
	param, present := params.lookup(name)
	var cpus cpuSet
	if present && param.hasValue {
		if cpus, err = parseCPUList(param.value, last); err != nil {
			return verdict{status: Fail, found: fmt.Sprintf("%s=%s: %v", name, param.value, err), fix: grubFix(name + "=" + strconv.Itoa(h.core))}
		}
	}
	if cpus.has(h.core) {
		return verdict{status: Pass, found: fmt.Sprintf("%s covers cycle core %d", param, h.core)}
	}
	if implied != "" {
		if other, ok := params.lookup(implied); ok && other.hasValue {
			if impliedCPUs, err := parseCPUList(other.value, last); err == nil && impliedCPUs.has(h.core) {
				return verdict{status: Pass, found: fmt.Sprintf("%s covers cycle core %d (implies %s)", other, h.core, name)}
			}
		}
	}
	found := fmt.Sprintf("no %s= on the kernel command line", name)
	if present {
		found = fmt.Sprintf("%s does not cover cycle core %d", param, h.core)
	}
	return verdict{status: Fail, found: found, fix: grubFix(name + "=" + cpus.union(cpuOf(h.core)).String())}
}
