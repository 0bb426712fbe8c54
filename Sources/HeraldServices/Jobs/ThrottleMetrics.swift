import Metrics

/// What throttles held back, beside `herald_alerts_throttled_total` (alerts silenced, counted where
/// alerts are decided).
public enum ThrottleMetrics {
    /// Users a throttle that drops left without a copy (`herald_copies_dropped_total`): counted by
    /// the send for its listed users and by each fan-out batch for everyone and topics.
    public static let droppedCopies = Counter(label: "herald_copies_dropped_total")
}
