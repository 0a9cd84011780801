// Package browser opens a URL for the person at the keyboard: an OAuth
// login's authorization page, or the page of a URL-mode elicitation.
package browser

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// ErrNoOpener is Open's error when neither $BROWSER nor a platform opener
// can be started.
var ErrNoOpener = errors.New("set $BROWSER, or open the URL by hand")

// WebPage returns an error unless u is a web page a browser may be sent to
// without asking: https, or http on a loopback host. An opener hands any
// other scheme (file:, or one a local application registered) to whatever
// handles it, which a remote server must not choose.
func WebPage(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", u, err)
	}
	switch {
	case p.Host == "":
	case p.Scheme == "https":
		return nil
	case p.Scheme == "http":
		h := p.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%q is not an https URL (or http on this machine): not opened", u)
}

// Open starts the program $BROWSER names, else the platform's opener, with
// url, and does not wait for it. $BROWSER follows its usual convention: a
// colon-separated list of which the first is used, words split on spaces,
// %s standing for the URL, which is otherwise the last argument.
func Open(url string) error {
	argv := command(os.Getenv("BROWSER"), url)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return ErrNoOpener
	}
	cmd := exec.Command(path, argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// command is the argv that opens url with the given $BROWSER value.
func command(browserEnv, url string) []string {
	first, _, _ := strings.Cut(browserEnv, ":")
	argv := strings.Fields(first)
	if len(argv) == 0 {
		switch runtime.GOOS {
		case "darwin":
			return []string{"open", url}
		case "windows":
			return []string{"rundll32", "url.dll,FileProtocolHandler", url}
		default:
			return []string{"xdg-open", url}
		}
	}
	placed := false
	for i, a := range argv {
		if strings.Contains(a, "%s") {
			argv[i] = strings.ReplaceAll(a, "%s", url)
			placed = true
		}
	}
	if !placed {
		argv = append(argv, url)
	}
	return argv
}
