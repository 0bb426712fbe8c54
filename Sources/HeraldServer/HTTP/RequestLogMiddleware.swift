import Hummingbird
import HummingbirdCore
import Logging

/// Logs each request (at debug) with its method and its path — query values redacted except those
/// known to carry no secret.
///
/// Why not Hummingbird's `LogRequestsMiddleware`: it logs the whole URI, and Herald's URIs carry
/// secrets — a browser's stream names its session (`?access_token=`), a sync its position
/// (`?token=`, which also proves what the user has seen). The metadata keys are Hummingbird's.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    /// Query parameters whose values are logged as sent: paging sizes and cursors, filters.
    static let plainParameters: Set<Substring> = ["limit", "before", "after", "category", "status", "members", "version"]

    let level: Logger.Level

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if context.logger.logLevel <= level {
            context.logger.log(
                level: level,
                "Request",
                metadata: ["hb.request.method": "\(request.method.rawValue)", "hb.request.path": "\(Self.redacted(request.uri))"]
            )
        }
        return try await next(request, context)
    }

    /// The URI's path with its query, each value outside `plainParameters` replaced by `<redacted>`.
    static func redacted(_ uri: URI) -> String {
        guard let query = uri.query, !query.isEmpty else { return uri.path }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> Substring in
            guard let equals = pair.firstIndex(of: "=") else { return pair }
            let name = pair[..<equals]
            return plainParameters.contains(name) ? pair : name + "=<redacted>"
        }
        return uri.path + "?" + pairs.joined(separator: "&")
    }
}
