package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Bounds on the configuration's input. A real configuration is a few
// kilobytes with a few dozen keys per section; these leave room for a
// large segment (bus.devices, bus.pdo, drives) and keep a hostile or
// mistaken input — a 63 MB file of 2 million keys, which yaml.v3 decodes
// in time quadratic in a mapping's keys, a 100 MB value — from holding the
// agent for minutes.
const (
	// MaxFileSize is the largest configuration file read, in bytes.
	MaxFileSize = 1 << 20
	// MaxMappingKeys is the most keys one mapping of the file may have.
	MaxMappingKeys = 256
	// MaxListItems is the most items one list may have.
	MaxListItems = 4096
	// MaxKeyLength is the longest key, in bytes.
	MaxKeyLength = 128
	// MaxValueLength is the longest value (a string, a list item), in
	// bytes, from any layer.
	MaxValueLength = 4096
	// MaxDepth is the deepest nesting of mappings and lists in the file.
	MaxDepth = 16
)

// maxUnknownKeys is how many unknown keys of one layer are reported each
// with a suggestion; the rest are counted in one more error.
const maxUnknownKeys = 20

// readConfigFile reads the YAML layer's file, refusing quickly what is not
// a configuration file: a directory, a file larger than MaxFileSize. A
// FIFO (--config <(…)) is read up to the bound.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		return nil, errors.New("is a directory: want a YAML file")
	case fi.Mode().IsRegular() && fi.Size() > MaxFileSize:
		return nil, tooLarge(fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, tooLarge(int64(len(b)))
	}
	return b, nil
}

// tooLarge is the error of a file of size bytes.
func tooLarge(size int64) error {
	more := ""
	if size > MaxFileSize {
		more = "more than "
	}
	if size == MaxFileSize+1 {
		size = MaxFileSize // read up to the bound only
	}
	return fmt.Errorf("%s%d bytes: a configuration file may have at most %d bytes (1 MiB)", more, size, MaxFileSize)
}

// checkShape walks the parsed file n before anything decodes it and
// returns the first place that exceeds a bound (MaxMappingKeys,
// MaxListItems, MaxKeyLength, MaxValueLength, MaxDepth) or repeats a key,
// naming the key, its line and the bound. Checking duplicate keys here, in
// linear time, spares yaml.v3's quadratic check any large mapping.
func checkShape(n *yamlv3.Node, path string) error {
	return shape(n, path, "", 0)
}

// shape is checkShape below the key prefix ("" at the top, "bus." or
// "drives[0].") at nesting depth.
func shape(n *yamlv3.Node, path, prefix string, depth int) error {
	fail := func(line int, format string, args ...any) error {
		return &FileError{Path: path, Err: fmt.Errorf("line %d: "+format, append([]any{line}, args...)...)}
	}
	key := strings.TrimSuffix(prefix, ".")
	if key == "" {
		key = "the top level"
	}
	if depth > MaxDepth {
		return fail(n.Line, "%s is nested more than %d levels deep", key, MaxDepth)
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			if err := shape(c, path, prefix, depth); err != nil {
				return err
			}
		}
	case yamlv3.MappingNode:
		if k := len(n.Content) / 2; k > MaxMappingKeys {
			return fail(n.Line, "%s is a mapping of %d keys: at most %d are allowed", key, k, MaxMappingKeys)
		}
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if len(k.Value) > MaxKeyLength {
				return fail(k.Line, "a key of %d bytes in %s: at most %d are allowed", len(k.Value), key, MaxKeyLength)
			}
			if line, dup := seen[k.Value]; dup {
				return fail(k.Line, "mapping key %q already defined at line %d", k.Value, line)
			}
			seen[k.Value] = k.Line
			if err := shape(n.Content[i+1], path, prefix+k.Value+".", depth+1); err != nil {
				return err
			}
		}
	case yamlv3.SequenceNode:
		if len(n.Content) > MaxListItems {
			return fail(n.Line, "%s is a list of %d items: at most %d are allowed", key, len(n.Content), MaxListItems)
		}
		for i, c := range n.Content {
			if err := shape(c, path, strings.TrimSuffix(prefix, ".")+"["+strconv.Itoa(i)+"].", depth+1); err != nil {
				return err
			}
		}
	case yamlv3.ScalarNode:
		if len(n.Value) > MaxValueLength {
			return valueTooLong(key, n.Value, fmt.Sprintf("%s:%d", path, n.Line))
		}
	}
	return nil
}

// valueTooLong is the error of a value longer than MaxValueLength.
func valueTooLong(key, value, source string) *FieldError {
	return &FieldError{Key: key, Value: value[:32] + "…", Source: source,
		Problem: fmt.Sprintf("is %d bytes long: at most %d are allowed", len(value), MaxValueLength)}
}

// longValue returns the first string in v (a string or a list) longer
// than MaxValueLength.
func longValue(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, len(v) > MaxValueLength
	case []any:
		for _, e := range v {
			if s, ok := longValue(e); ok {
				return s, true
			}
		}
	case []string:
		for _, s := range v {
			if len(s) > MaxValueLength {
				return s, true
			}
		}
	}
	return "", false
}

// LoadContext is [Load] that returns when ctx is done, with ctx's cause,
// even while the file is still being decoded: an interrupt stops a command
// that is loading its configuration. The load itself is bounded (see
// MaxFileSize) and finishes in the background.
func LoadContext(ctx context.Context, src Sources) (Config, error) {
	type result struct {
		cfg Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := Load(src)
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-ctx.Done():
		return Config{}, fmt.Errorf("config: loading interrupted: %w", context.Cause(ctx))
	}
}
