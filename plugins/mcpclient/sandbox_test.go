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
	checkErrorCases(t, []checkErrorCase{
		{
			name: "decoding",
			yaml: `plugins:
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
`,
			want: []string{
				`composition.yml:12: entry "files": config key sandbox.connect: [1]: "70000" is not a TCP port`,
				`composition.yml:15: entry "bind": config key sandbox.bind: "everything" must be a list of TCP ports`,
				`entry "web": `, `sandbox: not an option of the streamable-http transport`,
			},
		},
		{
			// Validation past decoding.
			name: "mode and paths",
			yaml: `plugins:
  - id: files
    name: mcp-client
    config:
      serverName: files
      transport: stdio
      command: npx
      sandbox:
        mode: on
        read: [relative/dir, ~/ok, /]
`,
			want: []string{
				`composition.yml:9: entry "files": config key sandbox.mode: "on" must be auto, strict or off`,
				`config key sandbox.read[0]: "relative/dir" must be an absolute path or start with ~/`,
				`config key sandbox.read[2]: "/" would grant the whole filesystem`,
			},
		},
	})
}

// TestSandboxLimitsConfigErrors: the seccomp keys and the limits are
// checked like the rest of the block, each error naming the file, line,
// entry and key: a decimal unit, a negative count, a word, a misspelt
// limit, a zero, a size without its unit, a udp that is not a boolean.
func TestSandboxLimitsConfigErrors(t *testing.T) {
	checkErrorCases(t, []checkErrorCase{
		{
			name: "keys",
			yaml: `plugins:
  - id: files
    name: mcp-client
    config:
      serverName: files
      transport: stdio
      command: npx
      sandbox:
        unix: true
        limits:
          memroy: 1GiB
  - id: zero
    name: mcp-client
    config: {serverName: zero, transport: stdio, command: npx, sandbox: {limits: {files: 0}}}
  - id: small
    name: mcp-client
    config:
      serverName: small
      transport: stdio
      command: npx
      sandbox:
        limits: {memory: 512}
  - id: ok
    name: mcp-client
    config:
      serverName: ok
      transport: stdio
      command: npx
      sandbox: {udp: false, unix: true, limits: {memory: 2GiB, processes: 128, files: 4096}}
`,
			want: []string{
				`composition.yml:11: entry "files": config key sandbox.limits.memroy: unknown key; did you mean memory?`,
				`composition.yml:14: entry "zero": config key sandbox.limits.files: 0 would stop the server from starting at all; leave the key out for no limit`,
				`entry "small": config key sandbox.limits.memory: 512 bytes is too small for any server to start (at least 1MiB); write a unit, such as 512MiB`,
			},
		},
		{
			// The value errors, once no key is unknown (one per entry:
			// decoding stops at an entry's first).
			name: "values",
			yaml: `plugins:
  - id: files
    name: mcp-client
    config:
      serverName: files
      transport: stdio
      command: npx
      sandbox:
        limits:
          memory: 2GB
  - id: procs
    name: mcp-client
    config: {serverName: procs, transport: stdio, command: npx, sandbox: {limits: {processes: -1}}}
  - id: fds
    name: mcp-client
    config: {serverName: fds, transport: stdio, command: npx, sandbox: {limits: {files: lots}}}
  - id: udp
    name: mcp-client
    config: {serverName: udp, transport: stdio, command: npx, sandbox: {udp: sometimes}}
`,
			want: []string{
				`composition.yml:10: entry "files": config key sandbox.limits.memory: "2GB": unknown unit "GB"; write KiB, MiB, GiB or TiB`,
				`composition.yml:13: entry "procs": config key sandbox.limits.processes: -1 is negative`,
				`composition.yml:16: entry "fds": config key sandbox.limits.files: must be a whole number, not "lots"`,
				`composition.yml:19: entry "udp": config key sandbox.udp: `,
			},
		},
	})
}

// checkErrorCase is a composition whose Check must fail with every want
// in its error, and not name the entry "ok" (valid where present).
type checkErrorCase struct {
	name, yaml string
	want       []string
}

func checkErrorCases(t *testing.T, cases []checkErrorCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := host.ParseComposition("composition.yml", []byte(tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = host.Check(c)
			if err == nil {
				t.Fatal("Check = nil, want the errors")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Check = %v\nwant it to contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), `entry "ok"`) {
				t.Errorf("Check = %v\nthe valid entry is reported", err)
			}
		})
	}
}
