import Testing

/// The walks in headless Chromium, one at a time: each starts a browser, a chromedriver on a port
/// Selenium picks and servers of its own, and two starting together could take each other's port
/// (a chromedriver that cannot bind exits at start) besides sharing two cores.
@Suite("Browser walks", .serialized)
struct BrowserWalks {}
