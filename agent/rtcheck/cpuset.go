package rtcheck

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// maxCPUs bounds the CPU numbers accepted from text, so a corrupt file
// cannot make a set allocate without limit (the kernel's NR_CPUS tops out at
// 8192).
const maxCPUs = 1 << 14

// cpuSet is a set of CPU numbers. The zero value is the empty set.
type cpuSet struct {
	words []uint64
}

func (s *cpuSet) add(cpu int) {
	w := cpu / 64
	for len(s.words) <= w {
		s.words = append(s.words, 0)
	}
	s.words[w] |= 1 << (cpu % 64)
}

func (s cpuSet) has(cpu int) bool {
	w := cpu / 64
	return cpu >= 0 && w < len(s.words) && s.words[w]&(1<<(cpu%64)) != 0
}

func (s cpuSet) count() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

func (s cpuSet) empty() bool { return s.count() == 0 }

// last returns the highest CPU in the set, or -1 when it is empty.
func (s cpuSet) last() int {
	for i := len(s.words) - 1; i >= 0; i-- {
		if s.words[i] != 0 {
			return i*64 + 63 - bits.LeadingZeros64(s.words[i])
		}
	}
	return -1
}

// list returns the CPUs in increasing order.
func (s cpuSet) list() []int {
	var out []int
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, i*64+b)
			w &^= 1 << b
		}
	}
	return out
}

// union returns the CPUs in s or t.
func (s cpuSet) union(t cpuSet) cpuSet {
	var u cpuSet
	for _, c := range s.list() {
		u.add(c)
	}
	for _, c := range t.list() {
		u.add(c)
	}
	return u
}

// without returns s less one CPU.
func (s cpuSet) without(cpu int) cpuSet {
	var u cpuSet
	for _, c := range s.list() {
		if c != cpu {
			u.add(c)
		}
	}
	return u
}

// only reports whether s is exactly {cpu}.
func (s cpuSet) only(cpu int) bool { return s.count() == 1 && s.has(cpu) }

// String formats the set in the kernel's list format, e.g. "0-3,6"; the
// empty set is "none".
func (s cpuSet) String() string {
	cpus := s.list()
	if len(cpus) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

func cpuOf(cpu int) cpuSet {
	var s cpuSet
	s.add(cpu)
	return s
}

// parseCPUList parses the kernel's CPU list format as /sys and the kernel
// command line use it: "0-3,6", "" (empty), ranges with a used/group stride
// ("0-15:2/4" takes the first 2 CPUs of every 4), "N" for the last CPU and
// "all". last is the highest CPU number, needed by "N" and "all"; pass -1
// when unknown and such lists are an error.
func parseCPUList(text string, last int) (cpuSet, error) {
	text = strings.TrimSpace(text)
	var s cpuSet
	if text == "" {
		return s, nil
	}
	if text == "all" {
		if last < 0 {
			return cpuSet{}, fmt.Errorf("cpu list %q: number of CPUs unknown", text)
		}
		for c := 0; c <= last; c++ {
			s.add(c)
		}
		return s, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		if err := s.addListPart(part, last); err != nil {
			return cpuSet{}, fmt.Errorf("cpu list %q: %w", text, err)
		}
	}
	return s, nil
}

// addListPart adds one comma-separated element of a CPU list.
func (s *cpuSet) addListPart(part string, last int) error {
	span, stride, hasStride := strings.Cut(part, ":")
	loText, hiText, isRange := strings.Cut(span, "-")
	lo, err := parseCPUNumber(loText, last)
	if err != nil {
		return err
	}
	hi := lo
	if isRange {
		if hi, err = parseCPUNumber(hiText, last); err != nil {
			return err
		}
	}
	if hi < lo {
		return fmt.Errorf("range %q runs backwards", part)
	}
	used, group := 1, 1
	if hasStride {
		if !isRange {
			return fmt.Errorf("%q: a stride needs a range", part)
		}
		usedText, groupText, ok := strings.Cut(stride, "/")
		used, err = strconv.Atoi(usedText)
		if err != nil || !ok {
			return fmt.Errorf("bad stride in %q", part)
		}
		group, err = strconv.Atoi(groupText)
		if err != nil || used < 1 || group < used {
			return fmt.Errorf("bad stride in %q", part)
		}
	}
	for base := lo; base <= hi; base += group {
		for c := base; c < base+used && c <= hi; c++ {
			s.add(c)
		}
	}
	return nil
}

func parseCPUNumber(text string, last int) (int, error) {
	if text == "N" {
		if last < 0 {
			return 0, fmt.Errorf("%q: number of CPUs unknown", text)
		}
		return last, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 || n >= maxCPUs {
		return 0, fmt.Errorf("bad CPU number %q", text)
	}
	return n, nil
}

// parseCPUMask parses the kernel's hexadecimal CPU mask format as in
// /proc/irq/N/smp_affinity: 32-bit words separated by commas, most
// significant first, e.g. "00000000,0000000f".
func parseCPUMask(text string) (cpuSet, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return cpuSet{}, fmt.Errorf("cpu mask: empty")
	}
	words := strings.Split(text, ",")
	if len(words)*32 > maxCPUs {
		return cpuSet{}, fmt.Errorf("cpu mask %q: too long", text)
	}
	var s cpuSet
	for i, w := range words {
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return cpuSet{}, fmt.Errorf("cpu mask %q: bad word %q", text, w)
		}
		base := (len(words) - 1 - i) * 32
		for v != 0 {
			b := bits.TrailingZeros64(v)
			s.add(base + b)
			v &^= 1 << b
		}
	}
	return s, nil
}
