package config

// SSHArgs returns the extra ssh arguments for reaching e: -F (e's own
// ssh_config, else the global -F), -C, e's own -o options, then the global
// ones. ssh keeps the first value it is given for most keywords, so the
// host's own options come first to win. The port travels separately
// (PortOf).
func (c *Config) SSHArgs(e Endpoint) []string {
	var args []string
	if f := e.SSHConfig; f != "" {
		args = append(args, "-F", f)
	} else if c.SSH.ConfigFile != "" {
		args = append(args, "-F", c.SSH.ConfigFile)
	}
	if c.SSH.Compression {
		args = append(args, "-C")
	}
	args = append(args, e.SSHOptions...)
	for _, o := range c.SSH.Options {
		args = append(args, "-o"+o.Key+"="+o.Value)
	}
	return args
}

// PortOf is the ssh port for e: its own, else the global -p; 0 lets ssh
// decide.
func (c *Config) PortOf(e Endpoint) int {
	if e.Port != 0 {
		return e.Port
	}
	return c.SSH.Port
}

// MaxConnsOf is the number of SFTP channels to open to e.
func (c *Config) MaxConnsOf(e Endpoint) int {
	if e.MaxConns != 0 {
		return e.MaxConns
	}
	return c.SSH.MaxConns
}
