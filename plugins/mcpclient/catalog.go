package mcpclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// CatalogDir is the directory under $DSH_HOME that holds the catalog
// cache: one file per launch of a server, named by its key.
const CatalogDir = "mcp-catalog"

// catalogVersion changes when the file's shape does; a file of another
// version is ignored like a corrupt one.
const catalogVersion = 1

// catalog is what a discovery leaves for the next start: exactly what
// registering the tools and assembling the prompt needs, so that tools
// registered from it are the tools the live server gives, byte for byte.
// It holds nothing of the launch (no command, args, URL, env or header
// value): the file name is a digest of that.
type catalog struct {
	Version int `json:"version"`
	// Server is the serverName that wrote it, for people reading the
	// directory; the tools' public names come from the config.
	Server string `json:"server"`
	// Tools is every tool the server listed, as it listed it: the
	// include/exclude filter and the offer checks run again on it.
	Tools []*mcp.Tool `json:"tools"`
	// TaskRequired are the tools listed with execution.taskSupport
	// "required", which go-sdk's Tool drops (offered.go).
	TaskRequired []string `json:"taskRequired,omitempty"`
	// Instructions are the server's instructions as the prompt carries
	// them (already capped).
	Instructions string `json:"instructions,omitempty"`
}

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

// maxCatalogBytes caps a catalog file: twice the frame limit that bounds
// one tools/list page, for the indentation.
const maxCatalogBytes = 2 * mcp.DefaultMaxLineLength

// errNoCatalog: no cache file for this launch yet.
var errNoCatalog = errors.New("no catalog cache yet")

// readCatalog reads path. A missing file is errNoCatalog; a file that
// does not decode, or is of another version, is an error saying so (the
// caller ignores it and the next discovery rewrites it).
func readCatalog(path string) (*catalog, []byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errNoCatalog
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// Capped: decoding a huge file (300 MB took 3.6 GB) would stall every
	// start; a real one is far smaller.
	b, err := io.ReadAll(io.LimitReader(f, maxCatalogBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxCatalogBytes {
		return nil, nil, fmt.Errorf("%s is over %d MiB, more than any server's tool list; it is ignored", path, maxCatalogBytes>>20)
	}
	var cat catalog
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&cat); err != nil {
		return nil, nil, fmt.Errorf("%s does not decode: %w", path, err)
	}
	if cat.Version != catalogVersion {
		return nil, nil, fmt.Errorf("%s is version %d, not %d", path, cat.Version, catalogVersion)
	}
	if slices.Contains(cat.Tools, nil) {
		return nil, nil, fmt.Errorf("%s lists a null tool", path)
	}
	return &cat, b, nil
}

// encodeCatalog is the file's content for a discovery.
func encodeCatalog(server string, list []*mcp.Tool, taskRequired []string, instructions string) ([]byte, error) {
	if list == nil {
		list = []*mcp.Tool{}
	}
	return json.MarshalIndent(catalog{Version: catalogVersion, Server: server, Tools: list,
		TaskRequired: taskRequired, Instructions: instructions}, "", "\t")
}

// writeCatalog replaces path with b atomically, creating the directory
// (private: tool lists can say a lot about a user's setup).
func writeCatalog(path string, b []byte) error {
	if err := fsutil.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFile(path, b, 0o600)
}
