package config

import "strings"

// sshKeywords are the ssh_config(5) keywords of OpenSSH 9.2 that make sense
// on the command line (Host, Match and Include do not), plus the older
// spellings ssh still accepts.
var sshKeywords = strings.Fields(`
AddKeysToAgent AddressFamily BatchMode BindAddress BindInterface
CASignatureAlgorithms CanonicalDomains CanonicalizeFallbackLocal
CanonicalizeHostname CanonicalizeMaxDots CanonicalizePermittedCNAMEs
CertificateFile ChallengeResponseAuthentication CheckHostIP Ciphers
ClearAllForwardings Compression ConnectTimeout ConnectionAttempts
ControlMaster ControlPath ControlPersist DynamicForward
EnableEscapeCommandline EnableSSHKeysign EscapeChar ExitOnForwardFailure
FingerprintHash ForkAfterAuthentication ForwardAgent ForwardX11
ForwardX11Timeout ForwardX11Trusted GSSAPIAuthentication
GSSAPIClientIdentity GSSAPIDelegateCredentials GSSAPIKexAlgorithms
GSSAPIKeyExchange GSSAPIRenewalForcesRekey GSSAPIServerIdentity
GSSAPITrustDns GatewayPorts GlobalKnownHostsFile HashKnownHosts
HostKeyAlgorithms HostKeyAlias HostbasedAcceptedAlgorithms
HostbasedAuthentication HostbasedKeyTypes Hostname IPQoS IdentitiesOnly
IdentityAgent IdentityFile IgnoreUnknown KbdInteractiveAuthentication
KbdInteractiveDevices KexAlgorithms KnownHostsCommand LocalCommand
LocalForward LogLevel LogVerbose MACs NoHostAuthenticationForLocalhost
NumberOfPasswordPrompts PKCS11Provider PasswordAuthentication
PermitLocalCommand PermitRemoteOpen Port PreferredAuthentications
ProxyCommand ProxyJump ProxyUseFdpass PubkeyAcceptedAlgorithms
PubkeyAcceptedKeyTypes PubkeyAuthentication RekeyLimit RemoteCommand
RemoteForward RequestTTY RequiredRSASize RevokedHostKeys
SecurityKeyProvider SendEnv ServerAliveCountMax ServerAliveInterval
SessionType SetEnv StdinNull StreamLocalBindMask StreamLocalBindUnlink
StrictHostKeyChecking SyslogFacility TCPKeepAlive Tunnel TunnelDevice
UpdateHostKeys User UserKnownHostsFile VerifyHostKeyDNS VisualHostKey
XAuthLocation
`)

// sshKeyword returns the canonical spelling of an ssh_config keyword,
// matched case-insensitively.
func sshKeyword(name string) (string, bool) {
	for _, k := range sshKeywords {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}
