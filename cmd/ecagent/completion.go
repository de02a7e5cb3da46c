package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// completionCommand prints a completion script for bash or zsh: the
// commands, IgH's names, and each command's flags, asked of the command
// itself (its --help) when the user completes a flag.
func completionCommand(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "completion", help{
		usage: "bash|zsh",
		about: "Print a shell completion script: commands, IgH's command names and each command's flags.",
		examples: []string{
			"source <(ecagent completion bash)             # this shell",
			"ecagent completion zsh > \"${fpath[1]}/_ecagent\"",
		},
	})
	pos, err := parseArgs(fs, args, 1, 1, "bash or zsh")
	if err != nil {
		return err
	}
	var words []string
	for _, c := range commands() {
		words = append(words, c.name)
	}
	for a := range igHAliases() {
		words = append(words, a)
	}
	sort.Strings(words)
	list := strings.Join(words, " ")
	switch pos[0] {
	case "bash":
		fmt.Fprintf(e.stdout, bashCompletion, list)
	case "zsh":
		// zsh runs the bash function through bashcompinit.
		fmt.Fprintf(e.stdout, "#compdef ecagent\nautoload -U +X bashcompinit && bashcompinit\n"+bashCompletion, list)
	default:
		return usageError{fmt.Errorf("completion: %q: want bash or zsh", pos[0])}
	}
	return nil
}

// bashCompletion completes the command at the first word, and flags after
// it from the command's own help (the flags it shows there).
const bashCompletion = `# ecagent completion (ecagent completion bash)
_ecagent() {
	local cur=${COMP_WORDS[COMP_CWORD]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "%s help" -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		local flags
		flags=$(ecagent "${COMP_WORDS[1]}" --help 2>/dev/null | grep -oE -- '(^| )--?[a-z][a-z0-9.-]*' | tr -d ' ' | sort -u)
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _ecagent ecagent
`
