package main

import (
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/agent/esinames"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/spf13/pflag"
)

// The toolbox's --esi: names, data types and units of PDO entries from
// ESI files, read by the command (never by the cycle process).

// addESIFlag declares --esi on fs.
func addESIFlag(fs *pflag.FlagSet) *[]string {
	return fs.StringSlice("esi", nil, "ESI `DIR`s or files: name each PDO entry, its type and unit from its device's ESI")
}

// esiNamed is one PDO entry of the pdos result as the ESI describes it.
type esiNamed struct {
	Position int    `json:"position"`
	Output   bool   `json:"output"`
	PDO      uint16 `json:"pdo"`
	Index    uint16 `json:"index"`
	SubIndex uint8  `json:"subindex"`
	esinames.Entry
}

// pdosWithESI is the pdos result with the ESI's names (--esi).
type pdosWithESI struct {
	maintenance.PDOsResult
	ESI []esiNamed `json:"esi"`
}

// esiLabels describes the entries of res from the ESI files of paths, for
// the slaves' identities in slaves. A file that cannot be used is
// reported on warn; the others still name their devices.
func esiLabels(paths []string, res maintenance.PDOsResult, slaves maintenance.SlavesResult, warn func(error)) []esiNamed {
	cat, err := esinames.Load(paths)
	if err != nil {
		warn(err)
	}
	var out []esiNamed
	for _, s := range res.Slaves {
		var id *maintenance.SlaveInfo
		for i := range slaves.Slaves {
			if slaves.Slaves[i].Position == s.Position {
				id = &slaves.Slaves[i]
			}
		}
		if id == nil {
			continue
		}
		for _, dir := range []struct {
			output bool
			pdos   []maintenance.PDOInfo
		}{{true, s.RxPDOs}, {false, s.TxPDOs}} {
			for _, p := range dir.pdos {
				for _, en := range p.Entries {
					if en.Index == 0 {
						continue
					}
					if d, ok := cat.Entry(id.Vendor, id.Product, id.Revision, dir.output, p.Index, en.Index, en.SubIndex); ok {
						out = append(out, esiNamed{Position: s.Position, Output: dir.output, PDO: p.Index,
							Index: en.Index, SubIndex: en.SubIndex, Entry: d})
					}
				}
			}
		}
	}
	return out
}

// esiLabel returns the text printed after an entry of printPDOs: the
// ESI's name, type and unit, "" when the ESI does not describe it.
func esiLabel(named []esiNamed, pos int, output bool, pdo uint16, en maintenance.EntryInfo) string {
	for _, n := range named {
		if n.Position == pos && n.Output == output && n.PDO == pdo && n.Index == en.Index && n.SubIndex == en.SubIndex {
			var extra []string
			for _, s := range []string{n.DataType, n.Unit} {
				if s != "" {
					extra = append(extra, s)
				}
			}
			if len(extra) == 0 {
				return fmt.Sprintf("%q", n.Name)
			}
			return fmt.Sprintf("%q (%s)", n.Name, strings.Join(extra, ", "))
		}
	}
	return ""
}
