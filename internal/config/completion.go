package config

import (
	"fmt"
	"strings"
)

// The shell completions of sshfsm, from the declarations of the switches,
// the -o options and the subcommands: bash, zsh and fish.

// optionWords are the words -o completes to: NAME for a flag, NAME= for an
// option with a free value, NAME=VALUE for each value of an enumeration.
func optionWords() []string {
	var words []string
	for _, o := range Options() {
		if o.Prefix {
			continue
		}
		for _, n := range append([]string{o.Name}, o.Aliases...) {
			switch {
			case len(o.Values) > 0:
				for _, v := range o.Values {
					words = append(words, n+"="+v)
				}
			case o.HasValue():
				words = append(words, n+"=")
			default:
				words = append(words, n)
			}
		}
	}
	return words
}

// switchWords are every switch of the mount command.
func switchWords() []string {
	var words []string
	for _, s := range Switches() {
		words = append(words, s.Names...)
	}
	return words
}

func subcommandWords() []string {
	words := []string{"help", "version"}
	for _, s := range Subcommands() {
		words = append(words, s.Name)
	}
	return words
}

// fileSwitches take a file argument.
var fileSwitches = []string{"-F", configSwitch}

// BashCompletion returns the bash completion script.
func BashCompletion() string {
	return `# bash completion for sshfsm; generated from internal/config.
_sshfsm() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local opts="` + strings.Join(optionWords(), " ") + `"
    case $prev in
        -o)
            # Complete the last of a comma-separated list.
            local head=
            [[ $cur == *,* ]] && head=${cur%,*},
            COMPREPLY=($(compgen -P "$head" -W "$opts" -- "${cur##*,}"))
            compopt -o nospace 2>/dev/null
            return ;;
        ` + strings.Join(fileSwitches, "|") + `)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        -p)
            return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "` + strings.Join(switchWords(), " ") + `" -- "$cur"))
        return
    fi
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "` + strings.Join(subcommandWords(), " ") + `" -- "$cur"))
    fi
    COMPREPLY+=($(compgen -d -- "$cur"))
}
complete -F _sshfsm sshfsm
`
}

// ZshCompletion returns the zsh completion function (file _sshfsm).
func ZshCompletion() string {
	var specs []string
	for _, o := range Options() {
		if o.Prefix {
			continue
		}
		for _, n := range append([]string{o.Name}, o.Aliases...) {
			switch {
			case len(o.Values) > 0:
				specs = append(specs, fmt.Sprintf("'%s:value:(%s)'", n, strings.Join(o.Values, " ")))
			case o.HasValue():
				specs = append(specs, fmt.Sprintf("'%s:%s: '", n, zshQuote(o.Arg)))
			default:
				specs = append(specs, "'"+n+"'")
			}
		}
	}
	return `#compdef sshfsm
# zsh completion for sshfsm; generated from internal/config.
_sshfsm() {
  _arguments -s \
    '*-o+[mount options]:option:_values -s , option ` + strings.Join(specs, " ") + `' \
    '-F+[ssh configuration file]:file:_files' \
    '--config=[config file]:file:_files' \
    '-p+[ssh port]:port: ' \
    '-C[compress the ssh stream]' \
    '-f[stay in the foreground]' \
    '(-d --debug)'{-d,--debug}'[log every request, foreground]' \
    '(-v --verbose)'{-v,--verbose}'[log state changes]' \
    '-s[ignored]' \
    '(- *)'{-h,--help}'[print help]' \
    '(- *)'{-V,--version}'[print the version]' \
    '(- *)--man[print the manual page]' \
    '1: :(` + strings.Join(subcommandWords(), " ") + `)' \
    '*:mountpoint or file:_files -/'
}
_sshfsm "$@"
`
}

func zshQuote(s string) string {
	return strings.NewReplacer(":", `\:`, "'", "", "[", `\[`, "]", `\]`).Replace(s)
}

// FishCompletion returns the fish completion script.
func FishCompletion() string {
	var b strings.Builder
	b.WriteString("# fish completion for sshfsm; generated from internal/config.\n")
	b.WriteString("function __sshfsm_options\n")
	b.WriteString("    set -l head (string replace -r '[^,]*$' '' -- (commandline -ct))\n")
	b.WriteString("    for o in " + strings.Join(optionWords(), " ") + "\n")
	b.WriteString("        echo $head$o\n    end\nend\n")
	b.WriteString("complete -c sshfsm -s o -x -a '(__sshfsm_options)' -d 'mount option'\n")
	for _, s := range Switches() {
		if s.Names[0] == "-o" {
			continue
		}
		var flags []string
		for _, n := range s.Names {
			if strings.HasPrefix(n, "--") {
				flags = append(flags, "-l "+n[2:])
			} else {
				flags = append(flags, "-s "+n[1:])
			}
		}
		switch {
		case contains(fileSwitches, s.Names[0]):
			flags = append(flags, "-r -F")
		case s.Arg != "":
			flags = append(flags, "-x")
		}
		fmt.Fprintf(&b, "complete -c sshfsm %s -d %s\n", strings.Join(flags, " "), fishQuote(firstSentence(s.Help)))
	}
	fmt.Fprintf(&b, "complete -c sshfsm -n '__fish_use_subcommand' -a '%s'\n", strings.Join(subcommandWords(), " "))
	return b.String()
}

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// firstSentence is the start of help, up to its first full stop or colon.
func firstSentence(help string) string {
	if i := strings.IndexAny(help, ".;:("); i > 0 {
		return strings.TrimSpace(help[:i])
	}
	return help
}
