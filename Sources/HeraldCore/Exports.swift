// Digests, MACs, sealing and keys are HeraldCrypto's; the domain's tokens and secrets use them.
@_exported import HeraldCrypto
// JSON values and RFC 3339 times are HeraldWire's (shared with the client library); every user of
// HeraldCore uses them.
@_exported import HeraldWire
