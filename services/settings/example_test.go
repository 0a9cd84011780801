package settings_test

import (
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/services/settings"
)

// An update rewrites one section and leaves the rest of the file, comments
// included, as the user wrote it.
func ExampleUpdate() {
	dir, err := os.MkdirTemp("", "dsh")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "settings.yaml")
	os.WriteFile(path, []byte(`# my settings
theme: dark   # keep it dark

mcp-adapter:
  # stable server ids, never recycled
  ids: {github: 1}
`), 0o600)

	st, err := settings.Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		log.Fatal(err)
	}
	type adapter struct {
		IDs map[string]int `yaml:"ids"`
	}
	err = settings.Update(st, "mcp-adapter", func(a *adapter) error {
		a.IDs["web"] = 2
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// # my settings
	// theme: dark   # keep it dark
	//
	// mcp-adapter:
	//   # stable server ids, never recycled
	//   ids: {github: 1, web: 2}
}
