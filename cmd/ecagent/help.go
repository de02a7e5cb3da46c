package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// helpWidth is the widest line a command's --help prints.
const helpWidth = 80

// help is what `ecagent COMMAND --help` prints, on one screen: a usage
// line, one sentence, the flags in groups with one short line each, notes
// and examples. The full text of every configuration key is in
// `ecagent config schema`.
type help struct {
	usage    string      // the arguments after "ecagent COMMAND"
	about    string      // what the command does, one sentence
	groups   []flagGroup // the flags shown; nil shows every flag under "Flags:"
	notes    string      // a short paragraph after the flags, or ""
	examples []string    // command lines, optionally with a "# comment"
}

// flagGroup is a titled group of flags in a help.
type flagGroup struct {
	title string
	flags []string // flag names without "--"
}

// newFlagSet returns a flag set for a subcommand whose --help prints h.
// Every flag it parses stays accepted whether or not h shows it.
func newFlagSet(e *env, name string, h help) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.SortFlags = false
	fs.Usage = func() { h.write(e.stdout, name, fs) }
	if e.flagSets != nil {
		e.flagSets(fs)
	}
	return fs
}

// write prints the help of the command name whose flags are fs.
func (h help) write(w io.Writer, name string, fs *pflag.FlagSet) {
	var b strings.Builder
	b.WriteString(wrap(h.usage, "Usage: ecagent "+name+" ", helpWidth))
	b.WriteString("\n")
	b.WriteString(wrap(h.about, "", helpWidth))
	groups := h.groups
	if groups == nil {
		var all []string
		fs.VisitAll(func(f *pflag.Flag) { all = append(all, f.Name) })
		groups = []flagGroup{{title: "Flags", flags: all}}
	}
	var shown []*pflag.Flag
	for _, g := range groups {
		for _, n := range g.flags {
			f := fs.Lookup(n)
			if f == nil {
				panic(fmt.Sprintf("ecagent %s --help shows --%s, which it does not have", name, n))
			}
			shown = append(shown, f)
		}
	}
	col := 0
	for _, f := range shown {
		col = max(col, len(flagTerm(f)))
	}
	for _, g := range groups {
		if len(g.flags) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		for _, n := range g.flags {
			f := fs.Lookup(n)
			term := flagTerm(f)
			line := "  " + term + strings.Repeat(" ", col-len(term)) + "  "
			b.WriteString(wrap(flagSummary(f), line, helpWidth))
		}
	}
	if h.notes != "" {
		b.WriteString("\n")
		b.WriteString(wrap(h.notes, "", helpWidth))
	}
	if len(h.examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, ex := range h.examples {
			b.WriteString("  " + ex + "\n")
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// flagTerm is a flag as help shows it: "--cycle.period duration".
func flagTerm(f *pflag.Flag) string {
	varname, _ := pflag.UnquoteUsage(f)
	term := "--" + f.Name
	if f.Shorthand != "" {
		term = "-" + f.Shorthand + ", " + term
	}
	if varname == "" {
		return term
	}
	return term + " " + varname
}

// flagSummary is a flag's usage and its default, which wrap keeps on one
// line. Of a configuration key's usage, which goes on after a semicolon or
// a sentence and names the environment variable, it is the first clause:
// `ecagent config schema` shows all of it.
func flagSummary(f *pflag.Flag) string {
	_, usage := pflag.UnquoteUsage(f)
	if i := strings.Index(usage, " (env "); i >= 0 { // a configuration key
		usage = usage[:i]
		for _, sep := range []string{"; ", "\n"} {
			if i := strings.Index(usage, sep); i >= 0 {
				usage = usage[:i]
			}
		}
		if m := sentenceEnd.FindStringIndex(usage); m != nil {
			usage = usage[:m[0]+1]
		}
	}
	def := f.DefValue
	switch {
	case def == "" || def == "0" || def == "0s" || def == "false" || def == "[]" || def == "-1":
		return usage
	case f.Value.Type() == "string":
		def = fmt.Sprintf("%q", def)
	case strings.HasPrefix(def, "[") && len(def) > 30:
		// A long list wraps between its items.
		return usage + " (default " + strings.ReplaceAll(def, ",", ", ") + ")"
	}
	return usage + " " + strings.ReplaceAll("(default "+def+")", " ", nbsp)
}

// sentenceEnd finds the end of a first sentence ("e.g. eth1" is none).
var sentenceEnd = regexp.MustCompile(`\. [A-Z]`)

// nbsp joins words that wrap must not break apart; it prints as a space.
const nbsp = "\u00a0"

// wrap writes text after first (whose width sets the indentation of the
// lines that follow), breaking it at spaces so that no line is wider than
// width, and ends it with a newline. Newlines in text are kept.
func wrap(text, first string, width int) string {
	var b strings.Builder
	indent := strings.Repeat(" ", len(first))
	line := first
	for i, para := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		empty := true
		for word := range strings.FieldsFuncSeq(para, func(r rune) bool { return r == ' ' || r == '\t' }) {
			word = strings.ReplaceAll(word, nbsp, " ")
			if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
				b.WriteString(line + "\n")
				line, empty = indent, true
			}
			if !empty {
				line += " "
			}
			line += word
			empty = false
		}
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}
