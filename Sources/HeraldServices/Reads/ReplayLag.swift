/// How far a standby's replay trails its primary, in time: as old as the oldest sample of the
/// primary's WAL end that the standby has not replayed yet.
///
/// A standby that has replayed a sample taken at `t` holds every commit the primary had made by `t`,
/// so the lag this reports is at most one sampling interval below the truth and never above it. An idle
/// primary whose WAL the standby has replayed is no lag at all, however old its last commit.
struct ReplayLag: Sendable {
    /// Samples the standby had not replayed at the last look, oldest first.
    private var samples: [(at: ContinuousClock.Instant, position: Int64)] = []
    /// A standby stuck for longer than this many samples reports the lag of the oldest one kept.
    static let maximumSamples = 3_600

    /// The primary's WAL ended at `position` (bytes since the start of WAL) at `instant`.
    mutating func primary(endedAt position: Int64, at instant: ContinuousClock.Instant) {
        if let last = samples.last, last.position >= position { return }
        samples.append((instant, position))
        if samples.count > Self.maximumSamples { samples.removeFirst(samples.count - Self.maximumSamples) }
    }

    /// The lag at `now` of a standby that has replayed through `position`.
    mutating func standby(replayed position: Int64, at now: ContinuousClock.Instant) -> Duration {
        let replayed = samples.prefix { $0.position <= position }.count
        samples.removeFirst(replayed)
        guard let oldest = samples.first else { return .zero }
        return now - oldest.at
    }
}
