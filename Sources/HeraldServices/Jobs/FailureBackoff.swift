/// How long a background loop waits after its `failures`-th failure in a row before trying again:
/// 200 ms doubling, at most 30 s, so that a database that is down is not hammered and one that comes
/// back is used again soon.
public enum FailureBackoff {
    public static func delay(afterFailures failures: Int) -> Duration {
        .milliseconds(min(30_000, 100 << min(failures, 9)))
    }
}
