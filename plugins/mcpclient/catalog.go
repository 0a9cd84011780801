package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/dsh-host/dsh-host/internal/dshhome"
)

// CatalogDir is the directory under $DSH_HOME that holds the catalog
// cache: one file per launch of a server, named by its key.
const CatalogDir = "mcp-catalog"

// catalogKey is the digest of what launches the server: transport,
// command, args, cwd, inheritEnv, env names with a digest of their values,
// URL, and header names with a digest of their values. A change to any of
// them (a new token in env included) is another server as far as the
// cache knows. Values are only ever hashed, and the result is hashed again
// with the rest, so the key says nothing about any of them.
func catalogKey(cfg *Config) string {
	envNames := sortedKeys(cfg.Env)
	headerNames := sortedKeys(cfg.Headers)
	values := func(m map[string]string, names []string) string {
		h := sha256.New()
		for _, k := range names {
			fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(m[k]), m[k])
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	launch := struct {
		Transport   string   `json:"transport"`
		Command     string   `json:"command,omitempty"`
		Args        []string `json:"args,omitempty"`
		Cwd         string   `json:"cwd,omitempty"`
		InheritEnv  string   `json:"inheritEnv,omitempty"`
		EnvNames    []string `json:"envNames,omitempty"`
		EnvValues   string   `json:"envValues"`
		URL         string   `json:"url,omitempty"`
		HeaderNames []string `json:"headerNames,omitempty"`
		HeaderVals  string   `json:"headerValues"`
	}{cfg.Transport, cfg.Command, cfg.Args, cfg.Cwd, cfg.InheritEnv, envNames, values(cfg.Env, envNames),
		cfg.URL, headerNames, values(cfg.Headers, headerNames)}
	b, _ := json.Marshal(launch) // strings only: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// catalogPath returns the cache file of cfg's launch under dir.
func catalogPath(dir string, cfg *Config) string {
	return filepath.Join(dir, catalogKey(cfg)+".json")
}

// defaultCatalogDir is $DSH_HOME/mcp-catalog, or "" (no cache) when no
// home can be found.
func defaultCatalogDir() string {
	p, err := dshhome.Path(CatalogDir)
	if err != nil {
		return ""
	}
	return p
}
