import Hummingbird

/// The per-request context of Herald's router. Later capabilities (authentication, the calling user)
/// add their fields here.
public struct HeraldRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }

    /// The largest request body accepted (larger ones get a 413): 1 MiB.
    public var maxUploadSize: Int { 1 << 20 }
}
