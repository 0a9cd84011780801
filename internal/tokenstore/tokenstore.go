// Package tokenstore keeps the OAuth tokens of remote MCP servers on disk,
// under $DSH_HOME/oauth, so that a login survives restarts and is shared by
// every dsh-host process of the user (a `run` and a `serve` at once).
//
// One file per server URL holds that server's records, each keyed by the
// authorization server's issuer and the client id. The directory is 0700 and
// every file 0600. Each change takes an exclusive lock beside the file
// (fsutil.Lock), re-reads the file, changes it and replaces it atomically
// (fsutil.WriteFile): two processes refreshing at once never lose a token,
// and the one that comes second sees the first one's refresh instead of
// spending a refresh token that may already be rotated.
//
// A file that does not parse is never overwritten: every call on it fails
// naming the file, until the user removes it (Delete does, for `logout`).
package tokenstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// Record is one login: the token and what refreshing it needs.
type Record struct {
	// Issuer is the authorization server; ClientID the client the token
	// was issued to. With the store's server URL they key the record.
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	// ClientSecret is the secret of a dynamically registered client
	// (empty for a public client or one configured in the composition).
	ClientSecret string `json:"clientSecret,omitempty"`
	// TokenURL and AuthStyle are what a refresh is sent to and how the
	// client authenticates there (oauth2.AuthStyle).
	TokenURL  string `json:"tokenUrl"`
	AuthStyle int    `json:"authStyle,omitempty"`
	// Scopes are the scopes granted (or asked for, when the server did not
	// say), kept so that a step-up asks for their union with the new ones.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the access and refresh token.
	Token *oauth2.Token `json:"token"`
	// Saved is when the record was last written.
	Saved time.Time `json:"saved"`
}

// file is the on-disk form of one server's records.
type file struct {
	ServerURL string   `json:"serverUrl"`
	Records   []Record `json:"records"`
}

// Store is the token directory. Its methods are safe for concurrent use,
// within a process and across processes.
type Store struct {
	dir string
}

// New returns the store in dir (created 0700 on first write).
func New(dir string) *Store { return &Store{dir: dir} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path is the file that holds serverURL's records (it may not exist).
func (s *Store) Path(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:12])+".json")
}

// ErrCorrupt marks a store file that does not parse.
var ErrCorrupt = errors.New("token file is corrupt")

// read returns the records of serverURL; none when the file does not exist.
func (s *Store) read(serverURL string) ([]Record, error) {
	path := s.Path(serverURL)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s (remove it, or run dsh-host logout for its server, to log in again): %v", ErrCorrupt, path, err)
	}
	if f.ServerURL != serverURL {
		return nil, fmt.Errorf("%w: %s belongs to another server URL (remove it to log in again)", ErrCorrupt, path)
	}
	return f.Records, nil
}

// Load returns the record of serverURL for clientID, the most recently
// saved one when clientID is empty. ok is false when there is none.
func (s *Store) Load(serverURL, clientID string) (rec Record, ok bool, err error) {
	recs, err := s.read(serverURL)
	if err != nil {
		return Record{}, false, err
	}
	return pick(recs, clientID)
}

func pick(recs []Record, clientID string) (Record, bool, error) {
	best := -1
	for i, r := range recs {
		if clientID != "" && r.ClientID != clientID {
			continue
		}
		if best < 0 || r.Saved.After(recs[best].Saved) {
			best = i
		}
	}
	if best < 0 {
		return Record{}, false, nil
	}
	return recs[best], true, nil
}

// Update runs fn on serverURL's record for clientID (the most recent when
// clientID is empty; ok false when there is none) under the lock, with the
// file just re-read. When fn returns a record, it replaces the one with
// the same issuer and client id (or is added) and the file is written.
func (s *Store) Update(serverURL, clientID string, fn func(cur Record, ok bool) (*Record, error)) error {
	unlock, err := s.lock(serverURL)
	if err != nil {
		return err
	}
	defer unlock()
	recs, err := s.read(serverURL)
	if err != nil {
		return err
	}
	cur, ok, _ := pick(recs, clientID)
	next, err := fn(cur, ok)
	if err != nil || next == nil {
		return err
	}
	next.Saved = time.Now().UTC()
	recs = slices.DeleteFunc(recs, func(r Record) bool {
		return r.Issuer == next.Issuer && r.ClientID == next.ClientID
	})
	recs = append(recs, *next)
	return s.write(serverURL, recs)
}

// Save stores rec for serverURL, replacing the record with its issuer and
// client id.
func (s *Store) Save(serverURL string, rec Record) error {
	return s.Update(serverURL, rec.ClientID, func(Record, bool) (*Record, error) { return &rec, nil })
}

// Delete removes every record of serverURL, a corrupt file included, and
// returns the records it removed (none for a corrupt file).
func (s *Store) Delete(serverURL string) ([]Record, error) {
	unlock, err := s.lock(serverURL)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, _ := s.read(serverURL)
	if err := os.Remove(s.Path(serverURL)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove token file: %w", err)
	}
	return recs, fsutil.SyncDir(s.dir)
}

// ErrNoToken is Current's error when there is no usable token: none
// stored, or an expired or refused one without a refresh token.
var ErrNoToken = errors.New("no usable token")

// RefreshError is Current's error when the authorization server refused
// the refresh: the user has to log in again.
type RefreshError struct{ Err error }

func (e *RefreshError) Error() string { return "token refresh failed: " + e.Err.Error() }
func (e *RefreshError) Unwrap() error { return e.Err }

// Refresh is how Current refreshes a token.
type Refresh struct {
	// Rejected, when not empty, is an access token the server refused: a
	// stored token equal to it is refreshed whatever its expiry.
	Rejected string
	// Margin is how long the token must stay valid to be used as is.
	Margin time.Duration
	// Client sends the refresh (nil: http.DefaultClient).
	Client *http.Client
	// ClientSecret, when not empty, is used instead of the record's (a
	// secret the composition holds is not copied into the store).
	ClientSecret string
}

// Current returns serverURL's record for clientID with a token valid for
// at least r.Margin. Under the lock it re-reads the file, so a token
// another process refreshed meanwhile is taken as is; otherwise it
// refreshes the token and saves the result.
func (s *Store) Current(ctx context.Context, serverURL, clientID string, r Refresh) (Record, error) {
	margin, rejected, client := r.Margin, r.Rejected, r.Client
	var out Record
	err := s.Update(serverURL, clientID, func(cur Record, ok bool) (*Record, error) {
		if !ok || cur.Token == nil {
			return nil, ErrNoToken
		}
		tok := cur.Token
		usable := tok.AccessToken != "" && tok.AccessToken != rejected &&
			(tok.Expiry.IsZero() || time.Until(tok.Expiry) > margin)
		if usable {
			out = cur
			return nil, nil
		}
		if tok.RefreshToken == "" {
			return nil, ErrNoToken
		}
		cfg := oauth2.Config{
			ClientID:     cur.ClientID,
			ClientSecret: cmp.Or(r.ClientSecret, cur.ClientSecret),
			Endpoint:     oauth2.Endpoint{TokenURL: cur.TokenURL, AuthStyle: oauth2.AuthStyle(cur.AuthStyle)},
		}
		if client == nil {
			client = http.DefaultClient
		}
		// An expired copy forces the refresh: oauth2 would hand back a
		// token it still takes for valid.
		stale := &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Unix(1, 0)}
		fresh, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, client), stale).Token()
		if err != nil {
			return nil, &RefreshError{Err: err}
		}
		cur.Token = fresh
		out = cur
		return &cur, nil
	})
	return out, err
}

// Stamp returns what changes whenever serverURL's file is written or
// removed, for a cheap watch: its modification time and size.
func (s *Store) Stamp(serverURL string) string {
	fi, err := os.Stat(s.Path(serverURL))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}

func (s *Store) write(serverURL string, recs []Record) error {
	data, err := json.MarshalIndent(file{ServerURL: serverURL, Records: recs}, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFile(s.Path(serverURL), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// lock creates the directory (0700, tightened if it exists looser) and
// locks serverURL's file through a lock file beside it.
func (s *Store) lock(serverURL string) (func() error, error) {
	if err := fsutil.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create token directory: %w", err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("token directory: %w", err)
	}
	return fsutil.Lock(s.Path(serverURL) + ".lock")
}
