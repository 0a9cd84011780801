package stdio

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScrubDropsSecrets(t *testing.T) {
	for _, kv := range []string{
		// The list.
		"GH_PAT=ghp_x", "DATABASE_URL=postgres://u:pw@db:5432/app", "MY_PASSWD=p", "ANTHROPIC_AUTH=a",
		"AZURE_CLIENT_CREDENTIALS=c", "HF_PASS=p", "COOKIE=c", "SSH_AUTH_SOCK=/tmp/ssh/agent.1",
		"SLACK_WEBHOOK_URL=https://hooks.example.com/services/T0/B0/x",
		// What the scrub dropped before.
		"GITHUB_TOKEN=t", "my_api_key=k", "DB_PASSWORD=p", "Client_Secret=s", "DSH_HOME=/d", "dsh_debug=1",
		// The other words, in other places and cases.
		"PAT=x", "GITLAB_PAT_RW=x", "pat=x", "OAUTH_CLIENT=x", "BASIC_AUTH=u:p", "AUTHORIZATION=Bearer x",
		"SESSION_ID=s", "XDG_SESSION_COOKIE=x", "GPG_PRIVATE=x", "GOOGLE_APPLICATION_CREDENTIALS=/k.json",
		// URLs that carry a credential, under harmless names.
		"REDIS=redis://:pw@cache:6379/0", "MIRROR=https://u:pw@mirror.example.com/",
		"FEED=https://feed.example.com/rss?api_key=k&x=1", "HOOK=https://h.example.com/x?access_token=t",
		// The second review's list: a numbered PAT, PWD, a URL with a
		// user part only, JWT, SK as a word, BEARER, CREDS, DSN.
		"GH_PAT2=ghp_x", "MYSQL_PWD=p", "SENTRY_DSN=https://key@o1.ingest.example.com/1", "CI_JOB_JWT=j",
		"STRIPE_SK=sk_live_x", "JWT_SIGNING=s", "BEARER=b", "CREDS=c", "APP_DSN=mysql:host=db",
		"REPO=https://user@example.com/r.git", "RAW=amqp://guest@mq/ x",
	} {
		name := strings.SplitN(kv, "=", 2)[0]
		if got := Env([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %s: %q", name, got)
		}
	}
}

func TestScrubKeepsTheRest(t *testing.T) {
	keep := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/u", "GOPATH=/home/u/go", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm",
		"GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=a@example.com", "XDG_CONFIG_HOME=/home/u/.config",
		"NODE_OPTIONS=--max-old-space-size=512", "HTTPS_PROXY=http://proxy.example.com:3128",
		"PATHEXT=.COM;.EXE", "CLASSPATH=/lib", "EMPTY=",
		"PLAIN_URL=https://example.com/a?b=c", "PWD=/home/u/src", "OLDPWD=/home/u", "DESKTOP=x",
		"PATTERN=x", "TASK=t", "DISK=/dev/sda", "PATCHES=3",
	}
	got := Env(keep, nil, InheritScrub)
	want := slices.Sorted(slices.Values(keep))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scrub (-want +got):\n%s", diff)
	}
}

// A password net/url cannot parse (a bad escape, #, space, ^) or a URL
// with no host (a socket DSN) still marks the value as a secret.
func TestScrubDropsUnparseableURLPasswords(t *testing.T) {
	for _, kv := range []string{
		"DB1=postgres://u:p%zz@db/app", "DB2=postgres://u:pa#ss@db/app", "DB3=mysql://u:p w@db/app",
		"DB4=postgres://u:p^w@db/app", "DB5=postgres://u:pw@/app?host=/run/pg", "DB6=amqp://u:p/w@mq/",
	} {
		if got := Env([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %q", got)
		}
	}
	keep := []string{"ODD=https://ex ample.com/a", "PKG=https://registry.example.com/@scope/pkg"}
	if got := Env(keep, nil, InheritScrub); len(got) != len(keep) {
		t.Errorf("scrub kept %q of %q", got, keep)
	}
}

func TestInheritModes(t *testing.T) {
	ambient := []string{
		"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "LANG=C", "LC_CTYPE=C", "TERM=dumb",
		"TMPDIR=/t", "TZ=UTC", "SystemRoot=C:\\Windows", "windir=C:\\Windows", "TEMP=/t", "APPDATA=/a",
		"GOPATH=/g", "EDITOR=vi", "GITHUB_TOKEN=t", "DSH_HOME=/d", "USERNAME=u",
	}
	extra := map[string]string{"GITHUB_TOKEN": "explicit", "EXTRA": "x"}
	tests := []struct {
		mode string
		want []string
	}{
		{InheritMinimal, []string{"APPDATA=/a", "EXTRA=x", "GITHUB_TOKEN=explicit", "HOME=/h", "LANG=C", "LC_CTYPE=C",
			"LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "SystemRoot=C:\\Windows", "TEMP=/t", "TERM=dumb", "TMPDIR=/t",
			"TZ=UTC", "USER=u", "USERNAME=u", "windir=C:\\Windows"}},
		{InheritAll, []string{"APPDATA=/a", "DSH_HOME=/d", "EDITOR=vi", "EXTRA=x", "GITHUB_TOKEN=explicit", "GOPATH=/g",
			"HOME=/h", "LANG=C", "LC_CTYPE=C", "LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "SystemRoot=C:\\Windows",
			"TEMP=/t", "TERM=dumb", "TMPDIR=/t", "TZ=UTC", "USER=u", "USERNAME=u", "windir=C:\\Windows"}},
		{InheritScrub, []string{"APPDATA=/a", "EDITOR=vi", "EXTRA=x", "GITHUB_TOKEN=explicit", "GOPATH=/g",
			"HOME=/h", "LANG=C", "LC_CTYPE=C", "LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "SystemRoot=C:\\Windows",
			"TEMP=/t", "TERM=dumb", "TMPDIR=/t", "TZ=UTC", "USER=u", "USERNAME=u", "windir=C:\\Windows"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Env(ambient, extra, tt.mode)); diff != "" {
			t.Errorf("inheritEnv %s (-want +got):\n%s", tt.mode, diff)
		}
	}
}

func TestChildEnv(t *testing.T) {
	ambient := []string{"PATH=/bin", "HOME=/root", "GITHUB_TOKEN=t", "my_api_key=k", "DB_PASSWORD=p",
		"Client_Secret=s", "DSH_HOME=/d", "dsh_debug=1", "PLAIN=1", "KEYBOARD=us", "NOEQUALS"}
	got := Env(ambient, map[string]string{"GITHUB_TOKEN": "explicit", "EXTRA": "x"}, InheritScrub)
	want := []string{"EXTRA=x", "GITHUB_TOKEN=explicit", "HOME=/root", "PATH=/bin", "PLAIN=1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("childEnv (-want +got):\n%s", diff)
	}
}

// TestScrubConnectionStrings: a credential inside a value that holds
// key=value pairs (a connection string) marks it as a secret, whatever
// its name; values that merely hold pairs, even with AUTH or KEY somewhere
// in them, pass.
func TestScrubConnectionStrings(t *testing.T) {
	drop := []string{
		"CONN=Server=db.example.com;Database=app;User Id=sa;Password=Pa55;",
		"ADO=Data Source=db;Initial Catalog=app;User ID=u;Pwd=p",
		"ODBC=Driver={ODBC Driver 18};Server=tcp:db,1433;UID=u;PWD={p;w};",
		"PG=host=db port=5432 user=u password=p dbname=app",
		"PG2=host=db user=u password='p w' dbname=app",
		"AZSTORE=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc==;EndpointSuffix=core.windows.net",
		"SBUS=Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=k=",
		"SAS=BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2020&sig=x",
		"JDBC=jdbc:sqlserver://db:1433;databaseName=app;user=u;password=p",
		"JDBC2=jdbc:postgresql://db/app?user=u&password=p",
		"JDBC3=jdbc:mysql://u:pw@db/app",
		"JAVA_TOOL_OPTIONS=-Xmx1g -Djavax.net.ssl.trustStorePassword=changeit",
		"OPTS=--api-key=k --verbose",
		"REDIS_OPTS=host=cache pass=p",
	}
	for _, kv := range drop {
		if got := Env([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %q", got)
		}
	}
	keep := []string{
		"SQLCONN=Server=db;Database=app;Trusted_Connection=True;",
		"SQLCONN2=Server=db;User Id=u;Password=;",
		"MAKEFLAGS=-j4 --jobserver-auth=fifo:/tmp/GMfifo1",
		"LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:*.tar=01;31:*.key=01;33:",
		"NODE_OPTIONS=--max-old-space-size=512 --enable-source-maps",
		"GOFLAGS=-mod=mod -tags=integration",
		"LESS=-R -F", "QUERY=a=b&c=d", "CFLAGS=-O2 -DKEYBOARD=1 -DMONKEY_ISLAND=2",
		"JAVA_TOOL_OPTIONS=-Xmx1g -Dfile.encoding=UTF-8 -Dauthor.name=ann",
		"GIT_SSH_COMMAND=ssh -o StrictHostKeyChecking=no -i /home/u/.ssh/id",
		"MANPATH=:/usr/share/man", "EQ=x=1",
	}
	if got := Env(keep, nil, InheritScrub); len(got) != len(keep) {
		t.Errorf("scrub kept only %q of\n%q", got, keep)
	}
	// LooksSecret, which import uses, judges the same.
	if !LooksSecret("CONN", strings.TrimPrefix(drop[0], "CONN=")) || LooksSecret("MAKEFLAGS", "-j4 --jobserver-auth=3,4") {
		t.Error("LooksSecret disagrees with the scrub")
	}
}
