package settings

import (
	"context"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/services/commands"
)

// command is /settings: every effective key, its value and the layer it
// came from, so that a user can tell why a value is what it is.
func command(st *Store) commands.Command {
	return commands.Command{
		Name:        "settings",
		Description: "show every effective setting, its value and where it came from (user file, project file, or environment variable)",
		Usage:       "[section]",
		Handler: commands.Func(func(_ context.Context, input string) (string, error) {
			return showSettings(st, strings.TrimSpace(input))
		}),
	}
}

// showSettings renders the effective settings, those of one section when
// section is not empty.
func showSettings(st *Store, section string) (string, error) {
	if section != "" {
		if err := checkSection(section); err != nil {
			return "", err
		}
	}
	vals, err := st.Effective()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	project := st.ProjectPath()
	if project == "" {
		project = "(none: no composition file)"
	}
	fmt.Fprintf(&b, "layers, later winning: user %s < project %s < environment %s<SECTION>%s<KEY>\n", st.Path(), project, EnvPrefix, envSep)
	n := 0
	for _, v := range vals {
		if section != "" && v.Key != section && !strings.HasPrefix(v.Key, section+".") {
			continue
		}
		fmt.Fprintf(&b, "%s = %s  (%s)\n", v.Key, flow(v.Value), v.Source)
		n++
	}
	if n == 0 {
		if section != "" {
			fmt.Fprintf(&b, "no setting in section %s\n", section)
		} else {
			b.WriteString("no settings\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// flow renders v as one line of YAML, so that its type shows: "42" is a
// string, 42 an int.
func flow(v any) string {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	setFlow(&n)
	out, err := yaml.Marshal(&n)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(out))
}

func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		setFlow(c)
	}
}
