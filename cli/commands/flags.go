package commands

import (
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
)

// newFlagSet is a command's flag set; errors are reported by Run.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses flags anywhere among the arguments (the flag package
// stops at the first argument that is not a flag) and returns the others
// in order. After "--" everything is an argument.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageErrorf("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// multiFlag is a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// triFlag is a yes/no flag that may also be left to the service:
// --split is true, --split=false false, --split=auto (or no flag) unset.
type triFlag struct {
	v     *bool
	raw   string
	given bool
}

func (t *triFlag) String() string   { return t.raw }
func (t *triFlag) IsBoolFlag() bool { return true }

func (t *triFlag) Set(s string) error {
	t.raw, t.given = s, true
	if strings.EqualFold(s, "auto") {
		t.v = nil
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true, false or auto")
	}
	t.v = &b
	return nil
}
