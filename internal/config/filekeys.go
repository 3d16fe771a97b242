package config

import (
	"fmt"
	"strings"
)

// FileTable is a table of the config file whose keys are declared.
type FileTable string

// The tables of the config file, in documentation order.
const (
	TableTop    FileTable = ""
	TableHost   FileTable = "host.NAME"
	TableBranch FileTable = "branch"
)

// FileTables returns every declared table in documentation order.
func FileTables() []FileTable { return []FileTable{TableTop, TableHost, TableBranch} }

// Heading is the table as written in the file.
func (t FileTable) Heading() string {
	switch t {
	case TableHost:
		return "[host.NAME]"
	case TableBranch:
		return "[[branch]]"
	}
	return "Top level"
}

// Intro is the sentence under the table's heading.
func (t FileTable) Intro() string {
	switch t {
	case TableHost:
		return "Settings of the host NAME, for every branch it serves. NAME is the host as the branches write it, " +
			"without user@ (quote it when it holds dots or colons: [host.\"10.0.0.7\"]). " +
			"They win over the global settings from the file's [options], -F, -p and -o on the command line."
	case TableBranch:
		return "One branch each, in priority order: the first [[branch]] is the highest. " +
			"Messages count them from 1: branch[2] is the second."
	}
	return "Relative paths in the file's own keys (mountpoint, ssh_config, identity_file) are relative to the file's directory, and ~/ is your home; " +
		"values under [options] are taken as on the command line."
}

// fileType is the TOML type that a declared key takes.
type fileType int

const (
	tString fileType = iota
	tInt
	tBool
	tStrings
	tTable      // a table of arbitrary keys ([options], ssh_options)
	tHostTables // [host.NAME] tables
	tBranches   // [[branch]] tables
)

func (t fileType) String() string {
	return [...]string{"string", "integer", "boolean", "list of strings", "table", "tables", "array of tables"}[t]
}

// FileKey is the one declaration of a config file key, from which the
// file is decoded and documented.
type FileKey struct {
	Table FileTable
	Name  string
	Type  fileType
	Help  string
	set   func(d *decoder, v fval) error
}

// FileKeys returns the declaration of every key of the config file, in
// documentation order.
func FileKeys() []FileKey {
	return []FileKey{
		{TableTop, "mountpoint", tString, "Where to mount; a MOUNTPOINT on the command line wins.", setMountpoint},
		{TableTop, "ssh_config", tString, "ssh configuration file of every host without one of its own, as -F; -F on the command line wins.",
			setGlobalSSHConfig},
		{TableTop, "options", tTable, "Any -o option by its name: name = \"value\", a number, or true or false for a flag " +
			"(false turns it off: ro = false is rw). ssh_config(5) keywords too. Applied in order, before the command line's options.",
			(*decoder).options},
		{TableTop, "host", tHostTables, "The [host.NAME] tables.", (*decoder).hostTables},
		{TableTop, "branch", tBranches, "The [[branch]] tables; at least one.", (*decoder).branches},

		{TableHost, "user", tString, "Login name, unless the branch writes user@.", setHostUser},
		{TableHost, "port", tInt, "ssh port.", setHostPort},
		{TableHost, "identity_file", tString, "Private key file, passed to ssh as -o IdentityFile.", setHostIdentity},
		{TableHost, "ssh_config", tString, "ssh configuration file of this host, instead of -F or the top-level ssh_config.", setHostSSHConfig},
		{TableHost, "ssh_options", tTable, "ssh_config(5) keywords and values for this host only: { ProxyJump = \"bastion\" }.",
			(*decoder).sshOptions},
		{TableHost, "max_conns", tInt, "SFTP channels to this host, instead of max_conns.", setHostMaxConns},

		{TableBranch, "name", tString, "Graft name: the branch appears as MOUNTPOINT/NAME. Without it, a union branch.", setBranchName},
		{TableBranch, "host", tString, "The host serving the branch: [user@]host.", setBranchHost},
		{TableBranch, "hosts", tStrings, "Replicas serving the branch, instead of host: [\"gw1\", \"alice@gw2\"].", setBranchHosts},
		{TableBranch, "dir", tString, "Remote directory, as is (no escapes needed); empty or absent: the remote home; relative: under it.",
			setBranchDir},
		{TableBranch, "ro", tBool, "Read-only branch.", setBranchRO},
	}
}

// fileKeysIn returns the keys declared for table t.
func fileKeysIn(t FileTable) []FileKey {
	var out []FileKey
	for _, k := range FileKeys() {
		if k.Table == t {
			out = append(out, k)
		}
	}
	return out
}

// knownKeys lists the names declared for t, for "unknown key" messages.
func knownKeys(t FileTable) string {
	var names []string
	for _, k := range fileKeysIn(t) {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// ExampleFile is the complete example of the docs; a test decodes it and
// checks that it uses every declared key.
const ExampleFile = `# ~/.config/sshfsm/work.toml: mount with "sshfsm --config work"
mountpoint = "~/work"              # a MOUNTPOINT on the command line wins
ssh_config = "~/.ssh/config.work"  # as -F, for hosts without their own

[options]                          # -o options; the command line's win
create = "mfs"
max_conns = 8
cache_timeout = 30
require_all = false
ServerAliveInterval = 15           # ssh_config keywords too

[host.build]
user = "alice"
port = 2222
identity_file = "~/.ssh/id_work"

[host.gw1]
max_conns = 16
ssh_options = { ProxyJump = "bastion" }

[host.gw2]
ssh_config = "~/.ssh/config.lustre"

[[branch]]                         # union branches: the first wins
host = "build"
dir = "/srv/src"

[[branch]]
host = "bob@archive"
dir = "/data/src"
ro = true

[[branch]]                         # a graft: ~/work/FOO
name = "FOO"
hosts = ["gw1", "gw2"]             # replicas seeing the same storage
dir = "/lustre/project/FOO"
`

// exampleMeaning says what ExampleFile mounts, for the docs.
func exampleMeaning() string {
	return "This mounts at ~/work the union of /srv/src on build (as alice, port 2222) and /data/src on archive " +
		"(as bob, read-only), new files going to the branch with the most free space, " +
		"and /lustre/project/FOO as ~/work/FOO, served by gw1 (through bastion) or gw2."
}

// fileParas is the prose of CONFIGURATION FILE before the key reference.
func fileParas() []string {
	return []string{
		"sshfsm --config FILE [MOUNTPOINT] mounts what the TOML file FILE describes: its branches, " +
			"the ssh settings of each host, options and the mountpoint. " +
			"sshfsm --config NAME, NAME having no '/' and not ending in .toml, reads " +
			"$XDG_CONFIG_HOME/sshfsm/NAME.toml (default ~/.config/sshfsm/NAME.toml).",
		"Options on the command line win over the file's. Settings of one host ([host.NAME]) win over global ones " +
			"from anywhere, so -F applies to every host that has no ssh_config of its own. " +
			"Unknown keys are errors; every error names the file, the line and the key.",
	}
}

// fileKeyDoc is the key's name and type as docs show them.
func fileKeyDoc(k FileKey) string {
	return fmt.Sprintf("%s (%s)", k.Name, k.Type)
}
