import Foundation
import HTTPTypes
import HeraldConsole
import HeraldStore
import NIOCore

extension NotificationsController {
    /// The console's send: the route's, from the JSON body the console shows as `curl`, answered as
    /// the route would answer it (without an `Idempotency-Key`, which the console does not send).
    func consoleSend(_ json: [UInt8]) async throws -> ConsoleActions.Answer {
        do {
            let body = try RequestBody.decode(SendNotificationRequest.self, from: Data(json))
            switch try await send(body, idempotency: nil) {
            case .created(_, let response), .replayed(let response):
                return ConsoleActions.Answer(status: response.status, body: response.body)
            case .keyReused:
                preconditionFailure("a send without an idempotency key cannot reuse one")
            }
        } catch let error as APIError {
            return ConsoleActions.Answer(status: Int(error.status.code), body: Array(error.body.readableBytesView))
        }
    }
}
