package app

// What a chat front end checks before its host starts, so that a
// composition without an agent or an unknown session fails at once.

import (
	"fmt"
	"path/filepath"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/agent"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
)

// AgentEntry returns the id of c's enabled agent entry, "" when none.
func AgentEntry(c *host.Composition) string {
	for _, e := range c.Entries {
		if e.Name == agent.PluginName && !e.Disabled {
			return e.ID
		}
	}
	return ""
}

// SessionsOf is where the conversations of the composition in file are
// saved: the sessions directory, and file's absolute path, which
// --continue finds them by.
func SessionsOf(file string) (dir, composition string, err error) {
	if dir, err = sessions.Dir(); err != nil {
		return "", "", err
	}
	if composition, err = filepath.Abs(file); err != nil {
		return "", "", fmt.Errorf("resolve %s: %w", file, err)
	}
	return dir, composition, nil
}

// FindSession is the recorded session a chat of the composition in file
// resumes: id, or with last the newest of file's with an answered turn
// (a zero Session when it has none). It reads the session, so that an
// unknown or unreadable one fails before a host starts, and returns what
// was wrong with it but could be skipped.
func FindSession(file string, last bool, id string) (found Session, warnings []string, err error) {
	dir, composition, err := SessionsOf(file)
	if err != nil {
		return Session{}, nil, err
	}
	if last {
		if id, err = sessions.Last(dir, composition); err != nil || id == "" {
			return Session{}, nil, err
		}
	}
	if id == "" {
		return Session{}, nil, nil
	}
	ls, err := sessions.Open(dir, id)
	if err != nil {
		return Session{}, nil, err
	}
	return sessionOf(ls.Info), ls.Warnings, nil
}

// agentDown is ErrNoAgent for a composition that has an agent entry: it
// names the entry and why it is not running.
type agentDown struct{ st host.InstanceStatus }

func (e agentDown) Error() string {
	return fmt.Sprintf("the agent (entry %q) is not running (%s): %s", e.st.ID, e.st.State, e.st.Err)
}

func (e agentDown) Is(target error) bool { return target == ErrNoAgent }
