// `HeraldJSON` (a notification's data) is part of the library's interface; apps get it with
// `import HeraldClient`.
@_exported public import HeraldWire
