import Foundation

/// An erasure of a user (`DELETE /v1/users/{user_id}`) and how far it has come.
public struct UserErasure: Sendable, Equatable {
    public enum State: String, Sendable {
        /// Rows of the user's remain; the erasure worker is removing them.
        case running
        /// Nothing of the user's remains.
        case done
    }

    public var userID: String
    public var state: State
    public var requestedAt: Date
    public var finishedAt: Date?
    /// Rows removed so far, the first transaction's included.
    public var removedRows: Int64
}

/// What one batch of an erasure did.
public struct ErasureProgress: Sendable, Equatable {
    public var userID: String
    public var userKey: Int64
    public var removedRows: Int
    /// The erasure finished with this batch.
    public var finished: Bool
}
