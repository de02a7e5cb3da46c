package config

import (
	"bytes"
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/contract"
	yamlv3 "go.yaml.in/yaml/v3"
)

// YAML returns c as a YAML document with every key, in schema order, each
// preceded by its help text as a comment (for `ecagent run --print-config`).
// Durations are written in the form Load reads back ("250us", "10ms"), so
// the output is itself a valid configuration file.
func (c Config) YAML() ([]byte, error) {
	s := newSchema()
	root := &yamlv3.Node{Kind: yamlv3.MappingNode}
	for _, f := range s.fields {
		parent := root
		segments := strings.Split(f.key, ".")
		for i, seg := range segments[:len(segments)-1] {
			parent = childMapping(parent, seg, s.sectionHelp(strings.Join(segments[:i+1], ".")))
		}
		value, err := valueNode(f.get(&c))
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", f.key, err)
		}
		parent.Content = append(parent.Content,
			&yamlv3.Node{Kind: yamlv3.ScalarNode, Value: segments[len(segments)-1], HeadComment: comment(f.help)},
			value)
	}
	doc := &yamlv3.Node{Kind: yamlv3.DocumentNode, Content: []*yamlv3.Node{root},
		HeadComment: comment("ecagent configuration. Environment variables ECAGENT_<SECTION>_<KEY> and flags --<section>.<key> override this file.")}

	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("config: encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: encode YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// childMapping returns the mapping under key in parent, creating it (with
// help as its comment) if needed.
func childMapping(parent *yamlv3.Node, key, help string) *yamlv3.Node {
	for i := 0; i+1 < len(parent.Content); i += 2 {
		if parent.Content[i].Value == key {
			return parent.Content[i+1]
		}
	}
	child := &yamlv3.Node{Kind: yamlv3.MappingNode}
	parent.Content = append(parent.Content,
		&yamlv3.Node{Kind: yamlv3.ScalarNode, Value: key, HeadComment: comment(help)},
		child)
	return child
}

// valueNode encodes one typed value.
func valueNode(v any) (*yamlv3.Node, error) {
	scalar := func(tag, value string) *yamlv3.Node {
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: tag, Value: value}
	}
	switch v := v.(type) {
	case string:
		return scalar("!!str", v), nil
	case int:
		return scalar("!!int", strconv.Itoa(v)), nil
	case bool:
		return scalar("!!bool", strconv.FormatBool(v)), nil
	case time.Duration:
		return scalar("!!str", formatDuration(v)), nil
	case contract.Duration:
		return scalar("!!str", formatDuration(time.Duration(v))), nil
	case []string:
		seq := &yamlv3.Node{Kind: yamlv3.SequenceNode, Style: yamlv3.FlowStyle}
		for _, item := range v {
			seq.Content = append(seq.Content, scalar("!!str", item))
		}
		return seq, nil
	case uint16: // object indexes read best in hex
		return scalar("!!int", fmt.Sprintf("0x%04X", v)), nil
	case encoding.TextMarshaler:
		text, err := v.MarshalText()
		if err != nil {
			return nil, err
		}
		return scalar("!!str", string(text)), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice: // a list of mappings, or of text values inside one
		seq := &yamlv3.Node{Kind: yamlv3.SequenceNode}
		if rv.Len() == 0 || rv.Type().Elem().Implements(textMarshalerType) {
			seq.Style = yamlv3.FlowStyle
		}
		for i := range rv.Len() {
			n, err := valueNode(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			seq.Content = append(seq.Content, n)
		}
		return seq, nil
	case reflect.Struct:
		return structNode(rv)
	}
	return nil, fmt.Errorf("unsupported type %T", v)
}

// structNode encodes an item of a list of mappings by its koanf tags. Of a
// struct with a kind (a drive's target), only the fields that kind uses are
// written.
func structNode(rv reflect.Value) (*yamlv3.Node, error) {
	fields := structFields(rv)
	kind := ""
	for _, f := range fields {
		if f.name == "kind" && f.value.Kind() == reflect.String {
			kind = f.value.String()
		}
	}
	m := &yamlv3.Node{Kind: yamlv3.MappingNode}
	for _, f := range fields {
		if f.use != "" && !slices.Contains(strings.Split(f.use, ","), kind) {
			continue
		}
		n, err := valueNode(f.value.Interface())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		m.Content = append(m.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: f.name}, n)
	}
	return m, nil
}

// comment wraps text into "# "-prefixed lines of at most 74 columns (before indentation).
func comment(text string) string {
	if text == "" {
		return ""
	}
	var lines []string
	line := "#"
	for word := range strings.FieldsSeq(text) {
		if len(line)+1+len(word) > 74 && line != "#" {
			lines = append(lines, line)
			line = "#"
		}
		line += " " + word
	}
	return strings.Join(append(lines, line), "\n")
}
