package config

import (
	"fmt"
	"os"
	"strings"
)

// IsESIDevice reports whether a bus.devices entry names a device of an ESI
// file (ETG.2000 device description): FILE.xml[:DEVICE][@REVISION], the
// file's name ending in .xml in any case (see the simulator's
// NewESIDevice).
func IsESIDevice(device string) bool {
	return esiFile(device) != ""
}

// esiFile returns the file of an ESI device entry, "" for another entry.
func esiFile(device string) string {
	i := strings.LastIndex(strings.ToLower(device), ".xml")
	if i < 0 {
		return ""
	}
	if rest := device[i+4:]; rest != "" && rest[0] != ':' && rest[0] != '@' {
		return ""
	}
	return device[:i+4]
}

// esiProblems reports bus.esi entries that are neither a directory nor a
// regular file.
func esiProblems(paths []string, source string) []error {
	var errs []error
	for i, p := range paths {
		info, err := os.Stat(p)
		problem := ""
		switch {
		case err != nil:
			problem = fileProblem(p)
		case !info.IsDir() && !info.Mode().IsRegular():
			problem = "neither a directory nor a regular file"
		}
		if problem != "" {
			errs = append(errs, &FieldError{Key: fmt.Sprintf("bus.esi[%d]", i), Value: p, Source: source,
				Problem: "cannot read the ESI directory or file: " + problem})
		}
	}
	return errs
}
