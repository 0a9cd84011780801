package mcpclient

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// TestSandboxConfigErrors: a bad sandbox block is a config error naming
// the file, the line of the key, the entry and the key, every problem at
// once per entry; a sandbox on a remote server is refused rather than ignored.
func TestSandboxConfigErrors(t *testing.T) {
	c, err := host.ParseComposition("composition.yml", []byte(`plugins:
  - id: files
    name: mcp-client
    config:
      serverName: files
      transport: stdio
      command: npx
      sandbox:
        mode: on
        read: [relative/dir, ~/ok, /]
        write: [/tmp/out]
        connect: [443, 70000]
  - id: bind
    name: mcp-client
    config: {serverName: bind, transport: stdio, command: npx, sandbox: {bind: everything}}
  - id: web
    name: mcp-client
    config:
      serverName: web
      transport: streamable-http
      url: http://127.0.0.1:1/mcp
      sandbox: {mode: strict}
  - id: ok
    name: mcp-client
    config:
      serverName: ok
      transport: stdio
      command: npx
      sandbox: {mode: auto, read: [~/projects], connect: any, bind: []}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = host.Check(c)
	if err == nil {
		t.Fatal("Check = nil, want the sandbox errors")
	}
	for _, want := range []string{
		`composition.yml:12: entry "files": config key sandbox.connect: [1]: "70000" is not a TCP port`,
		`composition.yml:15: entry "bind": config key sandbox.bind: "everything" must be a list of TCP ports`,
		`entry "web": `, `sandbox: not an option of the streamable-http transport`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v\nwant it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `entry "ok"`) {
		t.Errorf("Check = %v\nthe valid entry is reported", err)
	}

	// Validation past decoding: mode and paths.
	c, err = host.ParseComposition("composition.yml", []byte(`plugins:
  - id: files
    name: mcp-client
    config:
      serverName: files
      transport: stdio
      command: npx
      sandbox:
        mode: on
        read: [relative/dir, ~/ok, /]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = host.Check(c)
	for _, want := range []string{
		`composition.yml:9: entry "files": config key sandbox.mode: "on" must be auto, strict or off`,
		`config key sandbox.read[0]: "relative/dir" must be an absolute path or start with ~/`,
		`config key sandbox.read[2]: "/" would grant the whole filesystem`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v\nwant it to contain %q", err, want)
		}
	}
}
