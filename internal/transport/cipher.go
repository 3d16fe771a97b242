package transport

func preferredCiphers() string { return "" }
