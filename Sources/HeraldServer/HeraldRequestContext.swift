import Hummingbird

/// The per-request context of Herald's router. Later capabilities (authentication, the calling user)
/// add their fields here.
public struct HeraldRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
    }
}
