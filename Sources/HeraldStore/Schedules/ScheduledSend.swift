import Foundation
import HeraldCore

/// A send waiting for its time (`sql/0030_scheduled_sends.sql`).
public struct ScheduledSend: Sendable, Equatable {
    public enum State: String, Sendable {
        /// Waiting, or part-way through the zones of a local time.
        case scheduled
        /// Every part sent (and no repetition left).
        case sent
        case canceled
        /// A part was refused when it was made (its template or channel gone…): see `error`.
        case failed
    }

    /// When it sends: at an instant, or at a wall-clock time in each recipient's zone.
    public enum Timing: Sendable, Equatable {
        case at(Date)
        case local(LocalDateTime)
    }

    /// How it repeats after each send.
    public enum Repeat: String, Sendable {
        case daily, weekly

        public var days: Int { self == .daily ? 1 : 7 }
    }

    public var id: Int64
    /// The body of `POST /v1/notifications` it sends, as JSON.
    public var request: [UInt8]
    public var channelURL: String
    public var templateKey: String
    public var audience: String
    public var timing: Timing
    public var repeats: Repeat?
    public var state: State
    /// When it is next due (for a local time: the next of its recipients' zones to reach it).
    public var nextAt: Date
    /// Which repetition this is, from 0.
    public var occurrence: Int
    /// Parts of this occurrence sent (zone groups of a local time; 1 for an instant).
    public var parts: Int
    /// Time zones this occurrence of a local time has reached.
    public var zonesDone: [String]
    /// Claims so far: each attempt to send a due part.
    public var attempts: Int
    /// The notifications it made, oldest first.
    public var notificationIDs: [Int64]
    /// Why it failed.
    public var error: String?
    public var createdAt: Date
    public var updatedAt: Date
}
