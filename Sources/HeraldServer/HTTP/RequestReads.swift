import HTTPTypes
import HeraldServices
import Postgres
import Synchronization

/// Where one request's reads go on a route whose reads may go to the read standby (`RouteRegistry`):
/// there while it answers them, and to the primary from the first read it could not answer, for the
/// rest of the request.
///
/// Only reads move. Each is a function that `read(_:)` calls a second time, with `nil` (the primary),
/// when the standby could not answer it: a database error there (unreachable, a statement cancelled
/// by replay, a schema not replayed yet), a token beyond it and beyond what the primary had issued
/// (`ReadReplica.Behind`), or "not found" — a channel or device made on the primary that the standby
/// has not replayed yet. A handler's writes go to the primary, outside these functions, and run once.
final class RequestReads: Sendable {
    private let current: Mutex<ReadReplica?>

    /// Reads on `standby`; `nil` reads everything on the primary.
    init(_ standby: ReadReplica?) {
        current = Mutex(standby)
    }

    /// A request whose reads all go to the primary.
    static let primary = RequestReads(nil)

    /// The standby, while the request still reads there.
    var standby: ReadReplica? { current.withLock { $0 } }

    /// Runs `read` with the standby the request reads on, and again with `nil` — on the primary — when
    /// the standby could not answer it; from then on the request reads on the primary.
    func read<Result>(_ read: (ReadReplica?) async throws -> Result) async throws -> Result {
        guard let standby else { return try await read(nil) }
        do {
            return try await read(standby)
        } catch let error as PostgresError where error.code != .clientClosed {
            standby.failed(error)
        } catch is ReadReplica.Behind {
            // Counted where it was found.
        } catch let error as APIError where error.status == .notFound {
            standby.fellBack(.failed)
        }
        current.withLock { $0 = nil }
        return try await read(nil)
    }

    /// At the end of the request: counts its reads as the standby's when they all stayed there.
    func finish() {
        standby?.answered()
    }
}
