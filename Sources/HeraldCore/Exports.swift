// JSON values and RFC 3339 times are HeraldWire's (shared with the client library); every user of
// HeraldCore uses them.
@_exported import HeraldWire
