package bridge

// Control is one editable element as a reader reports it (never its value): the input of
// CredentialField, for a guard that reads a page through another browser driver.
type Control = control

// CredentialField says why one editable element is a credential field (a password, a one-time
// or security code, a PIN, a card number), or "": the bridge's own detection, for other readers.
func CredentialField(c Control) string { return credentialField(c) }
