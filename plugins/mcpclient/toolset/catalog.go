package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

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
	// "required", which go-sdk's Tool drops (Tasks).
	TaskRequired []string `json:"taskRequired,omitempty"`
	// Instructions are the server's instructions as the prompt carries
	// them (already capped).
	Instructions string `json:"instructions,omitempty"`
	// ProtocolVersion is the revision this launch was found to need when
	// the config pins none: 2025-11-25 for a server that asks its client
	// during a call the way of that revision (mcp-client's revision.go).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
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
func encodeCatalog(server string, list []*mcp.Tool, taskRequired []string, instructions, protocol string) ([]byte, error) {
	if list == nil {
		list = []*mcp.Tool{}
	}
	return json.MarshalIndent(catalog{Version: catalogVersion, Server: server, Tools: list,
		TaskRequired: taskRequired, Instructions: instructions, ProtocolVersion: protocol}, "", "\t")
}

// writeCatalog replaces path with b atomically, creating the directory
// (private: tool lists can say a lot about a user's setup).
func writeCatalog(path string, b []byte) error {
	if err := fsutil.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFile(path, b, 0o600)
}
